// ForecastScheduler (daemon/forecast_scheduler.h) on its own: no thread, no gRPC, no store,
// no sleeps. A fake Clock and SimulateNext() drive it turn by turn; runs are views of the
// flagship plan folded from the simulator's events.
#include "daemon/forecast_scheduler.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tracker_parts.h"

namespace flightplan::daemon {
namespace {

TEST(ForecastScheduler, SimulatesADueRunAtMostOncePerInterval) {
  Harness h(/*events_clock=*/true);
  h.runs["a"] = View("a", 200);
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "");  // nothing due
  EXPECT_EQ(h.scheduler->Latest("a").sim, nullptr);
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  ASSERT_NE(h.scheduler->Latest("a").sim, nullptr);
  EXPECT_EQ(h.scheduler->Latest("a").sim->events, h.runs["a"]->state.events);
  EXPECT_EQ(h.simulated, std::vector<std::string>{"a"});
  EXPECT_EQ(h.points.size(), 1u);  // its history point, offered to the writer
  // Changed again at once: not before the interval has passed on the clock.
  h.runs["a"] = View("a", 300, 2);
  h.scheduler->MarkDue("a");
  const ForecastScheduler::Turn early = h.scheduler->SimulateNext();
  EXPECT_EQ(early.simulated, "");
  ASSERT_TRUE(early.next_ready.has_value());
  EXPECT_EQ(*early.next_ready, h.clock.Now() + absl::Seconds(1));
  h.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.scheduler->Latest("a").sim->events, h.runs["a"]->state.events);
  // Under the events clock a silent run is not simulated again.
  h.clock.Advance(absl::Hours(1));
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "");
}

TEST(ForecastScheduler, AnUrgentRunGoesFirstThenTheLongestUnsimulated) {
  Harness h(/*events_clock=*/true);
  for (const char* r : {"a", "b", "c"}) h.runs[r] = View(r, 100);
  h.scheduler->MarkDue("a");
  h.scheduler->MarkDue("b");
  h.scheduler->MarkDue("c", /*urgent=*/true);
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "c");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  h.clock.Advance(absl::Seconds(5));
  h.scheduler->MarkDue("a");
  // b has never been simulated: it goes before a, simulated 5 s ago.
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "b");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "");
}

TEST(ForecastScheduler, OnTheWallClockASilentRunIsRefreshed) {
  Harness h(/*events_clock=*/false);
  h.runs["a"] = View("a", 100);
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  const ForecastScheduler::Turn idle = h.scheduler->SimulateNext();
  EXPECT_EQ(idle.simulated, "");
  ASSERT_TRUE(idle.next_ready.has_value());
  EXPECT_EQ(*idle.next_ready, h.clock.Now() + absl::Seconds(30));
  h.clock.Advance(absl::Seconds(30));
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
}

TEST(ForecastScheduler, BackfillStatesBecomeHistoryOldestFirstAndYieldToTheWriter) {
  Harness h(/*events_clock=*/true);
  const std::shared_ptr<const RunView> now = View("a", 400);
  h.runs["a"] = now;
  std::vector<std::shared_ptr<const forecast::RunState>> states;
  for (size_t n : {100, 200, 300}) states.push_back(std::make_shared<forecast::RunState>(View("a", n)->state));
  h.scheduler->AddBackfill(*now, states);
  EXPECT_EQ(h.scheduler->BackfillWaiting("a"), 3u);
  // With requests waiting for the writer, one state per turn, and no point for the current
  // state while older ones wait (it would close the history to them).
  h.backlog = 1;
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.points.size(), 1u);
  EXPECT_EQ(h.scheduler->BackfillWaiting("a"), 2u);
  // Nor a simulation of it: a status would read fresh before the history has its point.
  EXPECT_EQ(h.scheduler->Latest("a").sim, nullptr);
  h.backlog = 0;
  h.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");  // still due: its states wait
  ASSERT_EQ(h.points.size(), 4u);                         // the two left, then the current state
  for (size_t i = 1; i < h.points.size(); ++i) EXPECT_LT(h.points[i - 1].second, h.points[i].second) << i;
  EXPECT_EQ(h.points.back().second, now->state.last_time);
  EXPECT_EQ(h.scheduler->BackfillWaiting("a"), 0u);
  // The writer need not keep states before what was simulated.
  EXPECT_EQ(h.scheduler->BackfillFor("a").simulated_to, now->state.last_time);
}

