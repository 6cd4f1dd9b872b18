// The shell's conversions between the tracker's types and flightplan.v1 messages: what
// a gRPC request brings in (events, plans, a what-if), and what the gRPC and HTTP sides
// give out (statuses, histories, plan revisions, acks). The one place where the daemon's
// types meet the wire; the pure core's pieces come from convert/. Pure and thread-safe.
#ifndef FLIGHTPLAN_DAEMON_WIRE_H_
#define FLIGHTPLAN_DAEMON_WIRE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/ingest_writer.h"
#include "daemon/run_status.h"
#include "daemon/run_view.h"
#include "flightplan/v1/event.pb.h"
#include "flightplan/v1/plan.pb.h"
#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

// In. An event that cannot be decoded keeps why in IngestEvent::event; the writer refuses
// its batch naming it.
[[nodiscard]] IngestEvent IngestEventFromProto(const v1::Event& event);
// A batch's events (a RepeatedPtrField or a std::vector of v1::Event), in order.
template <typename Events>
[[nodiscard]] std::vector<IngestEvent> IngestEventsFromProto(const Events& events) {
  std::vector<IngestEvent> out;
  out.reserve(static_cast<size_t>(events.size()));
  for (const v1::Event& e : events) out.push_back(IngestEventFromProto(e));
  return out;
}
[[nodiscard]] PlanInput PlanInputFromProto(const v1::Plan& plan);
// INVALID_ARGUMENT naming variants[i] when a variant changes nothing.
[[nodiscard]] absl::StatusOr<WhatIfQuery> WhatIfQueryFromProto(const v1::WhatIfRequest& request);
[[nodiscard]] RetractSpec RetractSpecFromProto(const v1::RetractRequest& request);

// Out.
[[nodiscard]] v1::RunStatus RunStatusToProto(const RunStatus& status);
[[nodiscard]] v1::WhatIfResponse WhatIfAnswerToProto(const WhatIfAnswer& answer);
// The ledger (`runs`: the runs tracked), and one node's verdict.
[[nodiscard]] v1::NodeLedger NodeLedgerToProto(const forecast::NodeLedger& ledger, uint32_t runs);
void NodeVerdictToProto(const forecast::NodeRecord& record, v1::NodeVerdict* out);
// Slurm's option that leaves `nodes` out ("" for none).
[[nodiscard]] std::string ExcludeOption(const std::vector<std::string>& nodes);
// What a status says of a run whose events name no nodes.
inline constexpr char kNoNodesNote[] =
    "no node attribution: this run's events name no nodes (JobStarted.nodes from flightplan slurm, the client's "
    "job_started(nodes=) or SLURM_JOB_NODELIST, or flightplan tail where the log prints its hosts)";
[[nodiscard]] v1::RunSummary RunSummaryToProto(const RunView& view);
void BatchAckToProto(uint64_t sequence, const BatchResult& result, v1::BatchAck& ack);
// The plan as the client sent it (RunPlan::encoded).
[[nodiscard]] v1::Plan PlanToProto(const RunPlan& plan);
// The run's i-th plan revision, as GetRun lists them and GetPlan returns one.
void RevisionToProto(const RunInfo& info, size_t i, v1::PlanRevision& out);
[[nodiscard]] v1::RunInfo RunInfoToProto(const RunInfo& info);
// GetStatus over an interval (GetStatusRequest.from / to): `status`, the run's status now,
// gets the interval's time, goodput, failure budget consumed and interruptions
// (forecast::AccountInterval over the run's log `events`) and its `interval`.
// INVALID_ARGUMENT naming the field for an interval that is reversed or after the run's now.
[[nodiscard]] absl::Status IntervalStatus(const v1::GetStatusRequest& request,
                                          std::vector<forecast::LoggedEvent> events,
                                          const forecast::FoldSettings& settings, v1::RunStatus& status);

void RetractResultToProto(const std::string& run, const RetractResult& result, v1::RetractResponse& out);
// The stored points as the GetHistory message (and the run page's input), with the run's
// interruptions on its timeline from its folded state.
[[nodiscard]] v1::ForecastHistory HistoryToProto(const std::string& run,
                                                 const std::vector<storage::ForecastPoint>& points,
                                                 const forecast::RunState* state);

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_WIRE_H_
