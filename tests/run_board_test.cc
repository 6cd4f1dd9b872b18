// RunBoard (daemon/run_board.h) on its own: published views, watchers and the readers'
// status, with a fake Clock and a scheduler that is never started (no thread, no sleeps).
#include "daemon/run_board.h"

#include <set>
#include <string>
#include <vector>

#include "daemon/wire.h"
#include "gtest/gtest.h"
#include "tests/tracker_parts.h"

namespace flightplan::daemon {
namespace {

TEST(RunBoard, PublishSaysWhichRunsChangedAndWatchersHearOfTheirs) {
  Harness h(/*events_clock=*/true);
  RunBoard board(h.options, &h.clock, h.scheduler.get());
  int a_heard = 0, b_heard = 0;
  const uint64_t a = board.Subscribe("a", [&] { ++a_heard; });
  board.Subscribe("b", [&] { ++b_heard; });
  EXPECT_EQ(board.Publish({View("a", 10, 1), View("b", 10, 1)}), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(board.Count(), 2u);
  // The same version again is no change; a new one is.
  EXPECT_EQ(board.Publish({View("a", 10, 1), View("b", 20, 2)}), (std::set<std::string>{"b"}));
  EXPECT_EQ(board.Find("b")->version, 2u);
  EXPECT_EQ(board.Find("c"), nullptr);
  board.Notify({"b"});
  EXPECT_EQ(a_heard, 0);
  EXPECT_EQ(b_heard, 1);
  board.Notify({"a"});
  board.Unsubscribe(a);
  board.Notify({"a"});
  EXPECT_EQ(a_heard, 1);
}

TEST(RunBoard, AStatusSaysHowFreshItsForecastIs) {
  Harness h(/*events_clock=*/true);
  RunBoard board(h.options, &h.clock, h.scheduler.get());
  h.runs["a"] = View("a", 200);
  board.Publish({h.runs["a"]});
  // No simulation yet: stale. Reading does not ask the forecaster for the run (reads do
  // not write: a scrape must not reorder its queue); the writer does.
  v1::RunStatus status = RunStatusToProto(board.StatusOf(*board.Find("a")));
  EXPECT_TRUE(status.forecast().forecast_stale());
  EXPECT_EQ(status.events(), h.runs["a"]->state.events);
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "");
  h.scheduler->MarkDue("a");
  EXPECT_EQ(h.scheduler->SimulateNext().simulated, "a");
  status = RunStatusToProto(board.StatusOf(*board.Find("a")));
  EXPECT_FALSE(status.forecast().forecast_stale());
  EXPECT_EQ(status.forecast().forecast_events(), h.runs["a"]->state.events);
  // Under the events clock "now" is the run's latest event, whatever the clock says.
  h.clock.Advance(absl::Hours(5));
  EXPECT_EQ(RunStatusToProto(board.StatusOf(*board.Find("a"))).forecast().forecast_age_seconds(), 0);
  // A newer view than the simulation: stale again.
  board.Publish({View("a", 300, 2)});
  EXPECT_TRUE(RunStatusToProto(board.StatusOf(*board.Find("a"))).forecast().forecast_stale());
}

}  // namespace
}  // namespace flightplan::daemon
