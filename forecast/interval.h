// The accounting of one interval of a run's time (docs/contract.md §5, "Any interval"; Google's
// goodput interval query): the categories, the failure budget consumed and the interruptions
// between `from` and `to`, from the run's whole log. Pure.
#ifndef FLIGHTPLAN_FORECAST_INTERVAL_H_
#define FLIGHTPLAN_FORECAST_INTERVAL_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "forecast/accounting.h"

namespace flightplan::forecast {

struct IntervalAccounting {
  absl::Time from, to;  // `to` clipped to the run's now (a finished run's finish)
  TimeSeconds seconds;  // adds up to to - from, less what precedes the run's first event
  double elapsed_seconds = 0;
  double failure_budget_consumed_seconds = 0;
  std::vector<SpanSeconds> custom_by_kind;
  std::vector<InterruptionCount> interruptions;  // stops dated in [from, to)
};

// The run's state as of each end, each folded from the events dated at or before it (in
// FoldOrder), and their difference. Time that a later event moves between categories (a
// restore that rolls back work done before `from`, a launch's first report showing that its
// "startup" was training) is netted where it went: the interval never shows a negative
// category. `now`: the run's now (its latest event, or the wall clock). INVALID_ARGUMENT when
// `to` is not after `from`, or `from` is past `now`.
[[nodiscard]] absl::StatusOr<IntervalAccounting> AccountInterval(std::vector<LoggedEvent> events,
                                                                 const FoldSettings& settings, absl::Time from,
                                                                 absl::Time to, absl::Time now);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_INTERVAL_H_
