// `flightplan plan`: the report of a plan file, and the fleet for a deadline.
#ifndef FLIGHTPLAN_CLI_PLAN_COMMAND_H_
#define FLIGHTPLAN_CLI_PLAN_COMMAND_H_

#include <iosfwd>
#include <string>

#include "planner/plan.h"

namespace flightplan::cli {

struct PlanCommandOptions {
  std::string path;                 // plan file, "-" for standard input
  bool json = false;                // print PlanReport as proto JSON
  std::string deadline;             // empty, or an RFC 3339 time / date: also search the fleet
  bool allow_batch_change = false;  // the deadline search may grow the global batch
};

// Exit status (the subcommand's --help says them):
inline constexpr int kPlanOk = 0;          // no error finding; with --deadline, a fleet meets it
inline constexpr int kPlanError = 1;       // an error finding (with --deadline: other than the
                                           // plan's own DEADLINE_MISSED, which the search answers)
inline constexpr int kPlanUnreadable = 2;  // the file can't be read or parsed, or a bad option
                                           // (the message, on `err`, names the line and key)
inline constexpr int kPlanNoFleet = 3;     // with --deadline: the plan is sound, no fleet meets it
[[nodiscard]] int RunPlanCommand(const PlanCommandOptions& options, std::ostream& out, std::ostream& err);

// The exit status of a report, and of the deadline search when there was one.
[[nodiscard]] int PlanExitCode(const planner::PlanReport& report, const planner::DeadlineFleet* fleet);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_PLAN_COMMAND_H_
