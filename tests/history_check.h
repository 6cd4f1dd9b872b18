// The forecast history's promises, checked on what the daemon serves: strictly increasing
// in as_of, and thinned (two points less than 10 minutes of the run's time apart only when
// the later one is a large move, at least a minute on, or the finish; a large move: P50
// moved by more than 1% of the time remaining to it and a tenth of the P10..P90 band, or
// P(exhausted) by 0.1 or more). The rule is
// restated here from docs/tracker.md rather than taken from daemon/forecast_history.h, so that
// the tests hold the code to the documented contract.
#ifndef FLIGHTPLAN_TESTS_HISTORY_CHECK_H_
#define FLIGHTPLAN_TESTS_HISTORY_CHECK_H_

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"
#include "gtest/gtest.h"

namespace flightplan::testing {

inline double Seconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + t.nanos() / 1e9;
}

inline ::testing::AssertionResult MonotoneAndThinned(const v1::ForecastHistory& h) {
  for (int i = 1; i < h.points_size(); ++i) {
    const v1::ForecastPoint& a = h.points(i - 1);
    const v1::ForecastPoint& b = h.points(i);
    const double gap = Seconds(b.as_of()) - Seconds(a.as_of());
    if (gap <= 0) {
      return ::testing::AssertionFailure() << "point " << i << " is not after point " << i - 1 << " (" << gap << " s)";
    }
    if (gap >= 600 || b.finished()) continue;
    const double remaining = std::max(0.0, Seconds(a.finish_p50()) - Seconds(a.as_of()));
    const double band = std::max(0.0, Seconds(a.finish_p90()) - Seconds(a.finish_p10()));
    const double p50_moved = std::fabs(Seconds(b.finish_p50()) - Seconds(a.finish_p50()));
    const bool large = a.has_finish_p50() != b.has_finish_p50() ||
                       (p50_moved > 0.01 * remaining && p50_moved > 0.1 * band) ||
                       std::fabs(b.exhaustion_probability() - a.exhaustion_probability()) >= 0.1 - 1e-9;
    if (gap < 60 || !large) {
      return ::testing::AssertionFailure()
             << "points " << i - 1 << " and " << i << " are " << gap << " s apart without a large move "
             << "(P50 moved " << p50_moved << " s of " << remaining << " s remaining; P(exhausted) "
             << a.exhaustion_probability() << " -> " << b.exhaustion_probability() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// A finished run's history ends at its final status: the last point is the finished one,
// with the status's events, time, P50, failure budget, P(exhausted) and burn rate.
inline ::testing::AssertionResult EndsAtFinalStatus(const v1::ForecastHistory& h, const v1::RunStatus& status) {
  if (h.points_size() == 0) return ::testing::AssertionFailure() << "no points";
  const v1::ForecastPoint& last = h.points(h.points_size() - 1);
  auto differ = [](const char* what, auto got, auto want) {
    return ::testing::AssertionFailure() << "last point's " << what << " " << got << ", status " << want;
  };
  if (!last.finished()) return ::testing::AssertionFailure() << "last point not finished";
  if (last.events() != status.events()) return differ("events", last.events(), status.events());
  if (last.as_of().seconds() != status.as_of().seconds()) {
    return differ("as_of", last.as_of().seconds(), status.as_of().seconds());
  }
  if (last.finish_p50().seconds() != status.forecast().finish_p50().seconds()) {
    return differ("finish_p50", last.finish_p50().seconds(), status.forecast().finish_p50().seconds());
  }
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); };
  if (!near(last.budget_consumed_seconds(), status.failure_budget().consumed_seconds())) {
    return differ("budget consumed", last.budget_consumed_seconds(), status.failure_budget().consumed_seconds());
  }
  if (!near(last.projected_at_finish_seconds(), status.failure_budget().projected_at_finish_seconds())) {
    return differ("projected at finish", last.projected_at_finish_seconds(),
                  status.failure_budget().projected_at_finish_seconds());
  }
  if (!near(last.exhaustion_probability(), status.failure_budget().exhaustion_probability())) {
    return differ("P(exhausted)", last.exhaustion_probability(), status.failure_budget().exhaustion_probability());
  }
  if (!near(last.burn_rate(), status.failure_budget().burn_rate())) {
    return differ("burn rate", last.burn_rate(), status.failure_budget().burn_rate());
  }
  return ::testing::AssertionSuccess();
}

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_HISTORY_CHECK_H_
