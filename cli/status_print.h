// The human-readable run status of `flightplan status`.
#ifndef FLIGHTPLAN_CLI_STATUS_PRINT_H_
#define FLIGHTPLAN_CLI_STATUS_PRINT_H_

#include <string>

#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"

namespace flightplan {

[[nodiscard]] std::string FormatRunStatus(const v1::RunStatus& status);
[[nodiscard]] std::string FormatRunList(const v1::ListRunsResponse& runs);

}  // namespace flightplan

#endif  // FLIGHTPLAN_CLI_STATUS_PRINT_H_
