// Backtests: replay a run's events offline with the event clock and compare, at each tenth
// of progress, the forecast with the actual finish. Pure.
#ifndef FLIGHTPLAN_FORECAST_BACKTEST_H_
#define FLIGHTPLAN_FORECAST_BACKTEST_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "forecast/event.h"
#include "forecast/forecaster.h"

namespace flightplan::forecast {

struct BacktestPoint {
  int tenth = 0;  // 1..9: progress crossed tenth/10 of the target
  absl::Time as_of;
  absl::Time p10, p50, p90;
  absl::Time naive_lifetime, naive_recent;
  bool inside = false;             // p10 <= actual <= p90
  double p50_error_seconds = 0;    // |p50 - actual|
  double naive_lifetime_error_seconds = 0;
  double naive_recent_error_seconds = 0;
};

struct Backtest {
  absl::Time actual_finish;
  std::vector<BacktestPoint> points;
  double coverage = 0;  // share of points inside P10..P90
  double median_p50_error_seconds = 0;
  double median_naive_lifetime_error_seconds = 0;
  double median_naive_recent_error_seconds = 0;
};

// Folds `events` (time order, as a daemon would accept them: refused and duplicate events
// are skipped) and forecasts at each tenth. FAILED_PRECONDITION when the run never
// finishes (no run_finished and the target is not reached).
[[nodiscard]] absl::StatusOr<Backtest> RunBacktest(const std::vector<Event>& events,
                                                   const ForecastPrior& prior,
                                                   const ForecastOptions& options = {});

// Medians over many backtests' points, and their coverage.
struct BacktestSummary {
  size_t points = 0;
  double coverage = 0;
  double median_p50_error_seconds = 0;
  double median_naive_lifetime_error_seconds = 0;
  double median_naive_recent_error_seconds = 0;
  double median_interval_width_seconds = 0;
};
[[nodiscard]] BacktestSummary Summarize(const std::vector<Backtest>& backtests);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_BACKTEST_H_
