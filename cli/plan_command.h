// `flightplan plan`: the report of a plan file, and the fleet for a deadline.
#ifndef FLIGHTPLAN_CLI_PLAN_COMMAND_H_
#define FLIGHTPLAN_CLI_PLAN_COMMAND_H_

#include <iosfwd>
#include <string>

namespace flightplan::cli {

struct PlanCommandOptions {
  std::string path;                 // plan file, "-" for standard input
  bool json = false;                // print PlanReport as proto JSON
  std::string deadline;             // empty, or an RFC 3339 time / date: also search the fleet
  bool allow_batch_change = false;  // the deadline search may grow the global batch
};

// Exit status: 0 when no finding is an error, 1 when one is, 2 when the file can't be
// read or parsed (the message, on `err`, names the line and key).
[[nodiscard]] int RunPlanCommand(const PlanCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_PLAN_COMMAND_H_
