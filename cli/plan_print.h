// The human-readable plan report: one screen, findings first, humane units.
#ifndef FLIGHTPLAN_CLI_PLAN_PRINT_H_
#define FLIGHTPLAN_CLI_PLAN_PRINT_H_

#include <string>

#include "planner/plan.h"

namespace flightplan::cli {

// `fleet` may be null (no --deadline).
[[nodiscard]] std::string FormatPlanReport(const planner::PlanSpec& plan, const planner::PlanReport& report,
                                           const planner::DeadlineFleet* fleet);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_PLAN_PRINT_H_
