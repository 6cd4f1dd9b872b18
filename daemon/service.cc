#include "daemon/service.h"

#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "convert/plan_convert.h"
#include "daemon/wire.h"

namespace flightplan::daemon {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {

// The most a ReportEvents stream keeps in flight (submitted, or acked but not yet
// written) before it stops reading: a client that floods waits instead of growing memory.
constexpr size_t kMaxPendingPerStream = 64;

class EventsReactor final : public grpc::ServerBidiReactor<v1::EventBatch, v1::BatchAck> {
 public:
  explicit EventsReactor(Tracker* tracker) : tracker_(tracker) {
    reading_ = true;
    StartRead(&batch_);
  }

  void OnReadDone(bool ok) override {
    uint64_t refused_since = 0;
    bool drop = false;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      // After a cancel, a batch that was read just before it is dropped: nothing more is
      // submitted on behalf of a client that is gone.
      drop = !ok || cancelled_;
      if (!drop) {
        ++in_flight_;
        refused_since = refused_ ? std::max<uint64_t>(refused_since_, 1) : 0;
      }
    }
    if (drop) {
      Decide([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { reads_done_ = true; });
      return;
    }
    const uint64_t sequence = batch_.sequence();
    std::vector<IngestEvent> events = IngestEventsFromProto(batch_.events());
    absl::Status st;
    if (refused_since != 0) {
      // The stream is an ordered log: after a batch was refused before reaching the queue,
      // later ones are refused too (the writer does the same for the ones it refuses).
      st = absl::AbortedError(
          absl::StrCat("batch ", refused_since, " of this stream was refused; resend from it, in order"));
    } else {
      st = tracker_->SubmitEvents(
          std::move(events), [this, sequence](BatchResult r) { Acknowledge(sequence, r); }, order_, sequence);
      if (!st.ok()) {
        absl::MutexLock lock(&mu_);
        refused_ = true;
        refused_since_ = sequence;
      }
    }
    if (!st.ok()) Acknowledge(sequence, BatchResult{st, 0, 0, {}});
    // Read on, or pause (Decide resumes when acks drain); never after a cancel.
    Decide([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { paused_ = true; });
  }

  void OnWriteDone(bool ok) override {
    Decide([this, ok]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      writing_ = false;
      if (!ok) write_failed_ = true;
    });
  }

  // The client went away (cancelled, deadline, connection lost). A paused stream has no
  // read outstanding that would tell it so: without this it would wait forever, holding
  // its memory and blocking the server's shutdown. It finishes once the batches it
  // submitted are committed (their completions still point here).
  void OnCancel() override {
    Decide([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      cancelled_ = true;
      write_failed_ = true;
      if (!reading_) reads_done_ = true;  // else its OnReadDone says so
    });
  }

  void OnDone() override { delete this; }

 private:
  void Acknowledge(uint64_t sequence, const BatchResult& r) {
    Decide([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      --in_flight_;
      if (write_failed_) return;
      acks_.emplace_back();
      BatchAckToProto(sequence, r, acks_.back());
    });
  }

  // Changes state under the lock, then starts what the new state calls for, outside it.
  template <typename F>
  void Decide(F change) {
    bool write = false, read = false, finish = false;
    {
      absl::MutexLock lock(&mu_);
      change();
      if (!writing_ && !acks_.empty() && !write_failed_) {
        current_ = std::move(acks_.front());
        acks_.pop_front();
        writing_ = true;
        write = true;
      }
      if (paused_ && cancelled_ && !reading_) reads_done_ = true;
      if (paused_ && !reads_done_ && !cancelled_ && in_flight_ + acks_.size() < kMaxPendingPerStream) {
        paused_ = false;
        reading_ = true;
        read = true;
      }
      if (reads_done_ && in_flight_ == 0 && !writing_ && (acks_.empty() || write_failed_) && !finished_) {
        finished_ = true;
        finish = true;
      }
    }
    if (write) StartWrite(&current_);
    if (read) StartRead(&batch_);
    if (finish) Finish(grpc::Status::OK);
  }

