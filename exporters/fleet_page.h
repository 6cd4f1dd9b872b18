// The fleet page (GET /runs/): every run on the daemon in one table, the worst first, for the
// infra team that asks which run is late, which burns its budget and which has a suspect node.
//
// Each run is placed in one of four classes, and its reasons are said in words:
//   - act now: down past its outage allowance (the page FlightplanRunDown sends), its budget
//     spent or more likely than not to run out, or its P50 finish past its deadline;
//   - look: down within its allowance, burning its budget faster than planned over the last
//     day, an active slowdown, a suspect node, or finishing later than the plan's P50 by more
//     than a day;
//   - on plan; and finished.
// Within a class the latest against its plan goes first. Plain HTML and CSS (no scripts, no
// network), a row per run, so that a thousand runs read as one sorted list.
#ifndef FLIGHTPLAN_EXPORTERS_FLEET_PAGE_H_
#define FLIGHTPLAN_EXPORTERS_FLEET_PAGE_H_

#include <string>
#include <vector>

#include "flightplan/v1/status.pb.h"

namespace flightplan::exporters {

// A run's place on the fleet page: its class (0 act now, 1 look, 2 on plan, 3 finished) and
// why, in words.
struct FleetVerdict {
  int severity = 2;
  std::vector<std::string> reasons;
};
[[nodiscard]] FleetVerdict JudgeRun(const v1::RunStatus& status);

// The page; its runs sorted by JudgeRun, then by slip. Relative links (it is served at /runs/).
[[nodiscard]] std::string FleetPageHtml(std::vector<v1::RunStatus> runs, int refresh_seconds);

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_FLEET_PAGE_H_
