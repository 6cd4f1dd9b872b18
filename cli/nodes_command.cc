#include "cli/nodes_command.h"

#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/client_support.h"

namespace flightplan::cli {

std::string FormatNodeLedger(const v1::NodeLedger& l, bool suspects_only) {
  std::string out;
  if (l.runs_with_nodes() == 0) {
    return absl::StrCat("no node attribution: none of the ", l.runs(),
                        " runs' events name nodes (JobStarted.nodes from flightplan slurm, the client's "
                        "job_started(nodes=) or SLURM_JOB_NODELIST, or flightplan tail where the log prints its "
                        "hosts)\n");
  }
  absl::StrAppendFormat(&out, "%-24s %8s %11s %8s %5s  %s\n", "NODE", "ATTEMPTS", "NODE-HOURS", "FAILURES", "SLOW",
                        "VERDICT");
  int shown = 0, suspects = 0;
  for (const v1::NodeVerdict& n : l.nodes()) {
    suspects += n.suspect() ? 1 : 0;
    if (suspects_only && !n.suspect()) continue;
    ++shown;
    absl::StrAppendFormat(&out, "%-24s %8d %11.1f %8d %5d  %s\n", n.node(), n.attempts(), n.node_hours(), n.failures(),
                          n.slow_stretches(),
                          n.suspect() ? absl::StrCat("suspect (", n.reason(), "): ", n.evidence()) : "-");
  }
  if (shown == 0) out += "(no suspects)\n";
  absl::StrAppendFormat(&out, "\n%d nodes from %d of %d runs; the fleet: %d failures in %.0f node-hours",
                        l.nodes_size(), l.runs_with_nodes(), l.runs(), l.failures(), l.node_hours());
  if (l.fleet_rate_per_hour() > 0) absl::StrAppendFormat(&out, " (1 per %.0f node-hours)", 1 / l.fleet_rate_per_hour());
  if (l.tested() > 0) {
    absl::StrAppendFormat(&out, "; failures make a suspect below p = %.2g (0.01 over %d nodes tested), from 3 on",
                          l.threshold(), l.tested());
  }
  out += "; two slow stretches make one\n";
  out += suspects > 0 ? absl::StrCat("drain: ", l.exclude(), "\n") : "no suspects: no node stands out from the fleet\n";
  return out;
}

int RunNodes(const ClientOptions& client, const NodesOptions& o, std::ostream& out, std::ostream& err) {
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::ListNodesRequest request;
  request.set_run(o.run);
  v1::NodeLedger ledger;
  grpc::Status st = stub->ListNodes(&ctx, request, &ledger);
  if (!st.ok()) return Fail(err, "nodes", st, client);
  if (o.suspects) {
    v1::NodeLedger only = ledger;
    only.clear_nodes();
    for (const v1::NodeVerdict& n : ledger.nodes()) {
      if (n.suspect()) *only.add_nodes() = n;
    }
    if (o.json) {
      out << Json(only);
      return 0;
    }
  }
  out << (o.json ? Json(ledger) : FormatNodeLedger(ledger, o.suspects));
  return 0;
}

}  // namespace flightplan::cli