  Tracker* const tracker_;
  v1::EventBatch batch_;
  v1::BatchAck current_;
  absl::Mutex mu_;
  std::deque<v1::BatchAck> acks_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool refused_ ABSL_GUARDED_BY(mu_) = false;        // a batch was refused before the queue
  uint64_t refused_since_ ABSL_GUARDED_BY(mu_) = 0;  // its sequence
  std::shared_ptr<OrderedStream> order_ = std::make_shared<OrderedStream>();
  bool writing_ ABSL_GUARDED_BY(mu_) = false, write_failed_ ABSL_GUARDED_BY(mu_) = false,
                reads_done_ ABSL_GUARDED_BY(mu_) = false, paused_ ABSL_GUARDED_BY(mu_) = false,
                finished_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;    // a read is outstanding
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // the client went away
};

// A stream refused before it starts (authentication).
class RefusedStream final : public grpc::ServerBidiReactor<v1::EventBatch, v1::BatchAck> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

class TrackerService::WatchReactor final : public grpc::ServerWriteReactor<v1::RunStatus> {
 public:
  WatchReactor(TrackerService* service, Tracker* tracker, std::string run)
      : service_(service), tracker_(tracker), run_(std::move(run)) {}

  const std::string& run() const { return run_; }

  // Called once after construction.
  void Begin() {
    if (!tracker_->Find(run_)) {
      End(grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("run '", run_, "' does not exist")));
      return;
    }
    subscription_ = tracker_->Subscribe(run_, [this] { Changed(); });
    Changed();  // the status as it is now
  }

  // The run changed (on the writer's or the forecaster's thread): only a wake-up is posted
  // (at most one at a time); the status is built on the watch pump (Pump).
  void Changed() {
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || finish_wanted_ || posted_) return;
      posted_ = true;
    }
    service_->Wake(this);
  }

  // On the watch pump, with the service's watches_mu_ held (so OnDone waits): send the
  // latest status, or mark it pending behind the write in flight.
  void Pump(absl::StatusOr<v1::RunStatus> status) {
    absl::MutexLock lock(&mu_);
    posted_ = false;
    if (finished_ || finish_wanted_) return;
    if (writing_) {
      pending_ = true;
      return;
    }
    pending_ = false;
    SendLocked(std::move(status));
  }

  void OnWriteDone(bool ok) override {
    grpc::Status finish;
    bool finishing = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (finish_wanted_ && !finished_) {
        finished_ = finishing = true;
        finish = finish_status_;
      } else {
        if (!ok || finished_ || !pending_ || posted_) return;
        pending_ = false;
        posted_ = true;
      }
    }
    if (finishing) {
      Finish(finish);
      return;
    }
    service_->Wake(this);  // the change that came during the write, built on the pump
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  // Finishes the call now, or after the write in flight: never a write after Finish.
  void End(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || finish_wanted_) return;
      if (writing_) {
        finish_wanted_ = true;
        finish_status_ = status;
        return;
      }
      finished_ = true;
    }
    Finish(status);
  }

  void OnDone() override {
    if (subscription_) tracker_->Unsubscribe(subscription_);
    service_->Unregister(this);
    delete this;
  }

 private:
  // Under mu_: StartWrite never races with End (gRPC does not run OnWriteDone inline).
  void SendLocked(absl::StatusOr<v1::RunStatus> status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!status.ok()) {
      finished_ = true;
      // Finish outside the lock is not needed: it does not re-enter this reactor inline.
      Finish(ToGrpc(status.status()));
      return;
    }
    status_ = std::move(*status);
    writing_ = true;
    StartWrite(&status_);
  }

  TrackerService* const service_;
  Tracker* const tracker_;
  const std::string run_;
  uint64_t subscription_ = 0;
  v1::RunStatus status_;
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false, pending_ ABSL_GUARDED_BY(mu_) = false,
                finished_ ABSL_GUARDED_BY(mu_) = false, finish_wanted_ ABSL_GUARDED_BY(mu_) = false,
                posted_ ABSL_GUARDED_BY(mu_) = false;  // a Pump is posted and has not run
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

