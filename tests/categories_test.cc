// The categories that Google's goodput library counts beside ours (docs/contract.md §5):
// deliberate work in spans (`custom`), launches on fewer GPUs (`capacity`), windows an operator
// excluded (`excluded`), and live MFU. Then Google's own scenarios for them, translated into
// events from ml_goodput_measurement/tests/goodput_test.py and goodput_elastic_test.py
// (AI-Hypercomputer/ml-goodput-measurement, v0.2.3, 57092cf), with their expected figures.
#include <string>
#include <vector>

#include "convert/event_convert.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "gtest/gtest.h"

namespace flightplan::forecast {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1799020800);  // 2027-01-04T00:00:00Z
absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

Event Started(double t, uint32_t attempt, int64_t restored = 0, uint32_t gpus = 0) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kJobStarted;
  e.attempt = attempt;
  e.restored_step = restored;
  e.gpus = gpus;
  return e;
}
Event Steps(double t, int64_t step, int64_t tokens, uint32_t attempt = 0) {
  Event e;
  e.time = At(t);
  e.attempt = attempt;  // 0: the latest launched strictly before t
  e.kind = EventKind::kSteps;
  e.step = step;
  e.tokens = tokens;
  return e;
}
Event Stopped(double t, const std::string& cause, bool planned = false) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kInterruption;
  e.cause = cause;
  e.planned = planned;
  return e;
}
Event Finished(double t) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kRunFinished;
  return e;
}
Event SpanStart(double t, const std::string& kind, double expected = 0) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kSpanStarted;
  e.span = kind;
  e.expected_seconds = expected;
  return e;
}
Event SpanEnd(double t, const std::string& kind) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kSpanEnded;
  e.span = kind;
  return e;
}
Event Exclude(double from, double until, const std::string& reason = "") {
  Event e;
  e.time = At(from);
  e.kind = EventKind::kExcluded;
  e.until = At(until);
  e.detail = reason;
  return e;
}

// Folds the events in fold order (an exclusion filed later belongs at its window's start).
RunState Fold(std::vector<Event> events, uint32_t plan_gpus = 0) {
  std::vector<LoggedEvent> logged;
  for (size_t i = 0; i < events.size(); ++i) logged.push_back({static_cast<int64_t>(i + 1), events[i]});
  FoldSettings settings;
  settings.plan_gpus = plan_gpus;
  int64_t failed = 0;
  absl::StatusOr<RunState> s = Refold(std::move(logged), settings, failed);
  EXPECT_TRUE(s.ok()) << s.status() << " at event " << failed;
  return s.ok() ? *s : RunState{};
}

double CustomOf(const RunSnapshot& snap, const std::string& kind) {
  for (const SpanSeconds& k : snap.custom_by_kind) {
    if (k.kind == kind) return k.seconds;
  }
  return 0;
}

// Steps every `every` seconds from `from` to `to` (exclusive of `from`), one step each.
void AddSteps(std::vector<Event>& events, double from, double to, double every, int64_t& step,
              int64_t tokens_per_step) {
  for (double t = from + every; t <= to + 1e-9; t += every) {
    ++step;
    events.push_back(Steps(t, step, step * tokens_per_step));
  }
}

TEST(Categories, APromisedTenMinuteEvaluationIsCustomTimeAndNoStall) {
  // Steps every 60 s; an evaluation of 600 s, silent throughout, then training again.
  std::vector<Event> events = {Started(0, 1), Steps(60, 0, 0)};
  int64_t step = 0;
  AddSteps(events, 60, 1200, 60, step, 1000);
  events.push_back(SpanStart(1200, "eval", 600));
  events.push_back(SpanEnd(1800, "eval"));
  AddSteps(events, 1800, 3000, 60, step, 1000);
  const RunState s = Fold(events);
  const RunSnapshot snap = Snapshot(s, At(3000));
  EXPECT_DOUBLE_EQ(snap.seconds.custom, 600);
  EXPECT_DOUBLE_EQ(CustomOf(snap, "eval"), 600);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, 0);
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 0);
  EXPECT_DOUBLE_EQ(snap.seconds.productive, 3000 - 60 - 600);
  EXPECT_DOUBLE_EQ(snap.seconds.Sum(), snap.elapsed_seconds);
  // The usual figures are the training's: the evaluation neither widens nor narrows them.
  EXPECT_NEAR(s.typical_seconds_per_step, 60, 1e-9);
  EXPECT_NEAR(s.typical_step_gap, 60, 1e-9);

  // While the span is open and within its promise, the silence is custom, not a stall.
  std::vector<Event> open(events.begin(), events.begin() + 2 + 19);
  open.push_back(SpanStart(1200, "eval", 600));
  const RunState o = Fold(open);
  RunSnapshot during = Snapshot(o, At(1700));
  EXPECT_DOUBLE_EQ(during.seconds.custom, 500);
  EXPECT_DOUBLE_EQ(during.seconds.stalled, 0);
  EXPECT_EQ(during.span_kind, "eval");
  EXPECT_EQ(during.span_promised_until, At(1800));
}

