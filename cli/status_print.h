// The human-readable run status of `flightplan status` and forecast history of
// `flightplan history`. Pure.
#ifndef FLIGHTPLAN_CLI_STATUS_PRINT_H_
#define FLIGHTPLAN_CLI_STATUS_PRINT_H_

#include <string>

#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"

namespace flightplan::cli {

[[nodiscard]] std::string FormatRunStatus(const v1::RunStatus& status);
// The line that says a status's forecast is older than its state ("forecast as of N events
// (M behind), T ago"), or "" when it is fresh. Part of FormatRunStatus.
[[nodiscard]] std::string FormatForecastFreshness(const v1::RunStatus& status);
// `flightplan history`: one row per stored forecast point, oldest first.
[[nodiscard]] std::string FormatHistory(const v1::ForecastHistory& history);

// The what-if table: the baseline and each variant side by side; a broken variant with the
// planner's findings.
[[nodiscard]] std::string FormatWhatIf(const v1::WhatIfResponse& response);
[[nodiscard]] std::string FormatRunList(const v1::ListRunsResponse& runs);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_STATUS_PRINT_H_
