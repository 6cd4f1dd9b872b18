// Calibration: simulated runs of the flagship plan in every named scenario (simulator.cc:
// reality differing from the plan, changing mid-run, bursty, heavier maintenance,
// deliberate rollbacks), 16 seeds each, backtested at every tenth of progress. What must
// hold (issue 11):
//   - overall, the actual finish falls inside P10..P90 in 75-88% of the cuts;
//   - in every scenario, at least 60% of the cuts after its change are covered (all cuts
//     for a scenario that does not change; before a change nobody can see it coming);
//   - the median P50 error is at most 0.6x the lifetime-rate estimate's overall, and no
//     worse than it in any scenario.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "forecast/calibration.h"
#include "planner/plan_engine.h"
#include "gtest/gtest.h"
#include "proto/plan_convert.h"

namespace flightplan::forecast {
namespace {

TEST(Calibration, EveryScenarioEverySeedEveryTenth) {
  absl::StatusOr<v1::Plan> proto = LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(proto.ok());
  const PlanSpec plan = PlanFromProto(*proto);
  const PlanReport report = ComputePlan(plan);
  CalibrationOptions options;
  options.seeds = 16;
  options.forecast.draws = 1000;
  absl::StatusOr<std::vector<ScenarioCalibration>> cal = Calibrate(plan, report, Scenarios(), options);
  ASSERT_TRUE(cal.ok()) << cal.status();
  std::printf("%s", CalibrationTable(*cal).c_str());
  ASSERT_EQ(cal->size(), Scenarios().size());

  for (const ScenarioCalibration& s : *cal) {
    EXPECT_EQ(s.refused_events, 0u) << s.scenario;
    EXPECT_EQ(s.all.points, 9u * options.seeds) << s.scenario;
    EXPECT_GE(s.after_change.coverage, 0.60) << s.scenario;
    EXPECT_LE(s.all.median_p50_error_seconds, s.all.median_naive_lifetime_error_seconds) << s.scenario;
  }
  const BacktestSummary all = Overall(*cal);
  EXPECT_GE(all.coverage, 0.75);
  EXPECT_LE(all.coverage, 0.88);
  EXPECT_LE(all.median_p50_error_seconds, 0.6 * all.median_naive_lifetime_error_seconds);
}

// A change the window can see moves the forecast: the same chaotic start backtested with
// the lifetime baseline stays pessimistic after the run settles, the default does not.
TEST(Calibration, ChangepointBeatsLifetimeAfterAChaoticStart) {
  absl::StatusOr<v1::Plan> proto = LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(proto.ok());
  const PlanSpec plan = PlanFromProto(*proto);
  const PlanReport report = ComputePlan(plan);
  const std::vector<Scenario> chaotic{*FindScenario("chaotic-start")};
  CalibrationOptions options;
  options.seeds = 2;
  options.forecast.draws = 500;
  options.forecast.model = EvidenceModel::kLifetime;
  absl::StatusOr<std::vector<ScenarioCalibration>> before = Calibrate(plan, report, chaotic, options);
  options.forecast.model = EvidenceModel::kChangepoint;
  absl::StatusOr<std::vector<ScenarioCalibration>> after = Calibrate(plan, report, chaotic, options);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_LT((*after)[0].after_change.median_p50_error_seconds,
            (*before)[0].after_change.median_p50_error_seconds);
  EXPECT_GT((*after)[0].after_change.coverage, (*before)[0].after_change.coverage);
}

}  // namespace
}  // namespace flightplan::forecast