// The stall alert reads the step report's age (flightplan_step_report_age_seconds): inside a
// span it counts from when the promise runs out.
TEST(Categories, TheStepReportsAgeWaitsForTheSpansPromise) {
  const RunState s = Fold({Started(0, 1), Steps(60, 0, 0), Steps(120, 1, 10), SpanStart(180, "eval", 600)});
  EXPECT_EQ(convert::StatusToProto("r", Snapshot(s, At(700)), 100, 1).progress().seconds_since_step(), 0);
  EXPECT_EQ(convert::StatusToProto("r", Snapshot(s, At(1000)), 100, 1).progress().seconds_since_step(), 220);
  const RunState plain = Fold({Started(0, 1), Steps(60, 0, 0), Steps(120, 1, 10)});
  EXPECT_EQ(convert::StatusToProto("r", Snapshot(plain, At(700)), 100, 1).progress().seconds_since_step(), 580);
}

TEST(Categories, ASpanThatOverrunsItsPromiseIsAStallFromThenOn) {
  std::vector<Event> events = {Started(0, 1), Steps(60, 0, 0)};
  int64_t step = 0;
  AddSteps(events, 60, 600, 60, step, 1000);
  events.push_back(SpanStart(600, "sdc_check", 300));
  RunSnapshot snap = Snapshot(Fold(events), At(600 + 1000));
  EXPECT_DOUBLE_EQ(snap.seconds.custom, 300);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, 700);
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 700);
  // It ends late: the same split, folded.
  events.push_back(SpanEnd(1600, "sdc_check"));
  snap = Snapshot(Fold(events), At(1600));
  EXPECT_DOUBLE_EQ(snap.seconds.custom, 300);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, 700);
  // A span without a promise promises kSpanDefaultPromiseSeconds.
  std::vector<Event> unsaid = {Started(0, 1), Steps(60, 0, 0), SpanStart(60, "profiling")};
  snap = Snapshot(Fold(unsaid), At(60 + kSpanDefaultPromiseSeconds + 100));
  EXPECT_DOUBLE_EQ(snap.seconds.custom, kSpanDefaultPromiseSeconds);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, 100);
}

TEST(Categories, AnInterruptionEndsAnOpenSpan) {
  const RunState s = Fold({Started(0, 1), Steps(60, 0, 0), Steps(120, 1, 10), SpanStart(180, "eval", 600),
                           Stopped(300, "gpu"), Started(400, 2, 1), Steps(460, 2, 20)});
  const RunSnapshot snap = Snapshot(s, At(460));
  EXPECT_TRUE(snap.span_kind.empty());
  EXPECT_DOUBLE_EQ(snap.seconds.custom, 120);
  EXPECT_DOUBLE_EQ(snap.seconds.down_unplanned, 100);
  EXPECT_DOUBLE_EQ(snap.seconds.Sum(), snap.elapsed_seconds);
}

TEST(Categories, ARunBackOnSevenEighthsOfItsGpusAtSevenEighthsOfThePaceIsCapacityNotASlowdown) {
  // 128 GPUs planned; 1,000 tokens per step, a step every 10 s on all of them for 3 days; a
  // node fails and the job goes on without it: 112 GPUs, a step every 80/7 s, for 3 more days.
  constexpr uint32_t kPlan = 128;
  std::vector<Event> events = {Started(0, 1, 0, kPlan), Steps(10, 0, 0)};
  int64_t step = 0;
  const double first = 3 * 86400;
  AddSteps(events, 10, first, 10, step, 1000);
  events.push_back(Stopped(first + 1, "node"));
  events.push_back(Started(first + 601, 2, step, 112));
  const double slow = 10.0 * 8 / 7;
  double t = first + 601;
  for (int i = 0; i < 3 * 86400 / slow; ++i) {
    ++step;
    events.push_back(Steps(t += slow, step, step * 1000));
  }
  const RunState s = Fold(events, kPlan);
  const RunSnapshot snap = Snapshot(s, At(t));
  const double second_launch = t - (first + 601);
  const double work = second_launch - slow;  // its first report's interval is startup
  EXPECT_NEAR(snap.seconds.capacity, work / 8, 1e-3 * work);
  EXPECT_FALSE(snap.slowdown.active) << snap.slowdown.factor;
  EXPECT_EQ(snap.slowdown.count, 0u);
  // Tokens per productive second read the plan's fleet's rate: unchanged.
  EXPECT_NEAR(snap.recent_tokens_per_second, 100, 0.5);
  EXPECT_NEAR(snap.tokens_per_second, 100, 0.5);
  EXPECT_NEAR(snap.seconds.Sum(), snap.elapsed_seconds, 1e-6);
}