absl::Status TrackerService::Authorize(absl::Status checked, absl::string_view rpc, const std::string& run,
                                       uint32_t events) {
  if (!checked.ok()) {
    tracker_->NoteRefused(run, events, checked.code(),
                          absl::StrCat(absl::StatusCodeToString(checked.code()), " on ", rpc), checked.message());
  }
  return checked;
}

grpc::ServerUnaryReactor* TrackerService::CreateRun(grpc::CallbackServerContext* context,
                                                    const v1::CreateRunRequest* request,
                                                    v1::CreateRunResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckWrite(*context), "CreateRun",
                                      request->run().empty() ? request->plan().name() : request->run(), 0);
      !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  const std::string run = request->run().empty() ? request->plan().name() : request->run();
  absl::Status st = tracker_->SubmitCreateRun(run, PlanInputFromProto(request->plan()), [=](CreateResult r) {
    if (!r.status.ok()) {
      reactor->Finish(ToGrpc(r.status));
      return;
    }
    response->set_run(run);
    response->set_created(r.created);
    response->set_plan_revision(r.plan->revision);
    *response->mutable_report() = convert::ReportToProto(r.plan->report);
    reactor->Finish(grpc::Status::OK);
  });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::UpdatePlan(grpc::CallbackServerContext* context,
                                                     const v1::UpdatePlanRequest* request,
                                                     v1::UpdatePlanResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckWrite(*context), "UpdatePlan", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  absl::Status st =
      tracker_->SubmitUpdatePlan(request->run(), PlanInputFromProto(request->plan()), [=](CreateResult r) {
        if (!r.status.ok()) {
          reactor->Finish(ToGrpc(r.status));
          return;
        }
        response->set_plan_revision(r.plan->revision);
        *response->mutable_report() = convert::ReportToProto(r.plan->report);
        reactor->Finish(grpc::Status::OK);
      });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerBidiReactor<v1::EventBatch, v1::BatchAck>* TrackerService::ReportEvents(
    grpc::CallbackServerContext* context) {
  if (absl::Status denied = Authorize(auth_.CheckWrite(*context), "ReportEvents", std::string(), 0); !denied.ok()) {
    return new RefusedStream(ToGrpc(denied));
  }
  return new EventsReactor(tracker_);
}

grpc::ServerUnaryReactor* TrackerService::ReportBatch(grpc::CallbackServerContext* context,
                                                      const v1::EventBatch* request, v1::BatchAck* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckWrite(*context), "ReportBatch",
                                      request->events().empty() ? std::string() : request->events(0).run(),
                                      static_cast<uint32_t>(request->events_size()));
      !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  const uint64_t sequence = request->sequence();
  std::vector<IngestEvent> events = IngestEventsFromProto(request->events());
  absl::Status st = tracker_->SubmitEvents(std::move(events), [=](BatchResult r) {
    if (!r.status.ok()) {
      reactor->Finish(ToGrpc(r.status));
      return;
    }
    BatchAckToProto(sequence, r, *response);
    reactor->Finish(grpc::Status::OK);
  });
  if (!st.ok()) {
    if (const size_t limit = BatchLimitOf(st); limit > 0) {
      context->AddTrailingMetadata(kBatchLimitMetadata, absl::StrCat(limit));
    }
    reactor->Finish(ToGrpc(st));
  }
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::GetStatus(grpc::CallbackServerContext* context,
                                                    const v1::GetStatusRequest* request, v1::RunStatus* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "GetStatus", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  absl::StatusOr<RunStatus> status = tracker_->Status(request->run());
  if (status.ok()) *response = RunStatusToProto(*status);
  if (!status.ok() || (!request->has_from() && !request->has_to())) {
    reactor->Finish(ToGrpc(status.status()));
    return reactor;
  }
  // An interval: the run's log, read by the writer (SQLite's one owner). The completion runs
  // on the writer thread, which must not block: the fold of the whole log (a second or so for
  // a run of a million events) runs on a thread of its own, on copies, and finishes the call.
  const v1::GetStatusRequest query = *request;
  absl::Status st = tracker_->SubmitRunRead(
      request->run(),
      [=](absl::StatusOr<RunInfo> info) {
        if (!info.ok()) {
          reactor->Finish(ToGrpc(info.status()));
          return;
        }
        std::thread([=, info = std::move(info)]() mutable {
          reactor->Finish(ToGrpc(IntervalStatus(query, std::move(info->events), info->settings, *response)));
        }).detach();
      },
      /*with_events=*/true);
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerWriteReactor<v1::RunStatus>* TrackerService::WatchStatus(grpc::CallbackServerContext* context,
                                                                     const v1::GetStatusRequest* request) {
  auto* w = new WatchReactor(this, tracker_, request->run());
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "WatchStatus", request->run(), 0); !denied.ok()) {
    {
      absl::MutexLock lock(&watches_mu_);
      watches_.insert(w);  // OnDone unregisters it
    }
    w->End(ToGrpc(denied));
    return w;
  }
  {
    absl::MutexLock lock(&watches_mu_);
    if (ending_) {
      w->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "flightpland is shutting down"));
      watches_.insert(w);  // OnDone unregisters it
      return w;
    }
    watches_.insert(w);
  }
  w->Begin();
  return w;
}

