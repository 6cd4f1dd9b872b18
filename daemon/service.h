// TrackerService: the gRPC shell of flightpland (flightplan.v1.Tracker, callback API).
//
// Reactions never block and never touch the disk: they convert and validate, hand work to
// the Tracker's queue, and finish from the Tracker's completion after the commit. A full
// queue answers RESOURCE_EXHAUSTED. Thread-safe.
#ifndef FLIGHTPLAN_DAEMON_SERVICE_H_
#define FLIGHTPLAN_DAEMON_SERVICE_H_

#include <chrono>
#include <map>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/auth.h"
#include "daemon/tracker.h"
#include "daemon/work_queue.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace flightplan::daemon {

// absl and gRPC share the status codes; this is the one place that converts.
grpc::Status ToGrpc(const absl::Status& status);

class TrackerService final : public v1::Tracker::CallbackService {
 public:
  // Threads: the gRPC callback threads; one watch pump that builds watchers' statuses (off
  // the writer's thread); two what-if workers (off the callback threads).
  TrackerService(Tracker* tracker, Auth auth) : tracker_(tracker), auth_(std::move(auth)) {}

  grpc::ServerUnaryReactor* CreateRun(grpc::CallbackServerContext* context, const v1::CreateRunRequest* request,
                                      v1::CreateRunResponse* response) override;
  grpc::ServerUnaryReactor* UpdatePlan(grpc::CallbackServerContext* context, const v1::UpdatePlanRequest* request,
                                       v1::UpdatePlanResponse* response) override;
  grpc::ServerBidiReactor<v1::EventBatch, v1::BatchAck>* ReportEvents(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ReportBatch(grpc::CallbackServerContext* context, const v1::EventBatch* request,
                                        v1::BatchAck* response) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::GetStatusRequest* request,
                                      v1::RunStatus* response) override;
  grpc::ServerWriteReactor<v1::RunStatus>* WatchStatus(grpc::CallbackServerContext* context,
                                                       const v1::GetStatusRequest* request) override;
  grpc::ServerUnaryReactor* GetHistory(grpc::CallbackServerContext* context, const v1::GetHistoryRequest* request,
                                       v1::ForecastHistory* response) override;
  grpc::ServerUnaryReactor* WhatIf(grpc::CallbackServerContext* context, const v1::WhatIfRequest* request,
                                   v1::WhatIfResponse* response) override;
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* context, const v1::GetPlanRequest* request,
                                    v1::PlanRevision* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context, const v1::GetRunRequest* request,
                                   v1::RunInfo* response) override;
  grpc::ServerUnaryReactor* RetractEvents(grpc::CallbackServerContext* context, const v1::RetractRequest* request,
                                          v1::RetractResponse* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context, const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* context, const v1::ListNodesRequest* request,
                                      v1::NodeLedger* response) override;

  // Ends every open WatchStatus stream (UNAVAILABLE), so that Server::Shutdown need not
  // wait for its deadline. New watches are refused afterwards.
  void EndWatches();

  class WatchReactor;

 private:
  // `checked` (an Auth check) as it is; a refusal is counted and logged against `run` (the
  // request's, "" when it names none) with `events`, the events the call carried.
  absl::Status Authorize(absl::Status checked, absl::string_view rpc, const std::string& run, uint32_t events);
  void Unregister(WatchReactor* w);
  // Posts `w`'s Pump to the watch pump (never under w's lock).
  void Wake(WatchReactor* w);
  // On the watch pump: `run`'s status as its watchers share it (NOT_FOUND when gone).
  absl::StatusOr<v1::RunStatus> WatchedStatus(const std::string& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(watches_mu_);

  Tracker* const tracker_;
  const Auth auth_;
  absl::Mutex watches_mu_;
  std::set<WatchReactor*> watches_ ABSL_GUARDED_BY(watches_mu_);
  // The status the watchers of each run share, and what it was built from: rebuilt when
  // the view or the simulation changes (or, on the wall clock, after kSharedStatusFor).
  struct SharedStatus {
    std::shared_ptr<const RunView> view;
    std::shared_ptr<const forecast::Simulation> sim;
    std::chrono::steady_clock::time_point built;
    v1::RunStatus status;
  };
  std::map<std::string, SharedStatus> shared_ ABSL_GUARDED_BY(watches_mu_);
  bool ending_ ABSL_GUARDED_BY(watches_mu_) = false;
  // Last: their threads stop (after the work posted) before the members above go.
  WorkQueue whatif_{2};
  WorkQueue pump_{1};
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_SERVICE_H_