TEST(Categories, AnExcludedOutageLeavesDownAndTheBudget) {
  // Down 6 hours after a crash; the site's power outage was 4 of them.
  std::vector<Event> events = {Started(0, 1),
                               Steps(60, 0, 0),
                               Steps(3600, 10, 100),
                               Stopped(3600, "node"),
                               Started(3600 + 6 * 3600, 2, 10),
                               Steps(3600 + 6 * 3600 + 60, 11, 110)};
  const RunSnapshot before = Snapshot(Fold(events), At(8 * 3600));
  events.push_back(Exclude(3600 + 3600, 3600 + 5 * 3600, "site power outage"));
  const RunState s = Fold(events);
  const RunSnapshot after = Snapshot(s, At(8 * 3600));
  EXPECT_DOUBLE_EQ(after.seconds.excluded, 4 * 3600);
  EXPECT_DOUBLE_EQ(after.seconds.down_unplanned, before.seconds.down_unplanned - 4 * 3600);
  EXPECT_DOUBLE_EQ(after.failure_budget_consumed_seconds, before.failure_budget_consumed_seconds - 4 * 3600);
  EXPECT_DOUBLE_EQ(after.seconds.productive, before.seconds.productive);
  EXPECT_DOUBLE_EQ(after.seconds.Sum(), after.elapsed_seconds);
  ASSERT_EQ(s.exclusions.size(), 1u);
  EXPECT_EQ(s.exclusions[0].reason, "site power outage");
  // Goodput leaves it out of its denominator; the figure counting it is beside it.
  ForecastPrior prior;
  const Forecast f = ForecastNow(s, prior, At(8 * 3600));
  EXPECT_DOUBLE_EQ(f.goodput, after.seconds.productive / (8 * 3600 - 4 * 3600));
  EXPECT_DOUBLE_EQ(f.goodput_counting_excluded, after.seconds.productive / (8 * 3600));
  // A window that reaches into the open interval excludes it as it goes.
  const RunState open = Fold({Started(0, 1), Steps(60, 0, 0), Stopped(120, "node"), Exclude(600, 1800)});
  const RunSnapshot now = Snapshot(open, At(1200));
  EXPECT_DOUBLE_EQ(now.seconds.excluded, 600);
  EXPECT_DOUBLE_EQ(now.seconds.down_unplanned, 480);
}

TEST(Categories, MfuAtThePlansPaceIsThePlansMfu) {
  // 70e9 parameters (6N = 4.2e11 FLOPs per token), 1,024 GPUs at 989 TFLOP/s, 40% MFU.
  ForecastPrior prior;
  prior.plan_gpus = 1024;
  prior.peak_flops_per_gpu = 989e12;
  prior.flops_per_token = 4.2e11;
  prior.plan_tokens_per_second = 0.40 * 1024 * 989e12 / 4.2e11;
  const double per_step = 4.0e6;  // tokens
  const double step_seconds = per_step / prior.plan_tokens_per_second;
  std::vector<Event> events = {Started(0, 1), Steps(30, 0, 0)};
  int64_t step = 0;
  AddSteps(events, 30, 30 + 2000 * step_seconds, step_seconds, step, static_cast<int64_t>(per_step));
  const RunState s = Fold(events);
  const Forecast f = ForecastNow(s, prior, s.last_time);
  EXPECT_NEAR(f.mfu_plan, 0.40, 1e-12);
  EXPECT_NEAR(f.mfu_lifetime / f.mfu_plan, 1, 0.02);
  EXPECT_NEAR(f.mfu_last_hour / f.mfu_plan, 1, 0.02);
  // Nothing known, nothing said.
  EXPECT_EQ(ForecastNow(s, ForecastPrior{}, s.last_time).mfu_lifetime, 0);
}

