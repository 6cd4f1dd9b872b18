// The ingest writer's requests, one kind at a time: events (in order, with late ones
// folded again), plans, retractions; each inside its savepoint of the group's transaction.
#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/stored.h"
#include "daemon/ingest_writer_internal.h"
#include "planner/plan_engine.h"

namespace flightplan::daemon {

using ingest::Annotate;
using ingest::MakePlan;
using ingest::Revised;
using ingest::UsePlan;

absl::Status IngestWriter::ProcessEvents(Request& request, Group& group, BatchResult& result) {
  if (request.stream && request.stream->refused) {
    return absl::AbortedError(
        absl::StrCat("batch ", request.stream->first_refused, " of this stream was refused; resend from it, in order"));
  }
  absl::Status status = ProcessEventsInOrder(request, group, result);
  if (!status.ok() && request.stream) {
    request.stream->refused = true;
    request.stream->first_refused = request.sequence;
  }
  return status;
}

absl::Status IngestWriter::ProcessEventsInOrder(Request& request, Group& group, BatchResult& result) {
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
      std::shared_ptr<const RunView> base = board_->Find(item.run);
      if (!base) {
        status = Annotate(absl::NotFoundError(
                              absl::StrCat("run '", item.run, "' does not exist; create it first (flightplan create)")),
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
      status = Annotate(absl::FailedPreconditionError(absl::StrCat(
                            "time ", forecast::FormatUtc(item.event.time), " is ",
                            absl::FormatDuration(item.event.time - state.last_time),
                            " after the run's latest event at ", forecast::FormatUtc(state.last_time),
                            "; a jump over --max-event-gap ", absl::FormatDuration(options_.max_event_gap),
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
      absl::StatusOr<forecast::Event> existing = convert::DecodeStoredEvent(inserted->existing, "the stored event");
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
            item.event.id.empty() ? "natural key " : "id ", key, " is already recorded for another event: ", was,
            "; this one is ", forecast::Describe(item.event),
            ". An id names one event: resend it unchanged, or give this one its own id"));
      }
      status = Annotate(status, item.index, item.run, item.event.id);
      break;
    }
    // (After the duplicate check: a resent launch is a duplicate, not a launch in the past.)
    if (item.event.kind == forecast::EventKind::kJobStarted && state.events > 0 && item.event.time < state.last_time &&
        !forecast::ReportsAKnownLaunch(state, item.event)) {
      // A launch cannot go into the past: the events after it would change attempts (and
      // the natural keys they were stored under). The other source's report of a launch the
      // run has may: it joins that attempt (forecast::FoldOrder).
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
        run.state.attempt_starts.push_back({item.event.attempt, item.event.time, item.event.launch});
      }
    } else {
      KeepBackfillState(run);
      const size_t flags_before = run.state.flags.size();
      const std::string last_flag = run.state.flags.empty() ? "" : run.state.flags.back();
      if (absl::Status applied = forecast::ApplyEvent(run.state, item.event); !applied.ok()) {
        status = Annotate(applied, item.index, item.run, item.event.id);
        break;
      }
      // A flag it raised goes back to the client too (the run's flags are capped: compare
      // the newest).
      if (!run.state.flags.empty() && (run.state.flags.size() != flags_before || run.state.flags.back() != last_flag)) {
        result.flags.push_back(absl::StrCat("run ", item.run, ": ", run.state.flags.back()));
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
      status = Annotate(
          absl::Status(st.code(), absl::StrCat("folded in at its place in the run's log, it would make the stored ",
                                               forecast::Describe(failed), " no longer apply: ", st.message())),
          first_late->index, name, first_late->event.id);
    }
  }
  if (!status.ok()) {
    for (auto& [name, copy] : before) group.working[name] = std::move(copy);
    result.accepted = 0;
    result.duplicates = 0;
    result.flags.clear();
  }
  return status;
}

absl::StatusOr<std::vector<forecast::LoggedEvent>> IngestWriter::LoadRunEvents(int64_t run_id,
                                                                               std::map<int64_t, std::string>* keys) {
  std::vector<forecast::LoggedEvent> events;
  absl::Status st = store_->ForEachRunEvent(
      run_id, [&](int64_t seq, const std::string& key, const std::string& bytes) -> absl::Status {
        absl::StatusOr<forecast::Event> event = convert::DecodeStoredEvent(bytes, absl::StrCat("stored event ", seq));
        if (!event.ok()) return event.status();
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

absl::Status IngestWriter::RefoldRun(RunView& run, Group& group, int64_t& failed_seq, forecast::Event& failed) {
  absl::StatusOr<std::vector<forecast::LoggedEvent>> events = LoadRunEvents(run.id);
  if (!events.ok()) return events.status();
  absl::StatusOr<forecast::RunState> state = forecast::Refold(*events, run.state.settings, failed_seq);
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

void IngestWriter::KeepBackfillState(RunView& run) const {
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
  // The slowdown detector's bins too: a point reads only the stretches' cost.
  auto pace_reference = std::exchange(state.slowdown.reference, {});
  auto pace_recent = std::exchange(state.slowdown.recent, {});
  auto pace_pending = std::exchange(state.slowdown.pending, {});
  auto pace_back_pending = std::exchange(state.slowdown.back_pending, {});
  run.backfill.push_back(std::make_shared<const forecast::RunState>(state));
  state.checkpoints = std::move(checkpoints);
  state.step_marks = std::move(step_marks);
  state.attempt_starts = std::move(attempt_starts);
  state.interruption_marks = std::move(interruption_marks);
  state.slowdown.reference = std::move(pace_reference);
  state.slowdown.recent = std::move(pace_recent);
  state.slowdown.pending = std::move(pace_pending);
  state.slowdown.back_pending = std::move(pace_back_pending);
  run.backfill_mark = state.last_time;
}

void IngestWriter::AdoptRefold(RunView& run, forecast::RunState state, Group& group) {
  // States kept before a late event are not what the run was: the fold says what it is.
  run.backfill.clear();
  run.state = std::move(state);
  ++run.version;
  ++run.events_since_snapshot;  // snapshotted with the group (Group::refolded)
  group.refolded.insert(run.name);
  if (metrics_) metrics_->CountRefold();
}

absl::Status IngestWriter::ProcessPlan(Request& request, Group& group, CreateResult& result) {
  auto it = group.working.find(request.run);
  if (it == group.working.end()) {
    if (std::shared_ptr<const RunView> base = board_->Find(request.run)) {
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
      if (!board_->Find(name)) ++runs;  // created earlier in this group
    }
    if (runs >= options_.max_runs) {
      return absl::ResourceExhaustedError(
          absl::StrCat("this daemon tracks ", runs, " runs, its limit (--max-runs ", options_.max_runs, ")"));
    }
    absl::StatusOr<int64_t> id = store_->InsertRun(request.run, now);
    if (!id.ok()) return absl::UnavailableError(absl::StrCat("storage: ", id.status().message()));
    if (absl::Status st = store_->InsertPlan(*id, 1, request.plan->encoded, now, now); !st.ok()) {
      return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
    }
    auto view = std::make_unique<RunView>();
    view->id = *id;
    view->name = request.run;
    UsePlan(*view, request.plan);
    view->version = 1;
    group.working.emplace(request.run, std::move(view));
    result.created = true;
    result.plan = request.plan;
    return absl::OkStatus();
  }
  RunView& run = *it->second;
  const bool same = run.plan->encoded == request.plan->encoded;  // deterministic bytes
  if (same) {
    result.created = false;
    result.plan = run.plan;
    return absl::OkStatus();
  }
  if (request.kind == Request::Kind::kCreate) {
    return absl::AlreadyExistsError(absl::StrCat("run '", request.run, "' exists with a different plan (revision ",
                                                 run.plan->revision,
                                                 "); update it with UpdatePlan (flightplan create --update)"));
  }
  const uint32_t revision = run.plan->revision + 1;
  // From when, in the run's time, the new plan governs the work (before any event: all of it).
  std::optional<absl::Time> effective;
  if (run.state.events > 0)
    effective = options_.events_clock ? run.state.last_time : std::max(now, run.state.last_time);
  if (absl::Status st =
          store_->InsertPlan(run.id, revision, request.plan->encoded, now, effective.value_or(absl::InfinitePast()));
      !st.ok()) {
    return absl::UnavailableError(absl::StrCat("storage: ", st.message()));
  }
  std::shared_ptr<RunPlan> plan = Revised(*run.plan, *request.plan, effective);
  plan->revision = revision;
  UsePlan(run, plan);
  ++run.version;
  result.created = true;
  result.plan = plan;
  return absl::OkStatus();
}

absl::Status IngestWriter::ProcessRetract(Request& request, Group& group, RetractResult& result) {
  auto it = group.working.find(request.run);
  if (it == group.working.end()) {
    std::shared_ptr<const RunView> base = board_->Find(request.run);
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
    return absl::NotFoundError(
        absl::StrCat("run '", request.run, "' has no event with id ", absl::StrJoin(missing, ", "),
                     "; natural keys look like ~st/a1/s1200, and flightplan retract --dry-run --after TIME lists "
                     "the events after TIME with their keys"));
  }
  if (seqs.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no event of run '", request.run, "' is dated after ", forecast::FormatUtc(*spec.after)));
  }
  int64_t failed_seq = 0;
  absl::StatusOr<forecast::RunState> state = forecast::Refold(kept, run.state.settings, failed_seq);
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

}  // namespace flightplan::daemon