grpc::ServerUnaryReactor* TrackerService::GetHistory(grpc::CallbackServerContext* context,
                                                     const v1::GetHistoryRequest* request,
                                                     v1::ForecastHistory* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "GetHistory", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  // SQLite belongs to the writer thread: the read joins its queue and finishes from there.
  const std::string run = request->run();
  absl::Status st = tracker_->SubmitHistoryRead(run, [=, this](HistoryResult points) {
    if (!points.ok()) {
      reactor->Finish(ToGrpc(points.status()));
      return;
    }
    const std::shared_ptr<const RunView> view = tracker_->Find(run);
    *response = HistoryToProto(run, *points, view ? &view->state : nullptr);
    reactor->Finish(grpc::Status::OK);
  });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::WhatIf(grpc::CallbackServerContext* context, const v1::WhatIfRequest* request,
                                                 v1::WhatIfResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "WhatIf", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  // Its simulations take tens of milliseconds: off the callback thread, on the what-if
  // workers (the request and response live until Finish).
  whatif_.Post([this, reactor, request, response] {
    absl::StatusOr<WhatIfQuery> query = WhatIfQueryFromProto(*request);
    absl::StatusOr<WhatIfAnswer> out = query.ok() ? tracker_->WhatIf(*query) : query.status();
    if (out.ok()) *response = WhatIfAnswerToProto(*out);
    reactor->Finish(ToGrpc(out.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::GetPlan(grpc::CallbackServerContext* context,
                                                  const v1::GetPlanRequest* request, v1::PlanRevision* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "GetPlan", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  const uint32_t wanted = request->revision();
  const std::string run = request->run();
  absl::Status st = tracker_->SubmitRunRead(run, [=](absl::StatusOr<RunInfo> info) {
    if (!info.ok()) {
      reactor->Finish(ToGrpc(info.status()));
      return;
    }
    for (size_t i = info->plans.size(); i-- > 0;) {
      if (wanted != 0 && info->plans[i]->revision != wanted) continue;
      RevisionToProto(*info, i, *response);
      reactor->Finish(grpc::Status::OK);
      return;
    }
    reactor->Finish(grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        absl::StrCat("run ", run, " has no plan revision ", wanted, " (it has ", info->plans.size(), ")")));
  });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::GetRun(grpc::CallbackServerContext* context, const v1::GetRunRequest* request,
                                                 v1::RunInfo* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "GetRun", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  absl::Status st = tracker_->SubmitRunRead(request->run(), [=](absl::StatusOr<RunInfo> info) {
    if (!info.ok()) {
      reactor->Finish(ToGrpc(info.status()));
      return;
    }
    *response = RunInfoToProto(*info);
    reactor->Finish(grpc::Status::OK);
  });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::RetractEvents(grpc::CallbackServerContext* context,
                                                        const v1::RetractRequest* request,
                                                        v1::RetractResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckWrite(*context), "RetractEvents", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  RetractSpec spec = RetractSpecFromProto(*request);
  const std::string run = request->run();
  absl::Status st = tracker_->SubmitRetract(run, std::move(spec), [=](RetractResult r) {
    if (!r.status.ok()) {
      reactor->Finish(ToGrpc(r.status));
      return;
    }
    RetractResultToProto(run, r, *response);
    reactor->Finish(grpc::Status::OK);
  });
  if (!st.ok()) reactor->Finish(ToGrpc(st));
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::ListRuns(grpc::CallbackServerContext* context, const v1::ListRunsRequest*,
                                                   v1::ListRunsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "ListRuns", std::string(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  for (const std::shared_ptr<const RunView>& view : tracker_->List()) {
    *response->add_runs() = RunSummaryToProto(*view);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::ListNodes(grpc::CallbackServerContext* context,
                                                    const v1::ListNodesRequest* request, v1::NodeLedger* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status denied = Authorize(auth_.CheckRead(*context), "ListNodes", request->run(), 0); !denied.ok()) {
    reactor->Finish(ToGrpc(denied));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<const forecast::NodeLedger>> ledger = tracker_->Nodes(request->run());
  if (ledger.ok()) *response = NodeLedgerToProto(**ledger, static_cast<uint32_t>(tracker_->List().size()));
  reactor->Finish(ToGrpc(ledger.status()));
  return reactor;
}

void TrackerService::Unregister(WatchReactor* w) {
  absl::MutexLock lock(&watches_mu_);
  watches_.erase(w);
}

// On the wall clock a status moves with "now": one built this recently serves every
// watcher of the run (the burst of a commit reaches them all within it).
constexpr std::chrono::milliseconds kSharedStatusFor(100);

absl::StatusOr<v1::RunStatus> TrackerService::WatchedStatus(const std::string& run) {
  std::shared_ptr<const RunView> view = tracker_->Find(run);
  if (!view) {
    shared_.erase(run);
    return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  }
  std::shared_ptr<const forecast::Simulation> sim = tracker_->LatestSimulation(run);
  const auto now = std::chrono::steady_clock::now();
  SharedStatus& s = shared_[run];
  if (s.view != view || s.sim != sim || (!tracker_->options().events_clock && now - s.built >= kSharedStatusFor)) {
    s.view = std::move(view);
    s.sim = std::move(sim);
    s.built = now;
    s.status = RunStatusToProto(tracker_->StatusOf(*s.view));
  }
  return s.status;
}

void TrackerService::Wake(WatchReactor* w) {
  pump_.Post([this, w] {
    // A reactor that has gone (OnDone unregisters it first) is not touched.
    absl::MutexLock lock(&watches_mu_);
    if (watches_.count(w)) w->Pump(WatchedStatus(w->run()));
  });
}

void TrackerService::EndWatches() {
  // Under the lock: a reactor's OnDone (which deletes it) unregisters first, so every
  // pointer in watches_ is alive here. Finish does not run OnDone inline.
  absl::MutexLock lock(&watches_mu_);
  ending_ = true;
  for (WatchReactor* w : watches_) {
    w->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "flightpland is shutting down"));
  }
}

}  // namespace flightplan::daemon
