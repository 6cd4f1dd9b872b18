// A run's own crises of failures, read from its evidence samples: where the crisis under
// way began (the forecast ages it from there once an earlier one has ended), and the
// earlier ones that the law for the end of a bad period (bad_period.h) weighs beside the
// records (issue 42: "the run's own earlier periods and their lengths weigh in"). Read
// once per simulation of a run in a crisis, over its at most kMaxEvidenceSamples samples.
// Pure: no clock, no I/O.
//
// A day of the run is in crisis when its failures cost at least kFarRatio times the plan's
// per running hour (the threshold at which the forecast shows two futures) and their count
// alone is too many for the plan's rate to explain (a Poisson tail under 1%: one long
// restart is not a crisis). Consecutive such days are one crisis; it has ended once two
// calm days in a row follow it, calm meaning back more than half way, in logs, to the
// plan's cost (under the square root of kFarRatio).
#ifndef FLIGHTPLAN_FORECAST_CRISIS_HISTORY_H_
#define FLIGHTPLAN_FORECAST_CRISIS_HISTORY_H_

#include <deque>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"

namespace flightplan::forecast {

struct PastCrisis {
  absl::Time start, end;  // wall clock: from its first bad day's start to its last's end
  double incidents = 0;
  double cost_ratio = 0;  // its failures' cost per running second over the plan's
};

struct CrisisHistory {
  std::vector<PastCrisis> ended;  // two calm days after their last bad one, oldest first
  // The start of a crisis under way at `before` (bad days not yet followed by two calm
  // ones); InfiniteFuture when there is none.
  absl::Time open_since = absl::InfiniteFuture();
};

// The run's crises up to `before`. `plan_mtbf_seconds` and `plan_loss_seconds`: the plan's
// running seconds between interruptions and seconds lost to each.
[[nodiscard]] CrisisHistory ReadCrises(const std::deque<EvidenceSample>& evidence, double plan_mtbf_seconds,
                                       double plan_loss_seconds, absl::Time before);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_CRISIS_HISTORY_H_