TEST(Categories, BadInputNamesItsFieldAndChangesNothing) {
  const std::vector<Event> base = {Started(0, 1), Steps(60, 0, 0), Steps(120, 1, 10)};
  RunState s = Fold(base, 128);
  RunState copy = s;
  auto refused = [&](const Event& e, absl::StatusCode code, const std::string& words) {
    const absl::Status st = ApplyEvent(s, e);
    EXPECT_EQ(st.code(), code) << st;
    EXPECT_NE(st.message().find(words), std::string::npos) << st;
    EXPECT_EQ(s.events, copy.events);
    EXPECT_EQ(s.seconds.Sum(), copy.seconds.Sum());
  };
  refused(SpanEnd(130, "eval"), absl::StatusCode::kFailedPrecondition, "span_ended.kind 'eval' ends no open span");
  refused(SpanStart(130, "Eval!"), absl::StatusCode::kInvalidArgument, "span_started.kind");
  refused(SpanStart(130, "eval", -5), absl::StatusCode::kInvalidArgument, "span_started.expected_seconds");
  refused(Exclude(100, 50), absl::StatusCode::kInvalidArgument, "excluded.until");
  refused(Started(130, 2, 1, 129), absl::StatusCode::kInvalidArgument, "job_started.gpus 129");
  ASSERT_TRUE(ApplyEvent(s, SpanStart(130, "eval", 60)).ok());
  copy = s;
  refused(SpanEnd(150, "profiling"), absl::StatusCode::kFailedPrecondition, "the open span is 'eval'");
  // Overlapping windows: the second is refused, naming the first.
  std::vector<Event> two = base;
  two.push_back(Exclude(10, 50, "maintenance"));
  two.push_back(Exclude(40, 70));
  std::vector<LoggedEvent> logged;
  for (size_t i = 0; i < two.size(); ++i) logged.push_back({static_cast<int64_t>(i + 1), two[i]});
  int64_t failed = 0;
  const absl::StatusOr<RunState> r = Refold(logged, FoldSettings{}, failed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("overlaps the excluded window"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("(maintenance)"), std::string::npos) << r.status();
  EXPECT_EQ(failed, 5);
  // A window before the run began.
  RunState fresh;
  const absl::Status st = ApplyEvent(fresh, Exclude(0, 10));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_EQ(fresh.events, 0u);
}

// --- Google's scenarios (goodput_test.py, goodput_elastic_test.py). Their step_start_time(k, t)
// is our steps{step: k} at t: k steps done. Their job end is run_finished.

// test_badput_calculator_custom_sync_badput: TPU init 1 s and program startup 5 s, 5 steps of
// 3 s, an eval of 5 s ('eval_step'), 5 more steps, then the end. Expected: custom 5 / 41 of the
// time (12.2%), goodput 30 / 41 (73.2%).
TEST(GooglesScenarios, CustomSyncBadput) {
  std::vector<Event> events = {Started(0, 1)};
  double t = 6;
  for (int k = 0; k < 5; ++k, t += 3) events.push_back(Steps(t, k, k * 100));
  events.push_back(SpanStart(t, "eval_step"));
  events.push_back(SpanEnd(t + 5, "eval_step"));
  t += 5;
  for (int k = 5; k < 10; ++k, t += 3) events.push_back(Steps(t, k, k * 100));
  events.push_back(Finished(t));
  const RunSnapshot snap = Snapshot(Fold(events), At(t));
  EXPECT_DOUBLE_EQ(snap.elapsed_seconds, 41);
  EXPECT_NEAR(100 * CustomOf(snap, "eval_step") / snap.elapsed_seconds, 100.0 * 5 / 41, 0.1);
  EXPECT_NEAR(100 * snap.seconds.productive / snap.elapsed_seconds, 100.0 * 30 / 41, 0.1);
}

// test_basic_exclusion_reduces_productive_time: job start 0, step 0 at 10, step 1 at 20, end at
// 30; excluded 10..15. Expected: 5 s excluded, goodput 60%, the rest ("other") 40%.
TEST(GooglesScenarios, BasicExclusionReducesProductiveTime) {
  const RunState s = Fold({Started(0, 1), Steps(10, 0, 0), Exclude(10, 15), Steps(20, 1, 100), Finished(30)});
  const RunSnapshot snap = Snapshot(s, At(30));
  EXPECT_DOUBLE_EQ(snap.seconds.excluded, 5);
  const Forecast f = ForecastNow(s, ForecastPrior{}, At(30));
  EXPECT_NEAR(100 * f.goodput, 60, 1e-9);
  EXPECT_NEAR(100 * snap.seconds.startup / (30 - 5), 40, 1e-9);
}

// test_exclusion_masking_badput_event: TPU init 0..10, step 0 at 20, end at 25; excluded 0..10.
// Expected: 10 s excluded, TPU init 0, "other" 10 / 15 = 66.7%.
TEST(GooglesScenarios, ExclusionMaskingABadputEvent) {
  const RunState s = Fold({Started(0, 1), Exclude(0, 10), Steps(20, 0, 0), Finished(25)});
  const RunSnapshot snap = Snapshot(s, At(25));
  EXPECT_DOUBLE_EQ(snap.seconds.excluded, 10);
  EXPECT_NEAR(100 * snap.seconds.startup / (25 - 10), 66.66, 0.1);
  EXPECT_NEAR(100 * ForecastNow(s, ForecastPrior{}, At(25)).goodput, 100.0 * 5 / 15, 1e-9);
}

// test_exclusion_during_disruption_recovery: step 0 at 0, a restart at 20 (step 0 again), end at
// 30. Without exclusions the recovery is badput; excluded 0..20, it is 0 and 20 s are excluded.
TEST(GooglesScenarios, ExclusionDuringDisruptionRecovery) {
  // (Steps at a launch's instant name their attempt: without one, an event belongs to the
  // latest launch strictly before it.)
  const std::vector<Event> events = {Started(0, 1), Steps(0, 0, 0, 1), Started(20, 2, 0), Steps(20, 0, 0, 2),
                                     Finished(30)};
  const RunSnapshot plain = Snapshot(Fold(events), At(30));
  EXPECT_GT(plain.seconds.down_unplanned, 0);
  std::vector<Event> excluded = events;
  excluded.push_back(Exclude(0, 20));
  const RunSnapshot snap = Snapshot(Fold(excluded), At(30));
  EXPECT_DOUBLE_EQ(snap.seconds.excluded, 20);
  EXPECT_DOUBLE_EQ(snap.seconds.down_unplanned, 0);
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 0);
}

