#include "daemon/tracker.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planner/plan_engine.h"
#include "forecast/whatif.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/event_convert.h"
#include "proto/plan_convert.h"

namespace flightplan::daemon {

struct Tracker::Request {
  enum class Kind { kEvents, kCreate, kUpdate, kHistory, kRunInfo, kRetract };
  Kind kind = Kind::kEvents;

  struct Item {
    size_t index = 0;  // in the request as sent
    std::string run;
    forecast::Event event;
    std::string bytes;  // the serialized flightplan.v1.Event, as stored
  };
  std::vector<Item> items;  // in time order
  std::function<void(BatchResult)> events_done;
  BatchResult batch_result;
  std::shared_ptr<OrderedStream> stream;
  uint64_t sequence = 0;

  std::string run;
  std::shared_ptr<const RunPlan> plan;
  std::function<void(CreateResult)> plan_done;
  CreateResult create_result;

  std::function<void(HistoryResult)> history_done;  // kHistory, for `run`
  std::function<void(absl::StatusOr<RunInfo>)> info_done;  // kRunInfo, for `run`

  RetractSpec retract;  // kRetract, of `run`
  std::function<void(RetractResult)> retract_done;
  RetractResult retract_result;
};

// The runs a group of requests touches, as mutable copies until the commit.
struct Tracker::Group {
  std::map<std::string, std::unique_ptr<RunView>> working;
  // History tails changed by this group, by run id: history_tails_ after the commit.
  std::map<int64_t, storage::ForecastHistoryTail> history;
  // Runs folded again (a late event, a retraction): snapshotted before the commit, so that
  // a restart never folds their later events onto an older order.
  std::set<std::string> refolded;
};

absl::Status ValidateRunName(const std::string& run) {
  if (run.empty() || run.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("run name '", run.substr(0, 40), "' must be 1 to 128 characters"));
  }
  if (run == "." || run == "..") {
    return absl::InvalidArgumentError(absl::StrCat("run name '", run, "' is a path segment (its page could not be reached)"));
  }
  for (char c : run) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run name '", run.substr(0, 40), "' may only hold A-Z, a-z, 0-9, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

namespace {

std::string Deterministic(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::shared_ptr<const RunPlan> MakePlan(uint32_t revision, v1::Plan plan) {
  auto p = std::make_shared<RunPlan>();
  p->revision = revision;
  const planner::PlanSpec spec = PlanFromProto(plan);
  p->report = planner::ComputePlan(spec);
  p->prior = forecast::PriorFromPlan(spec, p->report);
  p->plan = std::move(plan);
  return p;
}

// `next` governs the run's work from `effective` on: the rate the run showed under
// `previous` is scaled by the plans' rates until it shows its own (ForecastPrior). Without
// an effective time (a revision before the run's first event), `next` simply governs.
std::shared_ptr<RunPlan> Revised(const RunPlan& previous, const RunPlan& next,
                                 std::optional<absl::Time> effective) {
  auto plan = std::make_shared<RunPlan>(next);
  if (!effective) return plan;
  plan->prior.revised_at = effective;
  const double before = previous.prior.plan_tokens_per_second;
  plan->prior.revision_rate_scale = before > 0 ? next.prior.plan_tokens_per_second / before : 1;
  return plan;
}

absl::Status Annotate(const absl::Status& st, size_t index, const std::string& run,
                      const std::string& id) {
  return absl::Status(st.code(), absl::StrCat("events[", index, "] (run ", run,
                                              id.empty() ? "" : absl::StrCat(", id ", id), "): ",
                                              st.message()));
}

}  // namespace

Tracker::Tracker(std::unique_ptr<storage::RunStore> store, Clock* clock,
                 exporters::DaemonMetrics* metrics, TrackerOptions options)
    : options_(options), clock_(clock), metrics_(metrics), store_(std::move(store)) {
  ForecastScheduler::Hooks hooks;
  hooks.find = [this](const std::string& run) { return board_->Find(run); };
  hooks.offer_point = [this](int64_t run_id, uint64_t version, const storage::ForecastPoint& point) {
    OfferForecastPoint(run_id, version, point);
  };
  hooks.writer_backlog = [this] { return QueueDepth(); };
  hooks.simulated = [this](const std::string& run) { Notify(run); };
  forecasts_ = std::make_unique<ForecastScheduler>(options_, clock_, std::move(hooks));
  board_ = std::make_unique<RunBoard>(options_, clock_, forecasts_.get());
}

absl::StatusOr<std::unique_ptr<Tracker>> Tracker::Start(std::unique_ptr<storage::RunStore> store,
                                                        Clock* clock,
                                                        exporters::DaemonMetrics* metrics,
                                                        TrackerOptions options) {
  std::unique_ptr<Tracker> t(new Tracker(std::move(store), clock, metrics, options));
  if (absl::Status st = t->Recover(); !st.ok()) return st;
  t->writer_ = std::thread([p = t.get()] { p->WriterLoop(); });
  t->forecasts_->Start();
  for (const auto& view : t->List()) t->forecasts_->MarkDue(view->name);
  return t;
}

Tracker::~Tracker() { Stop(); }

absl::Status Tracker::Recover() {
  std::map<int64_t, std::unique_ptr<RunView>> by_id;
  std::vector<RunView*> revised;  // runs whose plan was revised: its prior needs the one before
  absl::Status parse_error;
  absl::Status st = store_->ForEachRun([&](const storage::StoredRun& stored) {
    auto view = std::make_unique<RunView>();
    view->id = stored.id;
    view->name = stored.name;
    v1::Plan plan;
    if (!plan.ParseFromString(stored.plan)) {
      parse_error = absl::DataLossError(absl::StrCat("run ", stored.name, ": stored plan is unreadable"));
    }
    view->plan = MakePlan(stored.plan_revision, std::move(plan));
    if (stored.plan_revision > 1) revised.push_back(view.get());
    if (!stored.snapshot.empty()) {
      v1::RunStateSnapshot snap;
      if (!snap.ParseFromString(stored.snapshot)) {
        parse_error = absl::DataLossError(absl::StrCat("run ", stored.name, ": stored snapshot is unreadable"));
      }
      view->state = StateFromProto(snap);
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
    v1::Plan previous;
    if (!previous.ParseFromString(before.plan)) {
      return absl::DataLossError(absl::StrCat("run ", view->name, ": stored plan revision ", before.revision,
                                              " is unreadable"));
    }
    const uint32_t revision = view->plan->revision;
    std::shared_ptr<RunPlan> plan =
        Revised(*MakePlan(before.revision, std::move(previous)), *view->plan, plans.back().effective);
    plan->revision = revision;
    view->plan = plan;
  }
  absl::StatusOr<int64_t> watermark = store_->SnapshotWatermark();
  if (!watermark.ok()) return watermark.status();
  last_seq_ = *watermark;
  st = store_->ForEachEventAfter(*watermark, [&](int64_t seq, int64_t run_id,
                                                 const std::string& bytes) -> absl::Status {
    last_seq_ = std::max(last_seq_, seq);
    auto it = by_id.find(run_id);
    if (it == by_id.end() || seq <= it->second->last_seq) return absl::OkStatus();
    v1::Event proto;
    if (!proto.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("stored event ", seq, " is unreadable"));
    }
    absl::StatusOr<forecast::Event> event = EventFromProto(proto);
    if (!event.ok()) return absl::DataLossError(absl::StrCat("stored event ", seq, ": ", event.status().message()));
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

void Tracker::Stop() {
  std::call_once(stopped_, [this] {
    // The forecaster first: its last history points reach the writer before it drains.
    forecasts_->Stop();
    {
      absl::MutexLock lock(&queue_mu_);
      stopping_ = true;
    }
    queue_cv_.SignalAll();
    if (writer_.joinable()) writer_.join();
  });
}

absl::Status Tracker::Enqueue(std::unique_ptr<Request> request) {
  size_t depth = 0;
  {
    absl::MutexLock lock(&queue_mu_);
    if (stopping_) return absl::UnavailableError("flightpland is shutting down");
    const bool urgent = request->kind != Request::Kind::kEvents || request->stream == nullptr;
    std::deque<std::unique_ptr<Request>>& lane = urgent ? urgent_ : queue_;
    if (lane.size() >= options_.max_queue_requests) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "ingest queue is full (", options_.max_queue_requests, " ", urgent ? "single" : "stream",
          " requests waiting); retry with backoff"));
    }
    lane.push_back(std::move(request));
    depth = urgent_.size() + queue_.size();
  }
  queue_cv_.Signal();
  if (metrics_) metrics_->SetQueueDepth(depth);
  return absl::OkStatus();
}

absl::Status Tracker::SubmitEvents(std::vector<v1::Event> events,
                                   std::function<void(BatchResult)> done,
                                   std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  const uint32_t count = static_cast<uint32_t>(events.size());
  const bool oversized = events.size() > options_.max_batch_events;
  absl::Status st = Submit(std::move(events), std::move(done), std::move(stream), sequence);
  // Refusals before the queue are counted here; the writer counts its own.
  if (!st.ok() && metrics_) {
    if (oversized || st.code() == absl::StatusCode::kResourceExhausted ||
        st.code() == absl::StatusCode::kUnavailable) {
      metrics_->CountRetried(count, st.code());  // the client splits, or waits and resends
    } else {
      metrics_->CountBatch(0, 0, count, st.code());
    }
  }
  return st;
}

absl::Status Tracker::Submit(std::vector<v1::Event> events, std::function<void(BatchResult)> done,
                             std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  if (events.size() > options_.max_batch_events) {
    // Its own code: the queue's RESOURCE_EXHAUSTED says "wait", this says "split". The
    // message ends with the limit, for clients to split by (kBatchLimitPrefix).
    return absl::InvalidArgumentError(absl::StrCat("batch of ", events.size(), " events is over ",
                                                   kBatchLimitPrefix, options_.max_batch_events));
  }
  const absl::Time latest_allowed =
      options_.events_clock ? absl::InfiniteFuture() : clock_->Now() + options_.max_clock_skew;
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kEvents;
  request->items.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    absl::StatusOr<forecast::Event> e = EventFromProto(events[i]);
    if (!e.ok()) return Annotate(e.status(), i, events[i].run(), events[i].id());
    if (absl::Status st = forecast::ValidateEvent(*e); !st.ok()) {
      return Annotate(st, i, events[i].run(), events[i].id());
    }
    if (absl::Status st = ValidateRunName(events[i].run()); !st.ok()) return Annotate(st, i, "?", events[i].id());
    if (e->time > latest_allowed) {
      return Annotate(
          absl::InvalidArgumentError(absl::StrCat(
              "time ", forecast::FormatUtc(e->time), " is ", absl::FormatDuration(e->time - clock_->Now()),
              " ahead of flightpland's clock (", forecast::FormatUtc(clock_->Now()), "); --max-clock-skew allows ",
              absl::FormatDuration(options_.max_clock_skew),
              ". Fix the host's clock, or replay a recorded run into a daemon with --clock events")),
          i, events[i].run(), events[i].id());
    }
    Request::Item item;
    item.index = i;
    item.run = events[i].run();
    item.event = std::move(*e);
    item.bytes = Deterministic(events[i]);
    request->items.push_back(std::move(item));
  }
  // Out-of-order delivery inside a batch is sorted by time (ties: by attempt, then kind).
  std::stable_sort(request->items.begin(), request->items.end(),
                   [](const Request::Item& a, const Request::Item& b) {
                     return forecast::EventBefore(a.event, b.event);
                   });
  request->events_done = std::move(done);
  request->stream = std::move(stream);
  request->sequence = sequence;
  return Enqueue(std::move(request));
}

absl::Status Tracker::SubmitCreateRun(std::string run, v1::Plan plan,
                                      std::function<void(CreateResult)> done) {
  if (run.empty()) run = plan.name();
  return SubmitPlan(false, std::move(run), std::move(plan), std::move(done));
}

absl::Status Tracker::SubmitUpdatePlan(std::string run, v1::Plan plan,
                                       std::function<void(CreateResult)> done) {
  return SubmitPlan(true, std::move(run), std::move(plan), std::move(done));
}

absl::Status Tracker::SubmitPlan(bool update, std::string run, v1::Plan plan,
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

absl::Status Tracker::SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (!Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kHistory;
  request->run = std::move(run);
  request->history_done = std::move(done);
  return Enqueue(std::move(request));
}

absl::Status Tracker::SubmitRunRead(std::string run,
                                    std::function<void(absl::StatusOr<RunInfo>)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (!Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kRunInfo;
  request->run = std::move(run);
  request->info_done = std::move(done);
  return Enqueue(std::move(request));
}

absl::Status Tracker::SubmitRetract(std::string run, RetractSpec spec,
                                    std::function<void(RetractResult)> done) {
  if (absl::Status st = ValidateRunName(run); !st.ok()) return st;
  if (spec.ids.empty() && !spec.after) {
    return absl::InvalidArgumentError("say what to retract: ids, or a time after which every event goes");
  }
  if (spec.ids.size() > options_.max_batch_events) {
    return absl::InvalidArgumentError(absl::StrCat("retract names ", spec.ids.size(), " ids; ",
                                                   kBatchLimitPrefix, options_.max_batch_events));
  }
  if (spec.reason.size() > 4096) return absl::InvalidArgumentError("reason is longer than 4096 bytes");
  if (!Find(run)) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto request = std::make_unique<Request>();
  request->kind = Request::Kind::kRetract;
  request->run = std::move(run);
  request->retract = std::move(spec);
  request->retract_done = std::move(done);
  return Enqueue(std::move(request));
}

std::shared_ptr<const RunView> Tracker::Find(const std::string& run) const { return board_->Find(run); }

std::vector<std::shared_ptr<const RunView>> Tracker::List() const { return board_->List(); }

v1::RunStatus Tracker::StatusOf(const RunView& view) const { return board_->StatusOf(view); }

void Tracker::OfferForecastPoint(int64_t run_id, uint64_t version, const storage::ForecastPoint& point) {
  if (point.events == 0) return;  // never recorded: no need to wake the writer
  {
    absl::MutexLock lock(&queue_mu_);
    if (stopping_) return;
    if (pending_points_.size() >= std::max<size_t>(1024, 2 * options_.max_runs)) return;
    pending_points_.push_back(PendingPoint{run_id, version, point});
  }
  queue_cv_.Signal();
}

absl::StatusOr<v1::RunStatus> Tracker::Status(const std::string& run) const {
  std::shared_ptr<const RunView> view = Find(run);
  if (!view) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  return StatusOf(*view);
}

absl::StatusOr<v1::WhatIfResponse> Tracker::WhatIf(const v1::WhatIfRequest& request) const {
  std::shared_ptr<const RunView> view = Find(request.run());
  if (!view) return absl::NotFoundError(absl::StrCat("run '", request.run(), "' does not exist"));
  absl::Time now = options_.events_clock ? view->state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();
  std::optional<absl::Time> deadline;
  if (request.has_deadline()) {
    deadline = TimeFromProto(request.deadline());
    if (*deadline <= now) {
      return absl::InvalidArgumentError(absl::StrCat("deadline ", forecast::FormatUtc(*deadline),
                                                     " is not after the run's now, ", forecast::FormatUtc(now)));
    }
  }
  std::vector<forecast::Variant> variants;
  for (int i = 0; i < request.variants_size(); ++i) {
    const v1::WhatIfVariant& in = request.variants(i);
    forecast::Variant v;
    v.name = in.name();
    if (in.has_gpus()) v.gpus = in.gpus();
    if (in.has_add_gpus()) v.add_gpus = in.add_gpus();
    if (in.has_checkpoint_interval_seconds()) v.checkpoint_interval_seconds = in.checkpoint_interval_seconds();
    if (in.has_async_checkpoint()) v.async_checkpoint = in.async_checkpoint();
    if (in.has_node_mtbf_hours()) v.node_mtbf_hours = in.node_mtbf_hours();
    if (in.has_node_mtbf_factor()) v.node_mtbf_factor = in.node_mtbf_factor();
    if (in.has_restart_seconds()) v.restart_seconds = in.restart_seconds();
    if (in.has_mfu()) v.mfu = in.mfu();
    if (!(v.gpus || v.add_gpus || v.checkpoint_interval_seconds || v.async_checkpoint || v.node_mtbf_hours ||
          v.node_mtbf_factor || v.restart_seconds || v.mfu)) {
      return absl::InvalidArgumentError(absl::StrCat("variants[", i, "] changes nothing"));
    }
    variants.push_back(std::move(v));
  }
  forecast::ForecastOptions options;
  options.draws = options_.forecast_draws;
  const std::vector<forecast::Outcome> outcomes =
      forecast::WhatIf(PlanFromProto(view->plan->plan), view->state, now, variants, deadline, options);
  v1::WhatIfResponse out;
  out.set_run(view->name);
  *out.mutable_as_of() = TimeToProto(now);
  out.set_budget_seconds(view->plan->report.failures.budget_seconds);
  auto fill = [](const forecast::Outcome& o, v1::WhatIfOutcome* p) {
    p->set_name(o.name);
    p->set_broken(o.broken);
    for (const std::string& e : o.errors) p->add_errors(e);
    if (o.broken) return;
    p->set_gpus(o.gpus);
    p->set_tokens_per_second(o.tokens_per_second);
    p->set_mtbf_seconds(o.mtbf_seconds);
    *p->mutable_finish_p10() = TimeToProto(o.finish_p10);
    *p->mutable_finish_p50() = TimeToProto(o.finish_p50);
    *p->mutable_finish_p90() = TimeToProto(o.finish_p90);
    p->set_projected_budget_seconds(o.budget_projected_seconds);
    p->set_exhaustion_probability(o.exhaustion_probability);
    p->set_deadline_probability(o.deadline_probability);
    p->set_cost_p50_dollars(o.cost_p50_dollars);
    p->set_energy_p50_mwh(o.energy_p50_mwh);
  };
  for (const forecast::Outcome& o : outcomes) fill(o, out.add_outcomes());
  if (deadline) {
    const forecast::LiveDeadlineFleet d =
        forecast::FleetForDeadline(PlanFromProto(view->plan->plan), view->state, now, *deadline, 1u << 20, options);
    v1::WhatIfDeadlineFleet* p = out.mutable_deadline_fleet();
    p->set_met(d.met);
    if (d.fleet.gpus > 0 || d.fleet.broken) fill(d.fleet, p->mutable_fleet());
    p->set_smaller_gpus(d.smaller_gpus);
    if (d.smaller_gpus > 0) *p->mutable_smaller_finish_p90() = TimeToProto(d.smaller_p90);
    p->set_explanation(d.explanation);
  }
  return out;
}

uint64_t Tracker::Subscribe(const std::string& run, std::function<void()> fn) {
  return board_->Subscribe(run, std::move(fn));
}

void Tracker::Unsubscribe(uint64_t id) { board_->Unsubscribe(id); }

size_t Tracker::QueueDepth() const {
  absl::MutexLock lock(&queue_mu_);
  return urgent_.size() + queue_.size();
}


void Tracker::WriterLoop() {
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
        while (!lane->empty() &&
               (group.size() < at_least ||
                (group.size() < options_.max_group_requests &&
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

absl::Status Tracker::ProcessEvents(Request& request, Group& group, BatchResult& result) {
  if (request.stream && request.stream->refused) {
    return absl::AbortedError(absl::StrCat("batch ", request.stream->first_refused,
                                           " of this stream was refused; resend from it, in order"));
  }
  absl::Status status = ProcessEventsInOrder(request, group, result);
  if (!status.ok() && request.stream) {
    request.stream->refused = true;
    request.stream->first_refused = request.sequence;
  }
  return status;
}

absl::Status Tracker::ProcessEventsInOrder(Request& request, Group& group, BatchResult& result) {
  // Runs whose state this request changed, as they were before it (to undo a refusal).
  std::map<std::string, std::unique_ptr<RunView>> before;
  // Runs to fold again once the request's events are stored (late events), with the
  // first late item of each (for the message).
  std::map<std::string, const Request::Item*> refold;
  // The seq each item was stored under (0: not stored), for a refold's refusal message.
  std::vector<int64_t> stored(request.items.size(), 0);
  const bool many = request.items.size() > 1;
  const absl::Time received = clock_->Now();
  absl::Status status;
  for (const Request::Item& item : request.items) {
    auto it = group.working.find(item.run);
    if (it == group.working.end()) {
      std::shared_ptr<const RunView> base = Find(item.run);
      if (!base) {
        status = Annotate(absl::NotFoundError(absl::StrCat(
                              "run '", item.run, "' does not exist; create it first (flightplan create)")),
                          item.index, item.run, item.event.id);
        break;
      }
      it = group.working.emplace(item.run, std::make_unique<RunView>(*base)).first;
      // States the forecaster has simulated need not be kept for the history.
      const ForecastScheduler::BackfillWindow window = forecasts_->BackfillFor(item.run);
      it->second->backfill_mark = std::max(it->second->backfill_mark, window.simulated_to);
      it->second->backfill_spacing = window.spacing;
    }
    RunView& run = *it->second;
    run.received = received;
    const forecast::RunState& state = run.state;
    if (state.events > 0 && item.event.time - state.last_time > options_.max_event_gap) {
      status = Annotate(
          absl::FailedPreconditionError(absl::StrCat(
              "time ", forecast::FormatUtc(item.event.time), " is ", absl::FormatDuration(item.event.time - state.last_time),
              " after the run's latest event at ", forecast::FormatUtc(state.last_time), "; a jump over --max-event-gap ",
              absl::FormatDuration(options_.max_event_gap),
              " is taken for a typo (if the run really stood still that long, raise the flag)")),
          item.index, item.run, item.event.id);
      break;
    }
    const uint32_t attempt = forecast::AttemptOf(state, item.event);
    absl::StatusOr<storage::EventInsert> inserted =
        store_->InsertEvent(run.id, forecast::EventKey(item.event, attempt), item.event.time, item.bytes);
    if (!inserted.ok()) {
      status = absl::UnavailableError(absl::StrCat("storage: ", inserted.status().message()));
      break;
    }
    if (inserted->seq == 0) {
      // The key is taken: the same event again is a duplicate; another one is refused.
      v1::Event proto;
      absl::StatusOr<forecast::Event> existing =
          proto.ParseFromString(inserted->existing) ? EventFromProto(proto)
                                                   : absl::StatusOr<forecast::Event>(absl::DataLossError("unreadable"));
      if (existing.ok() && forecast::SameEvent(*existing, forecast::AttemptOf(state, *existing), item.event, attempt)) {
        ++result.duplicates;
        continue;
      }
      const std::string key = forecast::EventKey(item.event, attempt);
      const std::string was = existing.ok() ? forecast::Describe(*existing) : "an unreadable event";
      if (item.event.kind == forecast::EventKind::kJobStarted && item.event.id.empty()) {
        status = forecast::ReusedAttempt(item.event.attempt, state.attempt, was);
      } else {
        status = absl::AlreadyExistsError(absl::StrCat(
            item.event.id.empty() ? "natural key " : "id ", key, " is already recorded for another event: ",
            was, "; this one is ", forecast::Describe(item.event),
            ". An id names one event: resend it unchanged, or give this one its own id"));
      }
      status = Annotate(status, item.index, item.run, item.event.id);
      break;
    }
    // (After the duplicate check: a resent launch is a duplicate, not a launch in the past.)
    if (item.event.kind == forecast::EventKind::kJobStarted && state.events > 0 &&
        item.event.time < state.last_time) {
      // A launch cannot go into the past: the events after it would change attempts (and
      // the natural keys they were stored under).
      status = Annotate(absl::FailedPreconditionError(absl::StrCat(
                            "job_started.attempt ", item.event.attempt, " at ", forecast::FormatUtc(item.event.time),
                            " is dated before the run's latest event at ", forecast::FormatUtc(state.last_time),
                            ": a launch cannot be inserted into the past; retract the events after it "
                            "first (flightplan retract --after), or correct its time")),
                        item.index, item.run, item.event.id);
      break;
    }
    const bool late = refold.count(item.run) || forecast::NeedsRefold(state, item.event);
    // A copy to undo a refusal: needed when an earlier event of the request may have
    // changed the run, or a refold may fail after this one is counted (ApplyEvent itself
    // changes nothing when it refuses).
    if ((many || late) && !before.count(item.run)) before.emplace(item.run, std::make_unique<RunView>(run));
    if (late) {
      // It belongs before the run's latest event (or to an earlier attempt). Stored now,
      // applied by folding the run again once the request's events are all stored.
      refold.emplace(item.run, &item);
      if (item.event.kind == forecast::EventKind::kJobStarted) {
        // At the latest event's instant: later events of the request resolve to it, as the
        // fold will (the copy is replaced by the fold).
        run.state.attempt_starts.push_back({item.event.attempt, item.event.time});
      }
    } else {
      KeepBackfillState(run);
      if (absl::Status applied = forecast::ApplyEvent(run.state, item.event); !applied.ok()) {
        status = Annotate(applied, item.index, item.run, item.event.id);
        break;
      }
    }
    stored[static_cast<size_t>(&item - request.items.data())] = inserted->seq;
    run.last_seq = std::max(run.last_seq, inserted->seq);
    last_seq_ = std::max(last_seq_, inserted->seq);
    ++run.events_since_snapshot;
    ++run.version;
    ++result.accepted;
  }
  for (auto& [name, first_late] : refold) {
    if (!status.ok()) break;
    int64_t failed_seq = 0;
    forecast::Event failed;
    absl::Status st = RefoldRun(*group.working[name], group, failed_seq, failed);
    if (st.ok()) continue;
    if (st.code() == absl::StatusCode::kUnavailable || st.code() == absl::StatusCode::kDataLoss) {
      status = st;
    } else if (auto own = std::find(stored.begin(), stored.end(), failed_seq); own != stored.end()) {
      const Request::Item& item = request.items[static_cast<size_t>(own - stored.begin())];
      status = Annotate(st, item.index, name, item.event.id);
    } else {
      status = Annotate(absl::Status(st.code(), absl::StrCat(
                                                    "folded in at its place in the run's log, it would make the stored ",
                                                    forecast::Describe(failed), " no longer apply: ", st.message())),
                        first_late->index, name, first_late->event.id);
    }
  }
  if (!status.ok()) {
    for (auto& [name, copy] : before) group.working[name] = std::move(copy);
    result.accepted = 0;
    result.duplicates = 0;
  }
  return status;
}

absl::StatusOr<std::vector<forecast::LoggedEvent>> Tracker::LoadRunEvents(
    int64_t run_id, std::map<int64_t, std::string>* keys) {
  std::vector<forecast::LoggedEvent> events;
  absl::Status st = store_->ForEachRunEvent(
      run_id, [&](int64_t seq, const std::string& key, const std::string& bytes) -> absl::Status {
        v1::Event proto;
        if (!proto.ParseFromString(bytes)) {
          return absl::DataLossError(absl::StrCat("stored event ", seq, " is unreadable"));
        }
        absl::StatusOr<forecast::Event> event = EventFromProto(proto);
        if (!event.ok()) {
          return absl::DataLossError(absl::StrCat("stored event ", seq, ": ", event.status().message()));
        }
        events.push_back({seq, *std::move(event)});
        if (keys) (*keys)[seq] = key;
        return absl::OkStatus();
      });
  if (!st.ok()) {
    if (st.code() == absl::StatusCode::kDataLoss) return st;
    return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
  }
  return events;
}

absl::Status Tracker::RefoldRun(RunView& run, Group& group, int64_t& failed_seq, forecast::Event& failed) {
  absl::StatusOr<std::vector<forecast::LoggedEvent>> events = LoadRunEvents(run.id);
  if (!events.ok()) return events.status();
  absl::StatusOr<forecast::RunState> state = forecast::Refold(*events, run.state.max_causes, failed_seq);
  if (!state.ok()) {
    for (const forecast::LoggedEvent& e : *events) {
      if (e.seq == failed_seq) failed = e.event;
    }
    return state.status();
  }
  AdoptRefold(run, *std::move(state), group);
  for (const forecast::LoggedEvent& e : *events) run.last_seq = std::max(run.last_seq, e.seq);
  return absl::OkStatus();
}

void Tracker::KeepBackfillState(RunView& run) const {
  forecast::RunState& state = run.state;
  if (run.backfill_spacing <= absl::ZeroDuration() || options_.max_backfill_states == 0 || state.events == 0 ||
      state.phase == forecast::Phase::kFinished) {
    return;
  }
  if (run.backfill_mark == absl::InfinitePast()) run.backfill_mark = state.first_time;
  if (state.last_time - run.backfill_mark < run.backfill_spacing) return;
  // What a forecast reads: the marks a restore needs (checkpoints, step reports, launches,
  // the timeline's interruptions), most of a state's size, are moved aside for the copy and
  // back after.
  auto checkpoints = std::exchange(state.checkpoints, {});
  auto step_marks = std::exchange(state.step_marks, {});
  auto attempt_starts = std::exchange(state.attempt_starts, {});
  auto interruption_marks = std::exchange(state.interruption_marks, {});
  run.backfill.push_back(std::make_shared<const forecast::RunState>(state));
  state.checkpoints = std::move(checkpoints);
  state.step_marks = std::move(step_marks);
  state.attempt_starts = std::move(attempt_starts);
  state.interruption_marks = std::move(interruption_marks);
  run.backfill_mark = state.last_time;
}

void Tracker::AdoptRefold(RunView& run, forecast::RunState state, Group& group) {
  // States kept before a late event are not what the run was: the fold says what it is.
  run.backfill.clear();
  run.state = std::move(state);
  ++run.version;
  ++run.events_since_snapshot;  // snapshotted with the group (Group::refolded)
  group.refolded.insert(run.name);
  if (metrics_) metrics_->CountRefold();
}

absl::Status Tracker::ProcessPlan(Request& request, Group& group, CreateResult& result) {
  auto it = group.working.find(request.run);
  if (it == group.working.end()) {
    if (std::shared_ptr<const RunView> base = Find(request.run)) {
      it = group.working.emplace(request.run, std::make_unique<RunView>(*base)).first;
    }
  }
  const absl::Time now = clock_->Now();
  if (it == group.working.end()) {
    if (request.kind == Request::Kind::kUpdate) {
      return absl::NotFoundError(absl::StrCat("run '", request.run, "' does not exist"));
    }
    size_t runs = board_->Count();
    for (const auto& [name, view] : group.working) {
      if (!Find(name)) ++runs;  // created earlier in this group
    }
    if (runs >= options_.max_runs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "this daemon tracks ", runs, " runs, its limit (--max-runs ", options_.max_runs, ")"));
    }
    absl::StatusOr<int64_t> id = store_->InsertRun(request.run, now);
    if (!id.ok()) return absl::UnavailableError(absl::StrCat("storage: ", id.status().message()));
    if (absl::Status st = store_->InsertPlan(*id, 1, Deterministic(request.plan->plan), now, now); !st.ok()) {
      return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
    }
    auto view = std::make_unique<RunView>();
    view->id = *id;
    view->name = request.run;
    view->plan = request.plan;
    view->version = 1;
    group.working.emplace(request.run, std::move(view));
    result.created = true;
    result.plan = request.plan;
    return absl::OkStatus();
  }
  RunView& run = *it->second;
  const bool same = google::protobuf::util::MessageDifferencer::Equals(run.plan->plan, request.plan->plan);
  if (same) {
    result.created = false;
    result.plan = run.plan;
    return absl::OkStatus();
  }
  if (request.kind == Request::Kind::kCreate) {
    return absl::AlreadyExistsError(absl::StrCat(
        "run '", request.run, "' exists with a different plan (revision ", run.plan->revision,
        "); update it with UpdatePlan (flightplan create --update)"));
  }
  const uint32_t revision = run.plan->revision + 1;
  // From when, in the run's time, the new plan governs the work (before any event: all of it).
  std::optional<absl::Time> effective;
  if (run.state.events > 0) effective = options_.events_clock ? run.state.last_time : std::max(now, run.state.last_time);
  if (absl::Status st = store_->InsertPlan(run.id, revision, Deterministic(request.plan->plan), now,
                                           effective.value_or(absl::InfinitePast()));
      !st.ok()) {
    return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
  }
  std::shared_ptr<RunPlan> plan = Revised(*run.plan, *request.plan, effective);
  plan->revision = revision;
  run.plan = plan;
  ++run.version;
  result.created = true;
  result.plan = plan;
  return absl::OkStatus();
}

absl::Status Tracker::ProcessRetract(Request& request, Group& group, RetractResult& result) {
  auto it = group.working.find(request.run);
  if (it == group.working.end()) {
    std::shared_ptr<const RunView> base = Find(request.run);
    if (!base) return absl::NotFoundError(absl::StrCat("run '", request.run, "' does not exist"));
    it = group.working.emplace(request.run, std::make_unique<RunView>(*base)).first;
  }
  RunView& run = *it->second;
  const RetractSpec& spec = request.retract;
  std::map<int64_t, std::string> keys;
  absl::StatusOr<std::vector<forecast::LoggedEvent>> events = LoadRunEvents(run.id, &keys);
  if (!events.ok()) return events.status();
  std::set<std::string> wanted(spec.ids.begin(), spec.ids.end());
  std::set<std::string> found;
  std::vector<forecast::LoggedEvent> kept;
  std::vector<int64_t> seqs;
  for (forecast::LoggedEvent& e : *events) {
    const std::string& key = keys[e.seq];
    const bool by_id = wanted.count(key) > 0;
    if (by_id) found.insert(key);
    if (by_id || (spec.after && e.event.time > *spec.after)) {
      seqs.push_back(e.seq);
      result.events.push_back({e.seq, key, e.event});
    } else {
      kept.push_back(std::move(e));
    }
  }
  std::vector<std::string> missing;
  for (const std::string& id : wanted) {
    if (!found.count(id)) missing.push_back(id);
  }
  if (!missing.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "run '", request.run, "' has no event with id ", absl::StrJoin(missing, ", "),
        "; natural keys look like ~st/a1/s1200, and flightplan retract --dry-run --after TIME lists "
        "the events after TIME with their keys"));
  }
  if (seqs.empty()) {
    return absl::NotFoundError(absl::StrCat("no event of run '", request.run, "' is dated after ",
                                            forecast::FormatUtc(*spec.after)));
  }
  int64_t failed_seq = 0;
  absl::StatusOr<forecast::RunState> state = forecast::Refold(kept, run.state.max_causes, failed_seq);
  if (!state.ok()) {
    std::string what = absl::StrCat("event ", failed_seq);
    for (const forecast::LoggedEvent& e : kept) {
      if (e.seq == failed_seq) what = absl::StrCat(forecast::Describe(e.event), " (id ", keys[e.seq], ")");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "retracting ", seqs.size(), seqs.size() == 1 ? " event" : " events", " would leave the run's ", what,
        " that no longer applies: ", state.status().message(), "; retract it too, or retract --after"));
  }
  if (spec.dry_run) return absl::OkStatus();
  const absl::Time now = clock_->Now();
  std::string selector;
  if (!spec.ids.empty()) absl::StrAppend(&selector, "ids ", absl::StrJoin(spec.ids, ","));
  if (spec.after) absl::StrAppend(&selector, selector.empty() ? "" : "; ", "after ", forecast::FormatUtc(*spec.after));
  absl::StatusOr<int64_t> id = store_->RetractEvents(run.id, seqs, now, selector, spec.reason);
  if (!id.ok()) return absl::UnavailableError(absl::StrCat("storage: ", id.status().message()));
  result.retraction_id = *id;
  AdoptRefold(run, *std::move(state), group);
  // The run's time may have moved back (a typo'd date retracted): its stored forecasts as
  // of after its new "now" go, and the history's tail is read again.
  if (options_.events_clock && run.state.events > 0) {
    if (absl::Status st = store_->DeleteForecastPointsAfter(run.id, run.state.last_time); !st.ok()) {
      return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
    }
    history_tails_.erase(run.id);
  }
  retracted_version_[run.id] = run.version;
  forecasts_->Forget(run.name);
  return absl::OkStatus();
}

absl::Status Tracker::SnapshotRuns(Group& group) {
  for (const std::shared_ptr<const RunView>& base : List()) {
    if (!group.working.count(base->name) && base->events_since_snapshot > 0) {
      group.working.emplace(base->name, std::make_unique<RunView>(*base));
    }
  }
  for (auto& [name, run] : group.working) {
    if (run->events_since_snapshot == 0) continue;
    if (absl::Status st = store_->SaveSnapshot(run->id, run->last_seq,
                                               StateToProto(run->state).SerializeAsString());
        !st.ok()) {
      return st;
    }
    run->events_since_snapshot = 0;
  }
  events_since_round_ = 0;
  return store_->SetSnapshotWatermark(last_seq_);
}

absl::Status Tracker::ProcessRequests(std::vector<std::unique_ptr<Request>>& requests,
                                      Group& group, absl::Status& storage_cause) {
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

absl::Status Tracker::RecordForecastPoints(const std::vector<PendingPoint>& points, Group& group) {
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

void Tracker::ProcessGroup(std::vector<std::unique_ptr<Request>>& requests,
                           std::vector<PendingPoint> points) {
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
    group_status = store_->SaveSnapshot(run.id, run.last_seq, StateToProto(run.state).SerializeAsString());
    if (group_status.ok()) run.events_since_snapshot = 0;
  }
  if (group_status.ok()) group_status = store_->Commit();
  if (!group_status.ok()) {
    // Nothing of this group is durable: refuse every request, publish nothing (the
    // history points are dropped).
    store_->Rollback();
    last_seq_ = last_seq_before;
    const absl::Status& cause = storage_cause.ok() ? group_status : storage_cause;
    const absl::Status unavailable = absl::UnavailableError(
        absl::StrCat("storage failed; nothing of this request was stored: ", cause.message()));
    for (std::unique_ptr<Request>& r : requests) {
      r->batch_result = BatchResult{unavailable, 0, 0};
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
    metrics_->ObserveCommit(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  Complete(requests);
}

void Tracker::Complete(std::vector<std::unique_ptr<Request>>& requests) {
  for (std::unique_ptr<Request>& r : requests) {
    switch (r->kind) {
      case Request::Kind::kEvents: {
        const BatchResult& b = r->batch_result;
        if (metrics_) {
          // ABORTED (a stream resends from its first refusal) and UNAVAILABLE (storage
          // away) are resent by the client: not rejected.
          const bool retried = b.status.code() == absl::StatusCode::kAborted ||
                               b.status.code() == absl::StatusCode::kUnavailable;
          const uint32_t refused = b.status.ok() ? 0 : static_cast<uint32_t>(r->items.size());
          metrics_->CountBatch(b.accepted, b.duplicates, retried ? 0 : refused, b.status.code());
          if (retried) metrics_->CountRetried(refused, b.status.code());
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
        std::shared_ptr<const RunView> view = Find(r->run);
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
          v1::Plan plan;
          if (!plan.ParseFromString(stored.plan)) {
            parse = absl::DataLossError(absl::StrCat("plan revision ", stored.revision, " is unreadable"));
            return;
          }
          info.plans.push_back(stored.revision == view->plan->revision ? view->plan
                                                                       : MakePlan(stored.revision, std::move(plan)));
          info.plan_created.push_back(stored.created);
          info.plan_effective.push_back(stored.effective);
        });
        if (!st.ok()) st = absl::UnavailableError(absl::StrCat("storage: ", st.message()));
        if (st.ok()) st = parse;
        if (st.ok()) {
          r->info_done(std::move(info));
        } else {
          r->info_done(st);
        }
        break;
      }
      case Request::Kind::kHistory: {
        // Outside any transaction: what is committed, this group included.
        std::shared_ptr<const RunView> view = Find(r->run);
        if (!view) {
          r->history_done(absl::NotFoundError(absl::StrCat("run '", r->run, "' does not exist")));
          break;
        }
        std::vector<storage::ForecastPoint> points;
        absl::Status st = store_->ForEachForecastPoint(
            view->id, [&](const storage::ForecastPoint& p) { points.push_back(p); });
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

void Tracker::Publish(Group& group) {
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
  for (const std::string& run : changed) forecasts_->MarkDue(run);
  board_->Notify(changed);
}

void Tracker::Notify(const std::string& run) { board_->Notify({run}); }

}  // namespace flightplan::daemon
