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
  bool inside = false;           // p10 <= actual <= p90
  double p50_error_seconds = 0;  // |p50 - actual|
  double naive_lifetime_error_seconds = 0;
  double naive_recent_error_seconds = 0;
  // Proper scores, as shares of the time that was actually left (actual - as_of): the 80%
  // interval (Winkler) score of P10..P90, its width + 10 x how far outside the actual fell
  // (Gneiting and Raftery 2007, section 6.2, alpha = 0.2); the CRPS from the 20 quantiles
  // (twice the mean pinball loss); and the naive lifetime estimate's, a point forecast,
  // whose CRPS is its absolute error and whose interval score is 10 x that.
  double remaining_seconds = 0;
  double interval_score = 0;
  double crps = 0;
  double naive_crps = 0;
  double width_share = 0;  // (P90 - P10) / remaining
  bool futures = false;    // the forecast showed two futures
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
[[nodiscard]] absl::StatusOr<Backtest> RunBacktest(const std::vector<Event>& events, const ForecastPrior& prior,
                                                   const ForecastOptions& options = {});

// Fills the point's scores from the forecast it was made from (BacktestPoint's comment).
void ScorePoint(BacktestPoint& point, const Forecast& forecast, absl::Time actual_finish);

// Medians over many backtests' points, and their coverage.
struct BacktestSummary {
  size_t points = 0;
  double coverage = 0;
  double median_p50_error_seconds = 0;
  double median_naive_lifetime_error_seconds = 0;
  double median_naive_recent_error_seconds = 0;
  double median_interval_width_seconds = 0;
  // Means of the shares above (proper scores are averaged), and the median width share.
  double mean_interval_score = 0;
  double mean_crps = 0;
  double mean_naive_crps = 0;
  double mean_naive_interval_score = 0;
  double median_width_share = 0;
};
[[nodiscard]] BacktestSummary Summarize(const std::vector<Backtest>& backtests);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_BACKTEST_H_