// test_exclusion_masking_training_prep: prep 0..10, step 0 at 20, end at 25; excluded 5..15.
// Google excludes only the 5 s the window shares with the prep it recorded (its 10..15 held no
// recorded activity), for prep badput 5 / 20 = 25%. We depart: a window excludes all of its
// time, whatever the run was doing, so 10 s are excluded and the startup left is 10 of 15.
TEST(GooglesScenarios, ExclusionMaskingTrainingPrepDeparts) {
  const RunState s = Fold({Started(0, 1), Exclude(5, 15), Steps(20, 0, 0), Finished(25)});
  const RunSnapshot snap = Snapshot(s, At(25));
  EXPECT_DOUBLE_EQ(snap.seconds.excluded, 10);
  EXPECT_DOUBLE_EQ(snap.seconds.startup, 10);
  EXPECT_DOUBLE_EQ(snap.seconds.productive, 5);
}

// test_get_job_goodput_details_elastic (and test_compute_time_weighted_efficiency): 2 of 4
// slices for 8 h, 4 of 4 after. Google's available-slice efficiency is the time-weighted share
// of slices up: (8 h x 0.5 + 1 h x 1) / 9 h = 5/9. Ours: the launch on half the plan's GPUs
// charges half of its productive time to capacity; productive / (productive + capacity) is
// the same share.
TEST(GooglesScenarios, ElasticSliceEfficiency) {
  constexpr uint32_t kPlan = 512;
  std::vector<Event> events = {Started(0, 1, 0, kPlan / 2), Steps(0, 0, 0)};
  int64_t step = 0;
  AddSteps(events, 0, 8 * 3600, 20, step, 1000);  // half the fleet, half the pace
  events.push_back(Stopped(8 * 3600, "reconfigure", true));
  events.push_back(Started(8 * 3600, 2, step, kPlan));
  AddSteps(events, 8 * 3600, 9 * 3600, 10, step, 1000);
  events.push_back(Finished(9 * 3600));
  const RunSnapshot snap = Snapshot(Fold(events, kPlan), At(9 * 3600));
  EXPECT_NEAR(snap.seconds.productive / (snap.seconds.productive + snap.seconds.capacity), 5.0 / 9.0, 1e-3);
  EXPECT_NEAR(snap.seconds.capacity, 4 * 3600, 1);
  EXPECT_FALSE(snap.slowdown.active);
}

}  // namespace
}  // namespace flightplan::forecast
