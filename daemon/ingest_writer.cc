#include "daemon/ingest_writer.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/stored.h"
#include "daemon/ingest_writer_internal.h"
#include "planner/plan_engine.h"

namespace flightplan::daemon {

absl::Status ValidateRunName(const std::string& run) {
  if (run.empty() || run.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("run name '", run.substr(0, 40), "' must be 1 to 128 characters"));
  }
  if (run == "." || run == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("run name '", run, "' is a path segment (its page could not be reached)"));
  }
  for (char c : run) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("run name '", run.substr(0, 40), "' may only hold A-Z, a-z, 0-9, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

size_t BatchLimitOf(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return 0;
  const auto payload = status.GetPayload(kBatchLimitPayload);
  size_t limit = 0;
  return payload && absl::SimpleAtoi(std::string(*payload), &limit) ? limit : 0;
}

namespace {

absl::Status OverLimit(const std::string& message, size_t limit) {
  absl::Status st = absl::InvalidArgumentError(message);
  st.SetPayload(kBatchLimitPayload, absl::Cord(absl::StrCat(limit)));
  return st;
}

}  // namespace

namespace ingest {
std::shared_ptr<const RunPlan> MakePlan(uint32_t revision, PlanInput plan) {
  auto p = std::make_shared<RunPlan>();
  p->revision = revision;
  p->report = planner::ComputePlan(plan.spec);
  p->prior = forecast::PriorFromPlan(plan.spec, p->report);
  p->spec = std::move(plan.spec);
  p->encoded = std::move(plan.encoded);
  return p;
}

std::shared_ptr<RunPlan> Revised(const RunPlan& previous, const RunPlan& next, std::optional<absl::Time> effective) {
  auto plan = std::make_shared<RunPlan>(next);
  if (!effective) return plan;
  plan->prior.revised_at = effective;
  const double before = previous.prior.plan_tokens_per_second;
  plan->prior.revision_rate_scale = before > 0 ? next.prior.plan_tokens_per_second / before : 1;
  return plan;
}

void UsePlan(RunView& run, std::shared_ptr<const RunPlan> plan) {
  run.state.settings = forecast::FoldSettingsFor(plan->prior, run.state.settings.max_causes);
  run.plan = std::move(plan);
}

absl::Status Annotate(const absl::Status& st, size_t index, const std::string& run, const std::string& id) {
  absl::Status out(st.code(), absl::StrCat("events[", index, "] (run ", run,
                                           id.empty() ? "" : absl::StrCat(", id ", id), "): ", st.message()));
  out.SetPayload(IngestWriter::kRefusedRunPayload, absl::Cord(run));  // whose refusal it is, for the count and the log
  return out;
}

}  // namespace ingest

using ingest::Annotate;
using ingest::MakePlan;
using ingest::Revised;
using ingest::UsePlan;

IngestWriter::IngestWriter(std::unique_ptr<storage::RunStore> store, const TrackerOptions& options, Clock* clock,
                           IngestMetrics* metrics, RunBoard* board, ForecastScheduler* forecasts)
    : options_(options),
      clock_(clock),
      metrics_(metrics),
      store_(std::move(store)),
      board_(board),
      forecasts_(forecasts) {}

IngestWriter::~IngestWriter() { Stop(); }

void IngestWriter::Start() {
  writer_ = std::thread([this] { WriterLoop(); });
}

void IngestWriter::Stop() {
  {
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  queue_cv_.SignalAll();
  if (writer_.joinable()) writer_.join();
}

absl::Status IngestWriter::Recover() {
  std::map<int64_t, std::unique_ptr<RunView>> by_id;
  std::vector<RunView*> revised;  // runs whose plan was revised: its prior needs the one before
  absl::Status parse_error;
  absl::Status st = store_->ForEachRun([&](const storage::StoredRun& stored) {
    auto view = std::make_unique<RunView>();
    view->id = stored.id;
    view->name = stored.name;
    absl::StatusOr<planner::PlanSpec> spec =
        convert::DecodeStoredPlan(stored.plan, absl::StrCat("run ", stored.name, ": stored plan"));
    if (!spec.ok()) {
      parse_error = spec.status();
      spec = planner::PlanSpec{};
    }
    view->plan = MakePlan(stored.plan_revision, PlanInput{std::move(*spec), stored.plan});
    if (stored.plan_revision > 1) revised.push_back(view.get());
    if (!stored.snapshot.empty()) {
      absl::StatusOr<forecast::RunState> state =
          convert::DecodeStoredState(stored.snapshot, absl::StrCat("run ", stored.name, ": stored snapshot"));
      if (state.ok()) {
        view->state = std::move(*state);
      } else {
        parse_error = state.status();
      }
      view->last_seq = stored.snapshot_seq;
    }
    by_id[stored.id] = std::move(view);
  });
  if (!st.ok()) return st;
  if (!parse_error.ok()) return parse_error;
  for (RunView* view : revised) {
    std::vector<storage::StoredPlan> plans;
    st = store_->ForEachPlan(view->id, [&](const storage::StoredPlan& p) { plans.push_back(p); });
    if (!st.ok()) return st;
    if (plans.size() < 2) continue;
    const storage::StoredPlan& before = plans[plans.size() - 2];
    absl::StatusOr<planner::PlanSpec> previous = convert::DecodeStoredPlan(
        before.plan, absl::StrCat("run ", view->name, ": stored plan revision ", before.revision));
    if (!previous.ok()) return previous.status();
    const uint32_t revision = view->plan->revision;
    std::shared_ptr<RunPlan> plan = Revised(*MakePlan(before.revision, PlanInput{std::move(*previous), before.plan}),
                                            *view->plan, plans.back().effective);
    plan->revision = revision;
    view->plan = plan;
  }
  // The events after the snapshots fold under each run's plan.
  for (auto& [id, view] : by_id) UsePlan(*view, view->plan);
  absl::StatusOr<int64_t> watermark = store_->SnapshotWatermark();
  if (!watermark.ok()) return watermark.status();
  last_seq_ = *watermark;
  st =
      store_->ForEachEventAfter(*watermark, [&](int64_t seq, int64_t run_id, const std::string& bytes) -> absl::Status {
        last_seq_ = std::max(last_seq_, seq);
        auto it = by_id.find(run_id);
        if (it == by_id.end() || seq <= it->second->last_seq) return absl::OkStatus();
        absl::StatusOr<forecast::Event> event = convert::DecodeStoredEvent(bytes, absl::StrCat("stored event ", seq));
        if (!event.ok()) return event.status();
        RunView& view = *it->second;
        // Stored events were accepted in this order, so they apply again; if the accounting
        // rules changed since, an event that no longer applies is skipped, not fatal.
        if (absl::Status applied = forecast::ApplyEvent(view.state, *event); applied.ok()) {
          view.last_seq = seq;
          ++view.events_since_snapshot;
        }
        return absl::OkStatus();
      });
  if (!st.ok()) return st;
  std::vector<std::shared_ptr<const RunView>> recovered;
  for (auto& [id, view] : by_id) recovered.push_back(std::shared_ptr<const RunView>(std::move(view)));
  board_->Publish(std::move(recovered));
  if (metrics_) {
    metrics_->SetRuns(board_->Count());
    metrics_->SetDatabaseBytes(static_cast<double>(store_->DatabaseBytes()));
  }
  return absl::OkStatus();
}

absl::Status IngestWriter::Enqueue(std::unique_ptr<Request> request) {
  size_t depth = 0;
  {
    absl::MutexLock lock(&queue_mu_);
    if (stopping_) return absl::UnavailableError("flightpland is shutting down");
    const bool urgent = request->kind != Request::Kind::kEvents || request->stream == nullptr;
    std::deque<std::unique_ptr<Request>>& lane = urgent ? urgent_ : queue_;
    if (lane.size() >= options_.max_queue_requests) {
      return absl::ResourceExhaustedError(absl::StrCat("ingest queue is full (", options_.max_queue_requests, " ",
                                                       urgent ? "single" : "stream",
                                                       " requests waiting); retry with backoff"));
    }
    lane.push_back(std::move(request));
    depth = urgent_.size() + queue_.size();
  }
  queue_cv_.Signal();
  if (metrics_) metrics_->SetQueueDepth(depth);
  return absl::OkStatus();
}

absl::Status IngestWriter::SubmitEvents(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                                        std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  const uint32_t count = static_cast<uint32_t>(events.size());
  const bool oversized = events.size() > options_.max_batch_events;
  const std::string first_run = events.empty() ? "" : events.front().run;
  absl::Status st = Submit(std::move(events), std::move(done), std::move(stream), sequence);
  // Refusals before the queue are counted here; the writer counts its own.
  if (!st.ok()) {
    if (oversized || st.code() == absl::StatusCode::kResourceExhausted || st.code() == absl::StatusCode::kUnavailable) {
      if (metrics_) metrics_->CountRetried(count, st.code());  // the client splits, or waits and resends
    } else {
      if (metrics_) metrics_->CountBatch(0, 0);
      NoteRefusedBatch(st, first_run, count);
    }
  }
  return st;
}

absl::Status IngestWriter::Submit(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                                  std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  if (events.size() > options_.max_batch_events) {
    // Its own code: the queue's RESOURCE_EXHAUSTED says "wait", this says "split", and the
    // payload says by how much (kBatchLimitPayload).
    return OverLimit(
        absl::StrCat("batch of ", events.size(), " events is over ", kBatchLimitPrefix, options_.max_batch_events),
        options_.max_batch_events);
  }
  const absl::Time latest_allowed =
      options_.events_clock ? absl::InfiniteFuture() : clock_->Now() + options_.max_clock_skew;
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kEvents;
  request->items.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    absl::StatusOr<forecast::Event>& e = events[i].event;
    if (!e.ok()) return Annotate(e.status(), i, events[i].run, events[i].id);
    if (absl::Status st = forecast::ValidateEvent(*e); !st.ok()) {
      return Annotate(st, i, events[i].run, events[i].id);
    }
    if (absl::Status st = ValidateRunName(events[i].run); !st.ok()) return Annotate(st, i, "?", events[i].id);
    if (e->time > latest_allowed) {
      return Annotate(absl::InvalidArgumentError(absl::StrCat(
                          "time ", forecast::FormatUtc(e->time), " is ", absl::FormatDuration(e->time - clock_->Now()),
                          " ahead of flightpland's clock (", forecast::FormatUtc(clock_->Now()),
                          "); --max-clock-skew allows ", absl::FormatDuration(options_.max_clock_skew),
                          ". Fix the host's clock, or replay a recorded run into a daemon with --clock events")),
                      i, events[i].run, events[i].id);
    }
    if (e->kind == forecast::EventKind::kExcluded && e->until > latest_allowed) {
      return Annotate(absl::InvalidArgumentError(absl::StrCat(
                          "excluded.until ", forecast::FormatUtc(e->until),
                          " is in the future (flightpland's clock: ", forecast::FormatUtc(clock_->Now()),
                          "); a window is excluded once it has passed: exclude up to now, and again later")),
                      i, events[i].run, events[i].id);
    }
    Request::Item item;
    item.index = i;
    item.run = std::move(events[i].run);
    item.event = std::move(*e);
    item.bytes = std::move(events[i].encoded);
    request->items.push_back(std::move(item));
  }
  // Out-of-order delivery inside a batch is sorted by time (ties: by attempt, then kind).
  std::stable_sort(request->items.begin(), request->items.end(), [](const Request::Item& a, const Request::Item& b) {
    return forecast::EventBefore(a.event, b.event);
  });
  request->events_done = std::move(done);
  request->stream = std::move(stream);
  request->sequence = sequence;
  return Enqueue(std::move(request));
}

absl::Status IngestWriter::SubmitCreateRun(std::string run, PlanInput plan, std::function<void(CreateResult)> done) {
  if (run.empty()) run = plan.spec.name;
  return SubmitPlan(false, std::move(run), std::move(plan), std::move(done));
}

absl::Status IngestWriter::SubmitUpdatePlan(std::string run, PlanInput plan, std::function<void(CreateResult)> done) {
  return SubmitPlan(true, std::move(run), std::move(plan), std::move(done));
}

absl::Status IngestWriter::SubmitPlan(bool update, std::string run, PlanInput plan,
                                      std::function<void(CreateResult)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  auto request = std::make_unique<Request>();
  request->kind = update ? Request::Kind::kUpdate : Request::Kind::kCreate;
  request->run = std::move(run);
  request->plan = MakePlan(1, std::move(plan));  // an update's revision is set by the writer
  if (request->plan->report.HasError()) {
    std::string findings;
    for (const planner::Finding& f : request->plan->report.findings) {
      if (f.severity == planner::Severity::kError) absl::StrAppend(&findings, "; ", f.code, ": ", f.message);
    }
    return absl::InvalidArgumentError(absl::StrCat("the plan fails its own checks", findings));
  }
  request->plan_done = std::move(done);
  return Enqueue(std::move(request));
}

absl::Status IngestWriter::SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (!board_->Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kHistory;
  request->run = std::move(run);
  request->history_done = std::move(done);
  return Enqueue(std::move(request));
}

absl::Status IngestWriter::SubmitRunRead(std::string run, std::function<void(absl::StatusOr<RunInfo>)> done,
                                         bool with_events) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (!board_->Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kRunInfo;
  request->with_events = with_events;
  request->run = std::move(run);
  request->info_done = std::move(done);
  return Enqueue(std::move(request));
}

absl::Status IngestWriter::SubmitRetract(std::string run, RetractSpec spec, std::function<void(RetractResult)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (spec.ids.empty() && !spec.after) {
    return absl::InvalidArgumentError("say what to retract: ids, or a time after which every event goes");
  }
  if (spec.ids.size() > options_.max_batch_events) {
    return OverLimit(
        absl::StrCat("retract names ", spec.ids.size(), " ids; ", kBatchLimitPrefix, options_.max_batch_events),
        options_.max_batch_events);
  }
  if (spec.reason.size() > 4096) return absl::InvalidArgumentError("reason is longer than 4096 bytes");
  if (!board_->Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kRetract;
  request->run = std::move(run);
  request->retract = std::move(spec);
  request->retract_done = std::move(done);
  return Enqueue(std::move(request));
}

void IngestWriter::OfferForecastPoint(int64_t run_id, uint64_t version, const storage::ForecastPoint& point) {
  if (point.events == 0) return;  // never recorded: no need to wake the writer
  {
    absl::MutexLock lock(&queue_mu_);
    if (stopping_) return;
    if (pending_points_.size() >= std::max<size_t>(1024, 2 * options_.max_runs)) return;
    pending_points_.push_back(PendingPoint{run_id, version, point});
  }
  queue_cv_.Signal();
}

size_t IngestWriter::QueueDepth() const {
  absl::MutexLock lock(&queue_mu_);
  return urgent_.size() + queue_.size();
}

void IngestWriter::WriterLoop() {
  while (true) {
    std::vector<std::unique_ptr<Request>> group;
    std::vector<PendingPoint> points;
    size_t depth = 0;
    {
      absl::MutexLock lock(&queue_mu_);
      while (!stopping_ && urgent_.empty() && queue_.empty() && pending_points_.empty()) queue_cv_.Wait(&queue_mu_);
      if (urgent_.empty() && queue_.empty() && pending_points_.empty()) break;  // stopping, drained
      points.swap(pending_points_);
      // Single requests first, up to the group's limits; then stream batches, at least one
      // whenever any wait, so that a steady stream of single reports cannot starve them.
      size_t events = 0;
      for (auto* lane : {&urgent_, &queue_}) {
        const size_t at_least = lane == &queue_ ? group.size() + 1 : 0;
        while (!lane->empty() && (group.size() < at_least || (group.size() < options_.max_group_requests &&
                                                              (group.empty() || events < options_.max_group_events)))) {
          events += lane->front()->items.size();
          group.push_back(std::move(lane->front()));
          lane->pop_front();
        }
      }
      depth = urgent_.size() + queue_.size();
    }
    if (metrics_) metrics_->SetQueueDepth(depth);
    ProcessGroup(group, std::move(points));
  }
  // Shutting down: snapshot every changed run so the next start folds nothing.
  Group final_group;
  if (store_->Begin().ok()) {
    if (SnapshotRuns(final_group).ok() && store_->Commit().ok()) {
      Publish(final_group);
    } else {
      store_->Rollback();
    }
  }
}

absl::Status IngestWriter::SnapshotRuns(Group& group) {
  for (const std::shared_ptr<const RunView>& base : board_->List()) {
    if (!group.working.count(base->name) && base->events_since_snapshot > 0) {
      group.working.emplace(base->name, std::make_unique<RunView>(*base));
    }
  }
  for (auto& [name, run] : group.working) {
    if (run->events_since_snapshot == 0) continue;
    if (absl::Status st = store_->SaveSnapshot(run->id, run->last_seq, convert::EncodeStoredState(run->state));
        !st.ok()) {
      return st;
    }
    run->events_since_snapshot = 0;
  }
  events_since_round_ = 0;
  return store_->SetSnapshotWatermark(last_seq_);
}

absl::Status IngestWriter::ProcessRequests(std::vector<std::unique_ptr<Request>>& requests, Group& group,
                                           absl::Status& storage_cause) {
  for (std::unique_ptr<Request>& r : requests) {
    // Reads, answered after the commit.
    if (r->kind == Request::Kind::kHistory || r->kind == Request::Kind::kRunInfo) continue;
    if (absl::Status st = store_->Savepoint(); !st.ok()) return st;
    absl::Status st;
    if (r->kind == Request::Kind::kEvents) {
      st = ProcessEvents(*r, group, r->batch_result);
      r->batch_result.status = st;
      if (st.ok()) events_since_round_ += r->batch_result.accepted;
    } else {
      // A plan or retract request touches one run; undo it by restoring that copy on failure.
      std::unique_ptr<RunView> before;
      if (auto it = group.working.find(r->run); it != group.working.end()) {
        before = std::make_unique<RunView>(*it->second);
      }
      const bool refolded = group.refolded.count(r->run) > 0;
      if (r->kind == Request::Kind::kRetract) {
        st = ProcessRetract(*r, group, r->retract_result);
        r->retract_result.status = st;
      } else {
        st = ProcessPlan(*r, group, r->create_result);
        r->create_result.status = st;
      }
      if (!st.ok()) {
        if (before) {
          group.working[r->run] = std::move(before);
        } else {
          group.working.erase(r->run);
        }
        if (!refolded) group.refolded.erase(r->run);
      }
    }
    if (!st.ok() && st.code() == absl::StatusCode::kUnavailable && storage_cause.ok()) {
      storage_cause = st;
    }
    if (st.ok()) {
      // A live report (a unary batch from a training loop) or a new plan: its run's forecast
      // goes ahead of those of replays and backfills. Urgency comes from ingest, never from
      // a read.
      if (r->kind != Request::Kind::kEvents) {
        group.live.insert(r->run);
      } else if (r->stream == nullptr) {
        for (const Request::Item& item : r->items) group.live.insert(item.run);
      }
      if (absl::Status released = store_->ReleaseSavepoint(); !released.ok()) return released;
    } else if (absl::Status undone = store_->RollbackToSavepoint(); !undone.ok()) {
      return undone;
    }
    // A storage error (disk full, I/O) may have ended the whole transaction: then
    // nothing of the group may be acknowledged.
    if (!store_->InTransaction()) return absl::UnavailableError("the storage transaction was aborted");
  }
  return absl::OkStatus();
}

absl::Status IngestWriter::RecordForecastPoints(const std::vector<PendingPoint>& points, Group& group) {
  const HistoryOptions& policy = options_.history;
  for (const PendingPoint& p : points) {
    if (auto r = retracted_version_.find(p.run_id); r != retracted_version_.end() && p.version < r->second) {
      continue;  // simulated with events since retracted
    }
    auto tail = group.history.find(p.run_id);
    if (tail == group.history.end()) {
      auto stored = history_tails_.find(p.run_id);
      if (stored == history_tails_.end()) {
        // Read before this group writes any point of the run: what is committed.
        absl::StatusOr<storage::ForecastHistoryTail> loaded = store_->LastForecastPoint(p.run_id);
        if (!loaded.ok()) return loaded.status();
        stored = history_tails_.emplace(p.run_id, *std::move(loaded)).first;
      }
      tail = group.history.emplace(p.run_id, stored->second).first;
    }
    if (!ShouldRecord(tail->second.last, p.point, policy)) continue;
    if (absl::Status st = store_->InsertForecastPoint(p.run_id, p.point); !st.ok()) {
      // A point is not worth a group: drop it, unless the transaction went with it.
      if (!store_->InTransaction()) return st;
      continue;
    }
    const bool replaced = tail->second.last && tail->second.last->as_of == p.point.as_of;
    tail->second.last = p.point;
    if (!replaced && ++tail->second.points > policy.max_points) {
      absl::StatusOr<int64_t> left = store_->ThinForecastHistory(p.run_id, policy.max_points);
      if (!left.ok()) return left.status();
      tail->second.points = *left;
    }
  }
  return absl::OkStatus();
}

void IngestWriter::ProcessGroup(std::vector<std::unique_ptr<Request>>& requests, std::vector<PendingPoint> points) {
  const auto started = std::chrono::steady_clock::now();
  const int64_t last_seq_before = last_seq_;
  Group group;
  absl::Status storage_cause;  // the first storage error of a request: the root cause
  absl::Status group_status = store_->Begin();
  if (group_status.ok()) group_status = ProcessRequests(requests, group, storage_cause);
  if (group_status.ok()) group_status = RecordForecastPoints(points, group);
  if (group_status.ok() && events_since_round_ >= options_.snapshot_every_events) {
    group_status = SnapshotRuns(group);
  }
  for (const std::string& name : group.refolded) {
    // A run folded again is snapshotted with everything it holds, so that recovery, which
    // applies the events after a snapshot in arrival order, never meets a late one.
    if (!group_status.ok()) break;
    auto it = group.working.find(name);
    if (it == group.working.end() || it->second->events_since_snapshot == 0) continue;
    RunView& run = *it->second;
    group_status = store_->SaveSnapshot(run.id, run.last_seq, convert::EncodeStoredState(run.state));
    if (group_status.ok()) run.events_since_snapshot = 0;
  }
  if (group_status.ok()) group_status = store_->Commit();
  if (!group_status.ok()) {
    // Nothing of this group is durable: refuse every request, publish nothing (the
    // history points are dropped).
    store_->Rollback();
    last_seq_ = last_seq_before;
    const absl::Status& cause = storage_cause.ok() ? group_status : storage_cause;
    const absl::Status unavailable =
        absl::UnavailableError(absl::StrCat("storage failed; nothing of this request was stored: ", cause.message()));
    for (std::unique_ptr<Request>& r : requests) {
      r->batch_result = BatchResult{unavailable, 0, 0, {}};
      r->create_result = CreateResult{unavailable, false, nullptr};
      r->retract_result = RetractResult{unavailable, 0, {}};
      if (r->stream && !r->stream->refused) {
        r->stream->refused = true;
        r->stream->first_refused = r->sequence;
      }
    }
  } else {
    for (auto& [run_id, tail] : group.history) history_tails_[run_id] = std::move(tail);
    Publish(group);
  }
  if (metrics_ && !requests.empty()) {  // a group of history points alone is not ingest
    metrics_->ObserveCommit(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  Complete(requests);
}

void IngestWriter::NoteRefused(const std::string& run, uint32_t events, absl::StatusCode code, absl::string_view kind,
                               absl::string_view message) {
  // A name this daemon does not have is the client's word (a typo per event, unbounded):
  // counted without a run label, named in the log.
  if (metrics_) metrics_->CountRejected(board_->Find(run) ? run : "", events, code);
  refusals_.Note(run, kind, events, message);
}

void IngestWriter::NoteRefusedBatch(const absl::Status& st, const std::string& first_run, uint32_t events) {
  const auto named = st.GetPayload(kRefusedRunPayload);
  NoteRefused(named ? std::string(*named) : first_run, events, st.code(), absl::StatusCodeToString(st.code()),
              st.message());
}

void IngestWriter::Complete(std::vector<std::unique_ptr<Request>>& requests) {
  for (std::unique_ptr<Request>& r : requests) {
    switch (r->kind) {
      case Request::Kind::kEvents: {
        const BatchResult& b = r->batch_result;
        if (metrics_) {
          // ABORTED (a stream resends from its first refusal) and UNAVAILABLE (storage
          // away) are resent by the client: not rejected.
          const bool retried =
              b.status.code() == absl::StatusCode::kAborted || b.status.code() == absl::StatusCode::kUnavailable;
          const uint32_t refused = b.status.ok() ? 0 : static_cast<uint32_t>(r->items.size());
          metrics_->CountBatch(b.accepted, b.duplicates);
          if (retried) metrics_->CountRetried(refused, b.status.code());
        }
        if (!b.status.ok() && b.status.code() != absl::StatusCode::kAborted &&
            b.status.code() != absl::StatusCode::kUnavailable) {
          NoteRefusedBatch(b.status, r->items.empty() ? "" : r->items.front().run,
                           static_cast<uint32_t>(r->items.size()));
        }
        r->events_done(b);
        break;
      }
      case Request::Kind::kCreate:
      case Request::Kind::kUpdate:
        r->plan_done(r->create_result);
        break;
      case Request::Kind::kRetract:
        r->retract_done(std::move(r->retract_result));
        break;
      case Request::Kind::kRunInfo: {
        std::shared_ptr<const RunView> view = board_->Find(r->run);
        if (!view) {
          r->info_done(absl::NotFoundError(absl::StrCat("run '", r->run, "' does not exist")));
          break;
        }
        RunInfo info;
        info.run = view->name;
        info.attempt = view->state.attempt;
        info.latest_event = view->state.last_time;
        info.attempts = view->state.attempt_starts;
        absl::Status parse;
        absl::Status st = store_->ForEachPlan(view->id, [&](const storage::StoredPlan& stored) {
          if (stored.revision == view->plan->revision) {
            info.plans.push_back(view->plan);
          } else {
            absl::StatusOr<planner::PlanSpec> spec =
                convert::DecodeStoredPlan(stored.plan, absl::StrCat("plan revision ", stored.revision));
            if (!spec.ok()) {
              parse = spec.status();
              return;
            }
            info.plans.push_back(MakePlan(stored.revision, PlanInput{std::move(*spec), stored.plan}));
          }
          info.plan_created.push_back(stored.created);
          info.plan_effective.push_back(stored.effective);
        });
        if (!st.ok()) st = absl::UnavailableError(absl::StrCat("storage: ", st.message()));
        if (st.ok()) st = parse;
        if (st.ok() && r->with_events) {
          absl::StatusOr<std::vector<forecast::LoggedEvent>> events = LoadRunEvents(view->id, nullptr);
          if (events.ok()) {
            info.events = std::move(*events);
            info.settings = view->state.settings;
          } else {
            st = events.status();
          }
        }
        if (st.ok()) {
          r->info_done(std::move(info));
        } else {
          r->info_done(st);
        }
        break;
      }
      case Request::Kind::kHistory: {
        // Outside any transaction: what is committed, this group included.
        std::shared_ptr<const RunView> view = board_->Find(r->run);
        if (!view) {
          r->history_done(absl::NotFoundError(absl::StrCat("run '", r->run, "' does not exist")));
          break;
        }
        std::vector<storage::ForecastPoint> points;
        absl::Status st =
            store_->ForEachForecastPoint(view->id, [&](const storage::ForecastPoint& p) { points.push_back(p); });
        if (st.ok()) {
          r->history_done(std::move(points));
        } else {
          r->history_done(absl::UnavailableError(absl::StrCat("storage: ", st.message())));
        }
        break;
      }
    }
  }
}

void IngestWriter::Publish(Group& group) {
  if (group.working.empty()) return;
  // The backfill states the group kept go to the forecaster, in order (it thins them past
  // its bound: the history coarser there, never emptied).
  for (auto& [name, view] : group.working) {
    forecasts_->AddBackfill(*view, std::move(view->backfill));
    view->backfill.clear();
  }
  std::vector<std::shared_ptr<const RunView>> views;
  for (auto& [name, view] : group.working) views.push_back(std::shared_ptr<const RunView>(std::move(view)));
  group.working.clear();
  const std::set<std::string> changed = board_->Publish(std::move(views));
  if (metrics_) {
    metrics_->SetRuns(board_->Count());
    metrics_->SetDatabaseBytes(static_cast<double>(store_->DatabaseBytes()));
  }
  for (const std::string& run : changed) forecasts_->MarkDue(run, /*urgent=*/group.live.count(run) > 0);
  board_->Notify(changed);
}

}  // namespace flightplan::daemon
