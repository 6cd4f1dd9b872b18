#include "forecast/backtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace flightplan::forecast {
namespace {

double Error(absl::Time predicted, absl::Time actual) {
  if (predicted == absl::InfiniteFuture()) return std::numeric_limits<double>::infinity();
  return std::fabs(absl::ToDoubleSeconds(predicted - actual));
}

// The upper median (the upper of the two middle values of an even count).
double UpperMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A share of the remaining time, capped at 10 (a naive estimate at a rate of ~0).
double Share(double seconds, double remaining) {
  if (!std::isfinite(seconds)) return 10;
  return remaining > 0 ? std::min(10.0, seconds / remaining) : 0;
}

}  // namespace

void ScorePoint(BacktestPoint& p, const Forecast& f, absl::Time actual) {
  const double y = absl::ToDoubleSeconds(actual - f.as_of);
  p.remaining_seconds = std::max(1.0, y);
  auto at = [&](absl::Time t) { return absl::ToDoubleSeconds(t - f.as_of); };
  const double lo = at(p.p10), hi = at(p.p90);
  constexpr double kAlpha = 0.2;
  double winkler = hi - lo;
  if (y < lo) winkler += 2 / kAlpha * (lo - y);
  if (y > hi) winkler += 2 / kAlpha * (y - hi);
  p.interval_score = Share(winkler, p.remaining_seconds);
  p.width_share = Share(hi - lo, p.remaining_seconds);
  double crps = 0;
  if (!f.finish_quantiles.empty()) {
    for (size_t i = 0; i < f.finish_quantiles.size(); ++i) {
      const double tau = FinishQuantileLevel(static_cast<int>(i)), q = at(f.finish_quantiles[i]);
      crps += 2 * (y - q) * (tau - (y < q ? 1.0 : 0.0)) / static_cast<double>(f.finish_quantiles.size());
    }
  } else {
    crps = std::fabs(at(p.p50) - y);
  }
  p.crps = Share(crps, p.remaining_seconds);
  p.naive_crps = Share(p.naive_lifetime_error_seconds, p.remaining_seconds);
  p.futures = !f.futures.empty();
}

absl::StatusOr<Backtest> RunBacktest(const std::vector<Event>& events, const ForecastPrior& prior,
                                     const ForecastOptions& options) {
  // Folds the log as a daemon would accept it: duplicates (by key) and refused events are
  // skipped. `on_applied` returns false to stop.
  auto fold = [&events, &prior](RunState& s, const auto& on_applied) {
    s.settings = FoldSettingsFor(prior);
    std::set<std::string> keys;
    for (const Event& e : events) {
      if (!keys.insert(EventKey(e, AttemptOf(s, e))).second) continue;
      if (!ApplyEvent(s, e).ok()) continue;
      if (!on_applied()) return;
    }
  };
  // First pass: the actual finish.
  Backtest bt;
  {
    RunState s;
    fold(s, [&] {
      if (s.phase == Phase::kFinished || (prior.target_tokens > 0 && s.tokens >= prior.target_tokens)) {
        bt.actual_finish = s.last_time;
        return false;
      }
      return true;
    });
    if (s.phase != Phase::kFinished && s.tokens < prior.target_tokens) {
      return absl::FailedPreconditionError(
          absl::StrCat("the run never reaches its target (", s.tokens, " of ", prior.target_tokens,
                       " tokens, no run_finished): there is no actual finish to test against"));
    }
  }
  // Second pass: forecast each time progress crosses a tenth.
  RunState s;
  int next_tenth = 1;
  fold(s, [&] {
    if (s.phase == Phase::kFinished) return false;
    while (next_tenth <= 9 &&
           static_cast<double>(s.tokens) >= static_cast<double>(prior.target_tokens) * next_tenth / 10.0) {
      const Forecast f = ComputeForecast(s, prior, s.last_time, options);
      BacktestPoint p;
      p.tenth = next_tenth++;
      p.as_of = f.as_of;
      p.p10 = f.finish_p10;
      p.p50 = f.finish_p50;
      p.p90 = f.finish_p90;
      p.naive_lifetime = f.naive_lifetime_finish;
      p.naive_recent = f.naive_recent_finish;
      p.inside = p.p10 <= bt.actual_finish && bt.actual_finish <= p.p90;
      p.p50_error_seconds = Error(p.p50, bt.actual_finish);
      p.naive_lifetime_error_seconds = Error(p.naive_lifetime, bt.actual_finish);
      p.naive_recent_error_seconds = Error(p.naive_recent, bt.actual_finish);
      ScorePoint(p, f, bt.actual_finish);
      bt.points.push_back(p);
    }
    return true;
  });
  const BacktestSummary summary = Summarize({bt});
  bt.coverage = summary.coverage;
  bt.median_p50_error_seconds = summary.median_p50_error_seconds;
  bt.median_naive_lifetime_error_seconds = summary.median_naive_lifetime_error_seconds;
  bt.median_naive_recent_error_seconds = summary.median_naive_recent_error_seconds;
  return bt;
}

BacktestSummary Summarize(const std::vector<Backtest>& backtests) {
  BacktestSummary s;
  std::vector<double> p50, life, recent, width, width_share;
  size_t inside = 0;
  for (const Backtest& b : backtests) {
    for (const BacktestPoint& p : b.points) {
      ++s.points;
      inside += p.inside ? 1 : 0;
      p50.push_back(p.p50_error_seconds);
      life.push_back(p.naive_lifetime_error_seconds);
      recent.push_back(p.naive_recent_error_seconds);
      width.push_back(absl::ToDoubleSeconds(p.p90 - p.p10));
      width_share.push_back(p.width_share);
      s.mean_interval_score += p.interval_score;
      s.mean_crps += p.crps;
      s.mean_naive_crps += p.naive_crps;
    }
  }
  if (s.points > 0) {
    const double n = static_cast<double>(s.points);
    s.mean_interval_score /= n;
    s.mean_crps /= n;
    s.mean_naive_crps /= n;
    s.mean_naive_interval_score = 10 * s.mean_naive_crps;  // a point's interval: 2/alpha x its error
  }
  s.median_width_share = UpperMedian(width_share);
  s.coverage = s.points ? static_cast<double>(inside) / static_cast<double>(s.points) : 0;
  s.median_p50_error_seconds = UpperMedian(p50);
  s.median_naive_lifetime_error_seconds = UpperMedian(life);
  s.median_naive_recent_error_seconds = UpperMedian(recent);
  s.median_interval_width_seconds = UpperMedian(width);
  return s;
}

}  // namespace flightplan::forecast
