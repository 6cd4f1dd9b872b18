// `flightplan nodes`: the daemon's node ledger (flightplan.v1.Tracker.ListNodes), as a table
// with each suspect's evidence and the option that drains them, or as JSON.
#ifndef FLIGHTPLAN_CLI_NODES_COMMAND_H_
#define FLIGHTPLAN_CLI_NODES_COMMAND_H_

#include <iosfwd>
#include <string>

#include "cli/client_commands.h"
#include "flightplan/v1/tracker.pb.h"

namespace flightplan::cli {

struct NodesOptions {
  std::string run;        // "" = every node the daemon has seen
  bool suspects = false;  // only the suspects
  bool json = false;
};
// Exit 0; 1 when the daemon refuses (an unknown run: NOT_FOUND).
int RunNodes(const ClientOptions& client, const NodesOptions& options, std::ostream& out, std::ostream& err);

// The table: one line per node, suspects first, then what the fleet's rate and the
// threshold are, and the exclude option.
[[nodiscard]] std::string FormatNodeLedger(const v1::NodeLedger& ledger, bool suspects_only);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_NODES_COMMAND_H_