// The writer publishes a group's view just after handing over its states: a turn that
// finds the new view finds its states too, and gives them to the history before the view's
// own point (else that point would close the history to them).
TEST(ForecastScheduler, AViewPublishedDuringATurnWaitsForItsStates) {
  Harness h(/*events_clock=*/true);
  const std::shared_ptr<const RunView> later = View("a", 400);
  h.runs["a"] = View("a", 100);
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  ASSERT_EQ(h.points.size(), 1u);
  // Mid-turn, as the writer does: the states first, then the view.
  ForecastScheduler* scheduler = h.scheduler.get();
  std::vector<std::shared_ptr<const forecast::RunState>> states = {
      std::make_shared<forecast::RunState>(View("a", 200)->state),
      std::make_shared<forecast::RunState>(View("a", 300)->state)};
  bool published = false;
  auto find = [&](const std::string&) {
    if (!published) {
      scheduler->AddBackfill(*later, states);
      published = true;
    }
    return later;
  };
  h.find_override = find;
  h.clock.Advance(absl::Seconds(1));
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.points.size(), 1u);  // no point for the new view yet, and no simulation of it
  EXPECT_NE(h.scheduler->Latest("a").sim->events, later->state.events);
  h.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");  // still due
  ASSERT_EQ(h.points.size(), 4u);
  for (size_t i = 1; i < h.points.size(); ++i) EXPECT_LT(h.points[i - 1].second, h.points[i].second) << i;
  EXPECT_EQ(h.points.back().second, later->state.last_time);
  EXPECT_EQ(h.scheduler->Latest("a").sim->events, later->state.events);
}

TEST(ForecastScheduler, ARunSimulatedBeforeItsFirstEventHasNoBackfillMark) {
  // A plan just created is simulated (urgently) before any event: no state has been
  // simulated, so the writer's backfill keeps its first state an hour after the first event,
  // not the job start alone (a mark of 1970 did: a point of 0 tokens at the first event).
  Harness h(/*events_clock=*/false);
  h.runs["a"] = View("a", 0);
  h.scheduler->MarkDue("a", /*urgent=*/true);
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.scheduler->BackfillFor("a").simulated_to, absl::InfinitePast());
  // Once it has events, the mark is the latest one simulated.
  h.runs["a"] = View("a", 50, 2);
  h.clock.Advance(absl::Seconds(1));
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  EXPECT_EQ(h.scheduler->BackfillFor("a").simulated_to, h.runs["a"]->state.last_time);
}

TEST(ForecastScheduler, PastItsBoundABackfillIsThinnedAndItsSpacingDoubles) {
  Harness h(/*events_clock=*/true);
  h.options.max_backfill_states = 4;
  const std::shared_ptr<const RunView> now = View("a", 400);
  std::vector<std::shared_ptr<const forecast::RunState>> states;
  for (size_t n = 40; n <= 360; n += 40) states.push_back(std::make_shared<forecast::RunState>(View("a", n)->state));
  ASSERT_EQ(states.size(), 9u);
  EXPECT_EQ(h.scheduler->BackfillFor("a").spacing, h.options.backfill_spacing);
  h.scheduler->AddBackfill(*now, states);
  EXPECT_LE(h.scheduler->BackfillWaiting("a"), 4u);
  EXPECT_GE(h.scheduler->BackfillWaiting("a"), 2u);
  EXPECT_EQ(h.scheduler->BackfillFor("a").spacing, 4 * h.options.backfill_spacing);  // thinned twice
}

