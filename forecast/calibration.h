// Calibration: many simulated runs of one plan, one set per named scenario (simulator.h),
// each backtested at every tenth of progress, summarised per scenario. What the
// calibration test asserts on and what `flightplan_calibrate` prints for docs/forecasting.md.
// Pure and deterministic for its inputs.
#ifndef FLIGHTPLAN_FORECAST_CALIBRATION_H_
#define FLIGHTPLAN_FORECAST_CALIBRATION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "forecast/backtest.h"
#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "planner/plan.h"

namespace flightplan::forecast {

// The planner's plan and report, which the forecaster takes as its prior.
using planner::PlanReport;
using planner::PlanSpec;

struct ScenarioCalibration {
  std::string scenario;
  double change_at = 0;
  std::vector<Backtest> runs;
  BacktestSummary all;           // every cut
  BacktestSummary after_change;  // the cuts strictly after `change_at` (all cuts when 0)
  size_t refused_events = 0;     // events a daemon would refuse (a simulator bug if not 0)
};

struct CalibrationOptions {
  int seeds = 3;
  ForecastOptions forecast;
  double duplicate_fraction = 0.01;  // events sent twice, as real clients do
  // Called after each simulated run (for progress on long calibrations); may be empty.
  std::function<void(const std::string& scenario, int seed)> progress;
};

// Backtests `seeds` runs of each scenario. FAILED_PRECONDITION when a run never finishes.
[[nodiscard]] absl::StatusOr<std::vector<ScenarioCalibration>> Calibrate(const PlanSpec& plan, const PlanReport& report,
                                                                         const std::vector<Scenario>& scenarios,
                                                                         const CalibrationOptions& options);

// The points of every scenario together.
[[nodiscard]] BacktestSummary Overall(const std::vector<ScenarioCalibration>& scenarios);

// The table: scenario, coverage (all cuts and after the change), median P50 error and
// both naive errors, in hours; a last row for all scenarios.
[[nodiscard]] std::string CalibrationTable(const std::vector<ScenarioCalibration>& scenarios);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_CALIBRATION_H_
