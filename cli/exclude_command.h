// `flightplan exclude`: leaves a window of a run's time out of its accounting (docs/contract.md
// §5, "excluded"), as an `excluded` event sent through ReportBatch, stored with the run's
// events and retractable like any of them (`flightplan retract --id`).
#ifndef FLIGHTPLAN_CLI_EXCLUDE_COMMAND_H_
#define FLIGHTPLAN_CLI_EXCLUDE_COMMAND_H_

#include <iosfwd>
#include <string>

#include "cli/client_commands.h"

namespace flightplan::cli {

struct ExcludeOptions {
  std::string run;
  std::string from, to;  // RFC 3339 or a date
  std::string reason;
  std::string id;  // "" = its natural key (~ex/t<from>)
};
// Exit 0 when stored (or already stored); 1 when the daemon refuses (an overlap, a window in
// the future or before the run); 2 for a command-line error (a reversed window).
int RunExclude(const ClientOptions& client, const ExcludeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_EXCLUDE_COMMAND_H_