TEST(ForecastScheduler, AcrossRunsTheBackfillKeepsToItsBudgetThinningTheLargestQueueFirst) {
  Harness h(/*events_clock=*/true);
  std::vector<std::shared_ptr<const forecast::RunState>> states;
  for (size_t n = 40; n <= 400; n += 40) states.push_back(std::make_shared<forecast::RunState>(View("a", n)->state));
  std::vector<std::shared_ptr<const forecast::RunState>> more;
  for (size_t n = 40; n <= 200; n += 40) more.push_back(std::make_shared<forecast::RunState>(View("b", n)->state));
  size_t one_run = 0, other_run = 0;
  for (const auto& s : states) one_run += forecast::StateBytes(*s, false);
  for (const auto& s : more) other_run += forecast::StateBytes(*s, false);
  // A byte short of both runs' states: the second run's push the total over it.
  h.options.max_backfill_bytes = one_run + other_run - 1;
  h.scheduler->AddBackfill(*View("a", 440), states);
  ForecastScheduler::Stats stats = h.scheduler->GetStats();
  EXPECT_EQ(stats.backfill_states, 10u);
  EXPECT_EQ(stats.backfill_bytes, one_run);
  h.scheduler->AddBackfill(*View("b", 240), more);
  stats = h.scheduler->GetStats();
  EXPECT_LE(stats.backfill_bytes, h.options.max_backfill_bytes);
  // "a", with the most waiting, gave up every other state and its spacing doubled; "b" kept its five.
  EXPECT_EQ(h.scheduler->BackfillWaiting("a"), 5u);
  EXPECT_EQ(h.scheduler->BackfillWaiting("b"), 5u);
  EXPECT_EQ(h.scheduler->BackfillFor("a").spacing, 2 * h.options.backfill_spacing);
  EXPECT_EQ(h.scheduler->BackfillFor("b").spacing, h.options.backfill_spacing);
  // Simulated into history: nothing waits, nothing is held.
  h.runs["a"] = View("a", 440);
  h.runs["b"] = View("b", 240);
  h.scheduler->MarkDue("a");
  h.scheduler->MarkDue("b");
  while (!h.scheduler->SimulateNext().simulated.empty()) {
  }
  stats = h.scheduler->GetStats();
  EXPECT_EQ(stats.backfill_states, 0u);
  EXPECT_EQ(stats.backfill_bytes, 0u);
  EXPECT_EQ(stats.backfill_simulations, 10u);
  EXPECT_EQ(stats.simulations, 2u);
  EXPECT_GT(stats.backfill_cpu_seconds, 0);
  // With a budget below one state each, each run keeps its newest state and no more.
  Harness g(/*events_clock=*/true);
  g.options.max_backfill_bytes = 1;
  g.scheduler->AddBackfill(*View("a", 440), states);
  EXPECT_EQ(g.scheduler->BackfillWaiting("a"), 1u);
}

TEST(ForecastScheduler, AStatesBytesGrowWithItsHistory) {
  const size_t young = forecast::StateBytes(View("a", 40)->state);
  const size_t old = forecast::StateBytes(View("a", 4000)->state);
  EXPECT_GE(young, sizeof(forecast::RunState));
  // Its evidence, budget samples and pace bins: several kilobytes more after 4,000 events.
  EXPECT_GT(old, young + 4096);
  // A state's own containers, a few hundred KB at most (docs/tracker.md's "about 100 KB").
  EXPECT_LT(old, size_t{400} << 10);
}

TEST(ForecastScheduler, AForgottenRunHasNoSimulationAndAStoppedOneTakesNoWork) {
  Harness h(/*events_clock=*/true);
  h.runs["a"] = View("a", 100);
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  h.scheduler->Forget("a");
  EXPECT_EQ(h.scheduler->Latest("a").sim, nullptr);
  h.scheduler->Stop();
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "");
  // A run gone from the board is not simulated, and nothing is cached for it.
  Harness g(/*events_clock=*/true);
  g.scheduler->MarkDue("gone");
  EXPECT_EQ(g.scheduler->SimulateNext().simulated, "gone");
  EXPECT_EQ(g.scheduler->Latest("gone").sim, nullptr);
  EXPECT_TRUE(g.simulated.empty());
}

}  // namespace
}  // namespace flightplan::daemon
