// Calibration: many simulated runs of the flagship plan where reality differs from the
// plan, each backtested at every tenth of progress. The actual finish must fall inside
// P10..P90 in 70-90% of the points, and the P50 must beat the naive estimates.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "forecast/backtest.h"
#include "forecast/plan_engine.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "proto/plan_convert.h"

namespace flightplan::forecast {
namespace {

struct Scenario {
  const char* name;
  SimulationOptions options;
};

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> s;
  auto add = [&](const char* name, auto change) {
    SimulationOptions o;
    o.duplicate_fraction = 0.01;
    change(o);
    s.push_back({name, o});
  };
  add("as planned", [](SimulationOptions&) {});
  add("failures x2", [](SimulationOptions& o) { o.failure_rate_factor = 2; });
  add("failures x0.5", [](SimulationOptions& o) { o.failure_rate_factor = 0.5; });
  add("throughput 85%", [](SimulationOptions& o) { o.throughput_factor = 0.85; });
  add("bad rack at 40%", [](SimulationOptions& o) {
    o.regime_at = 0.4;
    o.regime_failure_factor = 3;
    o.regime_throughput_factor = 0.9;
  });
  add("degrading 2%/tenth", [](SimulationOptions& o) { o.degrade_per_tenth = 0.02; });
  add("heavy-tailed restarts", [](SimulationOptions& o) { o.restart_tail_alpha = 1.5; });
  add("hangs and silent crashes", [](SimulationOptions& o) {
    o.hang_fraction = 0.3;
    o.unreported_fraction = 0.3;
  });
  return s;
}

TEST(Calibration, SimulatedRunsThatDifferFromThePlan) {
  absl::StatusOr<v1::Plan> proto = LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(proto.ok());
  const PlanSpec plan = PlanFromProto(*proto);
  const PlanReport report = ComputePlan(plan);
  const ForecastPrior prior = PriorFromPlan(plan, report);
  ForecastOptions options;
  options.draws = 1000;

  std::vector<Backtest> all;
  std::printf("%-26s %9s %12s %12s %12s\n", "scenario", "coverage", "P50 err h", "lifetime h", "last hour h");
  for (const Scenario& sc : Scenarios()) {
    std::vector<Backtest> mine;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SimulationOptions o = sc.options;
      o.seed = seed * 7919 + static_cast<uint64_t>(all.size());
      const std::vector<Event> events = SimulateRun(plan, report, o);
      // The simulator writes what a daemon accepts: every event applies or is a duplicate.
      RunState folded;
      std::set<std::string> keys;
      size_t refused = 0;
      for (const Event& e : events) {
        if (!keys.insert(EventKey(e, AttemptOf(folded, e))).second) continue;
        if (!ApplyEvent(folded, e).ok()) ++refused;
      }
      EXPECT_EQ(refused, 0u) << sc.name;
      EXPECT_EQ(folded.phase, Phase::kFinished) << sc.name;
      absl::StatusOr<Backtest> bt = RunBacktest(events, prior, options);
      ASSERT_TRUE(bt.ok()) << sc.name << ": " << bt.status();
      mine.push_back(*bt);
      all.push_back(*bt);
    }
    const BacktestSummary s = Summarize(mine);
    std::printf("%-26s %8.0f%% %12.1f %12.1f %12.1f\n", sc.name, s.coverage * 100,
                s.median_p50_error_seconds / 3600, s.median_naive_lifetime_error_seconds / 3600,
                s.median_naive_recent_error_seconds / 3600);
  }
  const BacktestSummary s = Summarize(all);
  std::printf("%-26s %8.0f%% %12.1f %12.1f %12.1f   (%zu points, median P10-P90 width %.1f h)\n",
              "all", s.coverage * 100, s.median_p50_error_seconds / 3600,
              s.median_naive_lifetime_error_seconds / 3600, s.median_naive_recent_error_seconds / 3600,
              s.points, s.median_interval_width_seconds / 3600);
  EXPECT_GE(s.coverage, 0.70);
  EXPECT_LE(s.coverage, 0.90);
  EXPECT_LE(s.median_p50_error_seconds, s.median_naive_lifetime_error_seconds);
  EXPECT_LE(s.median_p50_error_seconds, 0.5 * s.median_naive_recent_error_seconds);
}

}  // namespace
}  // namespace flightplan::forecast
