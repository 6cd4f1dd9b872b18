// A run's figures as text, from its status: one function per figure, used by both
// `flightplan status` (cli/status_print) and the run's page (exporters/run_page), so the
// two never print one figure two ways. Pure.
#ifndef FLIGHTPLAN_TEXT_RUN_FIGURES_H_
#define FLIGHTPLAN_TEXT_RUN_FIGURES_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "flightplan/v1/status.pb.h"

namespace flightplan::text {

// A proto timestamp as absl::Time (InfinitePast when unset).
[[nodiscard]] absl::Time TimeOf(const google::protobuf::Timestamp& t);

// The plan's finish against the forecast: "expected 2027-03-01 12:00 UTC, committed
// 2027-03-20 06:00 UTC; P50 later by 3.2 h". Expected is the plan's own P50 (what a run on
// plan reaches, and what the slip is measured against); committed holds the contingency
// and the P90 failure budget, and is the deadline's and the alerts'. The slip only once the
// forecast has a P50.
[[nodiscard]] std::string PlanFinishText(const v1::Forecast& forecast);

// Goodput: productive / (elapsed - excluded), of the same seconds the wall-time table shows
// (without exclusions, the status's goodput, the page's and the table's productive share
// agree to the digit).
[[nodiscard]] double Goodput(const v1::TimeSeconds& seconds);
// The time categories in the order every table, chart and metric shows them: `name` is the
// metric's label value, `label` the words a table prints. Tables print the seven that every
// run has (`always`) and the others (capacity, custom, excluded) when they hold time.
struct TimeCategory {
  const char* name;
  const char* label;
  double seconds;
  bool always;
  [[nodiscard]] bool Shown() const { return always || seconds > 0; }
};
[[nodiscard]] std::vector<TimeCategory> TimeCategories(const v1::TimeSeconds& seconds);
// MFU, end to end: "37.3% over the run, 37.3% last hour (plan 38.6%; end to end, productive
// time)", or "" when the plan gives none.
[[nodiscard]] std::string MfuText(const v1::Mfu& mfu);
// "72.5%", "72.5% without the excluded 8.0% (66.7% counting it)", or "-" before any time
// has elapsed.
[[nodiscard]] std::string GoodputText(const v1::TimeSeconds& seconds);
// A category's share of the elapsed time, as the wall-time table prints it.
[[nodiscard]] std::string ShareText(const v1::TimeSeconds& seconds, double category_seconds);

// A throughput: "962 ktokens/s" (three significant digits, SI prefix).
[[nodiscard]] std::string RateText(double tokens_per_second);

// The slowdown on the run's own pace: "ACTIVE since 2027-01-09 04:00 UTC: 12.0% slower than
// its own pace 962 ktokens/s, noise 1.0%; cost 3.2 h so far, 1.4 days if it lasts to the
// finish", "1 found, cost ...", "none (own pace ...)", or "- (learning the run's own pace)"
// before the pace is known.
// The nodes line: the suspects among the run's nodes with their evidence and the option
// that drains them, or what node attribution needs.
[[nodiscard]] std::string NodesText(const v1::RunNodes& nodes);
[[nodiscard]] std::string SlowdownText(const v1::Slowdown& slowdown);

}  // namespace flightplan::text

#endif  // FLIGHTPLAN_TEXT_RUN_FIGURES_H_
