// The run's page: one self-contained HTML file (inline SVG, no script from anywhere, no
// network) drawn from what the daemon holds: the status, the forecast history and the
// plan. Served by flightpland at /runs/ and /runs/NAME (on its metrics address) and
// written by `flightplan status RUN --html FILE`. Pure: protos in, HTML out.
//
// Every string that comes from events or plans (run names, causes, flags) is escaped.
// Colours are the Okabe-Ito palette (distinguishable under the common colour-vision
// deficiencies), and lines also differ by dash, so nothing is told by colour alone.
#ifndef FLIGHTPLAN_EXPORTERS_RUN_PAGE_H_
#define FLIGHTPLAN_EXPORTERS_RUN_PAGE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"

namespace flightplan::exporters {

// &, <, >, " and ' as character references.
std::string HtmlEscape(std::string_view text);

// The page is drawn from the status and the forecast history alone, so that `flightplan
// status --html` makes the same page from the same two calls. The plan's line is the
// straight one from its start (its finish less its schedule) to its finish.
struct RunPageInput {
  v1::RunStatus status;
  v1::ForecastHistory history;
  // > 0: the page reloads itself every this many seconds (a live run); 0: a snapshot.
  int refresh_seconds = 0;
  // Where the page was made (shown at the bottom): "flightpland", "flightplan status".
  std::string generator = "flightpland";
};

// One run: the summary header, the finish-date trajectory, the failure budget against its
// allowance, where the wall time went and the interruptions by cause.
std::string RunPageHtml(const RunPageInput& input);

// The throughput chart's points, (Unix seconds, tokens per productive second), from the
// stored history's points that carry the run's state, oldest first: each the rate over a
// stretch of at least a twentieth of the work shown, clamped to 1-10 minutes of work, so a
// short run or a thinned backfill draws a line.
std::vector<std::pair<double, double>> ThroughputPoints(const std::vector<const v1::ForecastPoint*>& points);

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_RUN_PAGE_H_
