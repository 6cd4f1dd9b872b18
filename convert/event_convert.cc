#include "convert/event_convert.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "convert/plan_convert.h"
#include "forecast/causes.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace flightplan::convert {
namespace {

int64_t Micros(absl::Time t) {
  if (t == absl::InfinitePast()) return INT64_MIN;
  if (t == absl::InfiniteFuture()) return INT64_MAX;
  return absl::ToUnixMicros(t);
}
absl::Time FromMicros(int64_t us) {
  if (us == INT64_MIN) return absl::InfinitePast();
  if (us == INT64_MAX) return absl::InfiniteFuture();
  return absl::FromUnixMicros(us);
}

void BinToProto(const forecast::PaceBin& b, v1::RunStateSnapshot::PaceBin* p) {
  p->set_start_us(Micros(b.start));
  p->set_end_us(Micros(b.end));
  p->set_seconds(b.seconds);
  p->set_tokens(b.tokens);
}
forecast::PaceBin BinFromProto(const v1::RunStateSnapshot::PaceBin& p) {
  forecast::PaceBin b;
  b.start = FromMicros(p.start_us());
  b.end = FromMicros(p.end_us());
  b.seconds = p.seconds();
  b.tokens = p.tokens();
  return b;
}

void SlowdownToProto(const forecast::SlowdownState& s, v1::RunStateSnapshot::Slowdown* p) {
  BinToProto(s.bin, p->mutable_bin());
  for (const auto& b : s.recent) BinToProto(b, p->add_recent());
  for (const auto& b : s.reference) BinToProto(b, p->add_reference());
  for (const auto& b : s.pending) BinToProto(b, p->add_pending());
  for (const auto& b : s.back_pending) BinToProto(b, p->add_back_pending());
  p->set_cusum(s.cusum);
  p->set_back_cusum(s.back_cusum);
  for (const auto& st : s.stretches) {
    auto* ps = p->add_stretches();
    ps->set_start_us(Micros(st.start));
    ps->set_end_us(Micros(st.end));
    ps->set_active(st.active);
    ps->set_reference_log_pace(st.reference_log_pace);
    ps->set_seconds(st.seconds);
    ps->set_tokens(st.tokens);
    ps->set_node(st.node);
    ps->set_node_final(st.node_final);
  }
  p->set_evicted_cost(s.evicted_cost);
  p->set_count(s.count);
  p->set_tokens_per_step(s.tokens_per_step);
}
forecast::SlowdownState SlowdownFromProto(const v1::RunStateSnapshot::Slowdown& p) {
  forecast::SlowdownState s;
  s.bin = BinFromProto(p.bin());
  for (const auto& b : p.recent()) s.recent.push_back(BinFromProto(b));
  for (const auto& b : p.reference()) s.reference.push_back(BinFromProto(b));
  for (const auto& b : p.pending()) s.pending.push_back(BinFromProto(b));
  for (const auto& b : p.back_pending()) s.back_pending.push_back(BinFromProto(b));
  s.cusum = p.cusum();
  s.back_cusum = p.back_cusum();
  for (const auto& ps : p.stretches()) {
    forecast::SlowStretch st;
    st.start = FromMicros(ps.start_us());
    st.end = FromMicros(ps.end_us());
    st.active = ps.active();
    st.reference_log_pace = ps.reference_log_pace();
    st.seconds = ps.seconds();
    st.tokens = ps.tokens();
    st.node = ps.node();
    st.node_final = ps.node_final();
    s.stretches.push_back(st);
  }
  s.evicted_cost = p.evicted_cost();
  s.count = p.count();
  s.tokens_per_step = p.tokens_per_step();
  forecast::RefreshPaceReference(s);  // its figures follow from its bins
  return s;
}

// Checkpoint marks and step marks share one message.
void MarksToProto(const std::vector<forecast::CheckpointMark>& marks,
                  google::protobuf::RepeatedPtrField<v1::RunStateSnapshot::Mark>* out) {
  for (const auto& m : marks) {
    auto* pm = out->Add();
    pm->set_step(m.step);
    pm->set_tokens(m.tokens);
    pm->set_productive_seconds(m.productive_seconds);
    pm->set_productive_tokens(m.productive_tokens);
    pm->set_inexact(!m.exact);
  }
}
void MarksFromProto(const google::protobuf::RepeatedPtrField<v1::RunStateSnapshot::Mark>& in,
                    std::vector<forecast::CheckpointMark>& out) {
  for (const auto& m : in) {
    out.push_back({m.step(), m.tokens(), m.productive_seconds(), m.productive_tokens(), !m.inexact()});
  }
}

// The hosts an event names (JobStarted.nodes, Interruption.nodes): each a hostname or an
// address, 1 to 255 of [A-Za-z0-9._-] (a list in one name, "gpu-[1-4]" or "a,b", is a
// client's mistake).
absl::Status CheckNodes(const google::protobuf::RepeatedPtrField<std::string>& nodes, const char* field,
                        const std::string& run) {
  constexpr int kMaxNodes = 65536;
  if (nodes.size() > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", nodes.size(), " names, more than ", kMaxNodes, " (run ", run, ")"));
  }
  for (int i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i];
    const bool bad_char = std::any_of(n.begin(), n.end(), [](char c) {
      return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_');
    });
    if (n.empty() || n.size() > 255 || bad_char) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "] '", n.substr(0, 64),
                                                     "' is not a hostname (1 to 255 of a-z, A-Z, 0-9, '-', '.', "
                                                     "'_'; a Slurm list such as 'gpu-[1-4]' is expanded first) (run ",
                                                     run, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

absl::StatusOr<forecast::Event> EventFromProto(const v1::Event& p) {
  using forecast::EventKind;
  if (p.run().empty()) return absl::InvalidArgumentError("event.run is required");
  if (!p.has_time()) {
    return absl::InvalidArgumentError(absl::StrCat("event.time is required (run ", p.run(), ")"));
  }
  if (p.time().nanos() < 0 || p.time().nanos() > 999'999'999) {
    return absl::InvalidArgumentError("event.time has out-of-range nanos");
  }
  forecast::Event e;
  e.time = TimeFromProto(p.time());
  e.id = p.id();
  e.attempt = p.attempt();
  e.source = p.source();
  switch (p.kind_case()) {
    case v1::Event::kJobStarted:
      if (p.attempt() != 0 && p.attempt() != p.job_started().attempt()) {
        return absl::InvalidArgumentError(absl::StrCat("event.attempt ", p.attempt(),
                                                       " contradicts job_started.attempt ", p.job_started().attempt(),
                                                       " (run ", p.run(), ")"));
      }
      e.kind = EventKind::kJobStarted;
      e.attempt = p.job_started().attempt();
      e.restored_step = p.job_started().restored_step();
      e.launch = p.job_started().launch();
      if (absl::Status st = CheckNodes(p.job_started().nodes(), "job_started.nodes", p.run()); !st.ok()) return st;
      e.nodes.assign(p.job_started().nodes().begin(), p.job_started().nodes().end());
      e.gpus = p.job_started().gpus();
      break;
    case v1::Event::kSteps:
      e.kind = EventKind::kSteps;
      e.step = p.steps().step();
      e.tokens = p.steps().tokens();
      e.rank_spread = p.steps().rank_spread();
      if (p.steps().has_slowest_rank()) {
        if (p.steps().slowest_rank() < -1) {
          return absl::InvalidArgumentError(absl::StrCat("steps.slowest_rank ", p.steps().slowest_rank(),
                                                         " is not a rank (0 or more; -1: not said) (run ", p.run(),
                                                         ")"));
        }
        e.slowest_rank = p.steps().slowest_rank();
      }
      break;
    case v1::Event::kCheckpointSaved:
      e.kind = EventKind::kCheckpointSaved;
      e.step = p.checkpoint_saved().step();
      e.blocking_seconds = p.checkpoint_saved().blocking_seconds();
      break;
    case v1::Event::kInterruption:
      e.kind = EventKind::kInterruption;
      e.cause = p.interruption().cause();
      e.planned = p.interruption().planned();
      e.detail = p.interruption().detail();
      if (absl::Status st = CheckNodes(p.interruption().nodes(), "interruption.nodes", p.run()); !st.ok()) return st;
      e.nodes.assign(p.interruption().nodes().begin(), p.interruption().nodes().end());
      forecast::NormalizeCause(e);  // a word outside the vocabulary: "other", the word in the detail
      break;
    case v1::Event::kRunFinished:
      e.kind = EventKind::kRunFinished;
      break;
    case v1::Event::kSpanStarted:
      e.kind = EventKind::kSpanStarted;
      e.span = p.span_started().kind();
      e.expected_seconds = p.span_started().expected_seconds();
      break;
    case v1::Event::kSpanEnded:
      e.kind = EventKind::kSpanEnded;
      e.span = p.span_ended().kind();
      break;
    case v1::Event::kExcluded:
      if (p.attempt() != 0) {
        return absl::InvalidArgumentError(absl::StrCat("event.attempt ", p.attempt(),
                                                       " on an excluded window: a window belongs to the run, not to "
                                                       "a launch (run ",
                                                       p.run(), ")"));
      }
      if (!p.excluded().has_until()) {
        return absl::InvalidArgumentError(absl::StrCat("excluded.until is required (run ", p.run(), ")"));
      }
      if (p.excluded().until().nanos() < 0 || p.excluded().until().nanos() > 999'999'999) {
        return absl::InvalidArgumentError("excluded.until has out-of-range nanos");
      }
      e.kind = EventKind::kExcluded;
      e.until = TimeFromProto(p.excluded().until());
      e.detail = p.excluded().reason();
      break;
    case v1::Event::KIND_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat("event has no kind: one of job_started, steps, checkpoint_saved, interruption, "
                       "run_finished, span_started, span_ended, excluded is required (run ",
                       p.run(), ", id '", p.id(), "')"));
  }
  return e;
}

v1::Event EventToProto(const forecast::Event& e, const std::string& run) {
  using forecast::EventKind;
  v1::Event p;
  p.set_run(run);
  *p.mutable_time() = TimeToProto(e.time);
  p.set_id(e.id);
  p.set_source(e.source);
  switch (e.kind) {
    case EventKind::kJobStarted:
      p.mutable_job_started()->set_attempt(e.attempt);
      p.mutable_job_started()->set_restored_step(e.restored_step);
      p.mutable_job_started()->set_launch(e.launch);
      for (const std::string& n : e.nodes) p.mutable_job_started()->add_nodes(n);
      p.mutable_job_started()->set_gpus(e.gpus);
      break;
    case EventKind::kSteps:
      p.set_attempt(e.attempt);
      p.mutable_steps()->set_step(e.step);
      p.mutable_steps()->set_tokens(e.tokens);
      if (e.rank_spread != 0) p.mutable_steps()->set_rank_spread(e.rank_spread);
      if (e.slowest_rank >= 0) p.mutable_steps()->set_slowest_rank(e.slowest_rank);
      break;
    case EventKind::kCheckpointSaved:
      p.set_attempt(e.attempt);
      p.mutable_checkpoint_saved()->set_step(e.step);
      p.mutable_checkpoint_saved()->set_blocking_seconds(e.blocking_seconds);
      break;
    case EventKind::kInterruption:
      p.set_attempt(e.attempt);
      p.mutable_interruption()->set_cause(e.cause);
      p.mutable_interruption()->set_planned(e.planned);
      p.mutable_interruption()->set_detail(e.detail);
      for (const std::string& n : e.nodes) p.mutable_interruption()->add_nodes(n);
      break;
    case EventKind::kRunFinished:
      p.set_attempt(e.attempt);
      p.mutable_run_finished();
      break;
    case EventKind::kSpanStarted:
      p.set_attempt(e.attempt);
      p.mutable_span_started()->set_kind(e.span);
      p.mutable_span_started()->set_expected_seconds(e.expected_seconds);
      break;
    case EventKind::kSpanEnded:
      p.set_attempt(e.attempt);
      p.mutable_span_ended()->set_kind(e.span);
      break;
    case EventKind::kExcluded:
      *p.mutable_excluded()->mutable_until() = TimeToProto(e.until);
      p.mutable_excluded()->set_reason(e.detail);
      break;
  }
  return p;
}

v1::RunStateSnapshot StateToProto(const forecast::RunState& s) {
  v1::RunStateSnapshot p;
  p.set_phase(static_cast<int32_t>(s.phase));
  p.set_attempt(s.attempt);
  p.set_events(s.events);
  p.set_first_time_us(Micros(s.first_time));
  p.set_last_time_us(Micros(s.last_time));
  p.set_step(s.step);
  p.set_tokens(s.tokens);
  for (double v :
       {s.seconds.productive, s.seconds.checkpoint, s.seconds.lost, s.seconds.startup, s.seconds.down_unplanned,
        s.seconds.down_planned, s.seconds.stalled, s.seconds.capacity, s.seconds.custom, s.seconds.excluded}) {
    p.add_seconds(v);
  }
  p.set_gpus(s.gpus);
  if (!s.span_kind.empty()) {
    p.set_span_kind(s.span_kind);
    p.set_span_start_us(Micros(s.span_start));
    p.set_span_promise(s.span_promise);
    p.set_span_charged(s.span_charged);
  }
  for (const forecast::SpanSeconds& k : s.custom_by_kind) {
    auto* pk = p.add_custom_by_kind();
    pk->set_kind(k.kind);
    pk->set_seconds(k.seconds);
  }
  p.set_paused_since_step(s.paused_since_step);
  for (const forecast::ExclusionWindow& w : s.exclusions) {
    auto* pw = p.add_exclusions();
    pw->set_from_us(Micros(w.from));
    pw->set_until_us(Micros(w.until));
    pw->set_reason(w.reason);
  }
  p.set_startup_after_unplanned(s.startup_after_unplanned);
  p.set_down_planned(s.down_planned);
  p.set_last_stop_unplanned(s.last_stop_unplanned);
  p.set_productive_tokens(s.productive_tokens);
  p.set_typical_step_gap(s.typical_step_gap);
  p.set_typical_seconds_per_step(s.typical_seconds_per_step);
  p.set_last_step_time_us(Micros(s.last_step_time));
  p.set_checkpoint_since_step(s.checkpoint_since_step);
  for (const auto& t : s.wall_tokens) {
    auto* pt = p.add_wall_tokens();
    pt->set_time_us(Micros(t.time));
    pt->set_tokens(t.tokens);
  }
  p.set_saw_step_in_attempt(s.saw_step_in_attempt);
  for (const auto& i : s.interruptions) {
    auto* pi = p.add_interruptions();
    pi->set_cause(i.cause);
    pi->set_planned(i.planned);
    pi->set_count(i.count);
  }
  MarksToProto(s.checkpoints, p.mutable_checkpoints());
  SlowdownToProto(s.slowdown, p.mutable_slowdown());
  p.set_pace_productive_mark(s.pace_productive_mark);
  p.set_pace_stalled_mark(s.pace_stalled_mark);
  p.set_pace_mark_valid(s.pace_mark_valid);
  p.set_rank_spread(s.rank_spread);
  p.set_typical_rank_spread(s.typical_rank_spread);
  p.set_last_checkpoint_time_us(Micros(s.last_checkpoint_time));
  p.set_typical_checkpoint_gap(s.typical_checkpoint_gap);
  if (s.node_book != nullptr) {
    const forecast::NodeBook& b = *s.node_book;
    auto* pb = p.mutable_node_book();
    for (const auto& [node, use] : b.nodes) {
      auto* pu = pb->add_nodes();
      pu->set_node(node);
      pu->set_attempts(use.attempts);
      pu->set_held_seconds(use.held_seconds);
      pu->set_failures(use.failures);
      pu->set_slow_stretches(use.slow_stretches);
    }
    for (const auto& h : b.held) pb->add_held(h);
    pb->set_held_gpus(b.held_gpus);
    pb->set_held_since_us(b.held_since == absl::InfinitePast() ? 0 : Micros(b.held_since));
    pb->set_overflow(b.overflow);
  }
  for (const auto& m : s.rank_marks) {
    auto* pm = p.add_rank_marks();
    pm->set_first_us(Micros(m.first));
    pm->set_last_us(Micros(m.last));
    pm->set_node(m.node);
    pm->set_reports(m.reports);
  }
  for (const auto& r : s.recent) {
    auto* pr = p.add_recent();
    pr->set_time_us(Micros(r.time));
    pr->set_productive_seconds(r.productive_seconds);
    pr->set_productive_tokens(r.productive_tokens);
  }
  for (const auto& f : s.flags) p.add_flags(f);
  p.set_tokens_uncertain(s.tokens_uncertain);
  p.set_checkpoints_evicted(s.checkpoints_evicted);
  for (const auto& a : s.attempt_starts) {
    auto* pa = p.add_attempt_starts();
    pa->set_attempt(a.attempt);
    pa->set_time_us(Micros(a.time));
    pa->set_launch(a.launch);
  }
  MarksToProto(s.step_marks, p.mutable_step_marks());
  p.set_tokens_inferred(s.tokens_inferred);
  p.set_scheduler_reports(s.scheduler_reports);
  for (const auto& m : s.interruption_marks) {
    auto* pm = p.add_interruption_marks();
    pm->set_time_us(Micros(m.time));
    pm->set_cause(m.cause);
    pm->set_planned(m.planned);
  }
  p.set_unplanned_interruptions(s.unplanned_interruptions);
  p.set_incident_open(s.incident_open);
  p.set_incident_start_budget(s.incident_start_budget);
  for (double l : s.incident_losses) p.add_incident_losses(l);
  p.set_incidents(s.incidents);
  p.set_incident_loss_sum(s.incident_loss_sum);
  p.set_checkpoint_count(s.checkpoint_count);
  p.set_checkpoint_blocking_sum(s.checkpoint_blocking_sum);
  for (const auto& b : s.budget_samples) {
    auto* pb = p.add_budget_samples();
    pb->set_time_us(Micros(b.time));
    pb->set_consumed_seconds(b.consumed_seconds);
  }
  for (const auto& e : s.evidence) {
    auto* pe = p.add_evidence();
    pe->set_time_us(Micros(e.time));
    pe->set_running_seconds(e.running_seconds);
    pe->set_productive_seconds(e.productive_seconds);
    pe->set_productive_tokens(e.productive_tokens);
    pe->set_incidents(e.incidents);
    pe->set_incident_loss_seconds(e.incident_loss_seconds);
    pe->set_other_seconds(e.other_seconds);
    pe->set_planned_stops(e.planned_stops);
  }
  p.set_evidence_spacing_us(absl::ToInt64Microseconds(s.evidence_spacing));
  p.set_planned_interruptions(s.planned_interruptions);
  p.set_startup_in_attempt(s.startup_in_attempt);
  p.set_typical_startup(s.typical_startup);
  p.set_last_kind_rank(s.last_kind_rank);
  return p;
}

forecast::RunState StateFromProto(const v1::RunStateSnapshot& p) {
  forecast::RunState s;
  s.phase = static_cast<forecast::Phase>(p.phase());
  s.attempt = p.attempt();
  s.events = p.events();
  s.first_time = FromMicros(p.first_time_us());
  s.last_time = FromMicros(p.last_time_us());
  s.step = p.step();
  s.tokens = p.tokens();
  if (p.seconds_size() >= 7) {
    s.seconds = {p.seconds(0), p.seconds(1), p.seconds(2), p.seconds(3), p.seconds(4), p.seconds(5), p.seconds(6)};
  }
  if (p.seconds_size() >= 10) {
    s.seconds.capacity = p.seconds(7);
    s.seconds.custom = p.seconds(8);
    s.seconds.excluded = p.seconds(9);
  }
  s.gpus = p.gpus();
  if (!p.span_kind().empty()) {
    s.span_kind = p.span_kind();
    s.span_start = FromMicros(p.span_start_us());
    s.span_promise = p.span_promise();
    s.span_charged = p.span_charged();
  }
  for (const auto& k : p.custom_by_kind()) s.custom_by_kind.push_back({k.kind(), k.seconds()});
  s.paused_since_step = p.paused_since_step();
  for (const auto& w : p.exclusions()) {
    s.exclusions.push_back({FromMicros(w.from_us()), FromMicros(w.until_us()), w.reason()});
  }
  s.startup_after_unplanned = p.startup_after_unplanned();
  s.down_planned = p.down_planned();
  s.last_stop_unplanned = p.last_stop_unplanned();
  s.productive_tokens = p.productive_tokens();
  s.typical_step_gap = p.typical_step_gap();
  s.typical_seconds_per_step = p.typical_seconds_per_step();
  s.last_step_time = p.last_step_time_us() == 0 ? absl::InfinitePast() : FromMicros(p.last_step_time_us());
  s.checkpoint_since_step = p.checkpoint_since_step();
  for (const auto& t : p.wall_tokens()) s.wall_tokens.push_back({FromMicros(t.time_us()), t.tokens()});
  s.saw_step_in_attempt = p.saw_step_in_attempt();
  for (const auto& i : p.interruptions()) s.interruptions.push_back({i.cause(), i.planned(), i.count()});
  MarksFromProto(p.checkpoints(), s.checkpoints);
  for (const auto& r : p.recent()) {
    s.recent.push_back({FromMicros(r.time_us()), r.productive_seconds(), r.productive_tokens()});
  }
  for (const auto& f : p.flags()) s.flags.push_back(f);
  s.tokens_uncertain = p.tokens_uncertain();
  s.checkpoints_evicted = p.checkpoints_evicted();
  for (const auto& a : p.attempt_starts())
    s.attempt_starts.push_back({a.attempt(), FromMicros(a.time_us()), a.launch()});
  for (const auto& m : p.interruption_marks())
    s.interruption_marks.push_back({FromMicros(m.time_us()), m.cause(), m.planned()});
  MarksFromProto(p.step_marks(), s.step_marks);
  s.tokens_inferred = p.tokens_inferred();
  s.scheduler_reports = p.scheduler_reports();
  s.unplanned_interruptions = p.unplanned_interruptions();
  s.incident_open = p.incident_open();
  s.incident_start_budget = p.incident_start_budget();
  for (double l : p.incident_losses()) s.incident_losses.push_back(l);
  s.incidents = p.incidents();
  s.incident_loss_sum = p.incident_loss_sum();
  s.checkpoint_count = p.checkpoint_count();
  s.checkpoint_blocking_sum = p.checkpoint_blocking_sum();
  for (const auto& b : p.budget_samples()) {
    s.budget_samples.push_back({FromMicros(b.time_us()), b.consumed_seconds()});
  }
  // Snapshots from before the evidence samples have none: estimates over windows then
  // start from the snapshot on.
  for (const auto& e : p.evidence()) {
    s.evidence.push_back({FromMicros(e.time_us()), e.running_seconds(), e.productive_seconds(), e.productive_tokens(),
                          e.incidents(), e.incident_loss_seconds(), e.other_seconds(), e.planned_stops()});
  }
  s.planned_interruptions = p.planned_interruptions();
  s.startup_in_attempt = p.startup_in_attempt();
  s.typical_startup = p.typical_startup();
  s.last_kind_rank = p.last_kind_rank();
  if (p.evidence_spacing_us() > 0) s.evidence_spacing = absl::Microseconds(p.evidence_spacing_us());
  // Snapshots from before the slowdowns have none: the pace is learned from the snapshot on.
  s.slowdown = SlowdownFromProto(p.slowdown());
  s.pace_productive_mark = p.pace_productive_mark();
  s.pace_stalled_mark = p.pace_stalled_mark();
  s.pace_mark_valid = p.pace_mark_valid();
  s.rank_spread = p.rank_spread();
  s.typical_rank_spread = p.typical_rank_spread();
  s.last_checkpoint_time =
      p.last_checkpoint_time_us() == 0 ? absl::InfinitePast() : FromMicros(p.last_checkpoint_time_us());
  s.typical_checkpoint_gap = p.typical_checkpoint_gap();
  if (p.has_node_book()) {
    auto b = std::make_shared<forecast::NodeBook>();
    for (const auto& pu : p.node_book().nodes()) {
      b->nodes[pu.node()] = {pu.attempts(), pu.held_seconds(), pu.failures(), pu.slow_stretches()};
    }
    b->held.assign(p.node_book().held().begin(), p.node_book().held().end());
    b->held_gpus = p.node_book().held_gpus();
    b->held_since =
        p.node_book().held_since_us() == 0 ? absl::InfinitePast() : FromMicros(p.node_book().held_since_us());
    b->overflow = p.node_book().overflow();
    s.node_book = std::move(b);
  }
  for (const auto& pm : p.rank_marks()) {
    s.rank_marks.push_back({FromMicros(pm.first_us()), FromMicros(pm.last_us()), pm.node(), pm.reports()});
  }
  return s;
}

void TimeSecondsToProto(const forecast::TimeSeconds& x, const std::vector<forecast::SpanSeconds>& custom_by_kind,
                        double elapsed_seconds, v1::TimeSeconds* t) {
  t->Clear();
  t->set_productive(x.productive);
  t->set_checkpoint(x.checkpoint);
  t->set_lost(x.lost);
  t->set_startup(x.startup);
  t->set_down_unplanned(x.down_unplanned);
  t->set_down_planned(x.down_planned);
  t->set_stalled(x.stalled);
  t->set_capacity(x.capacity);
  t->set_custom(x.custom);
  t->set_excluded(x.excluded);
  for (const forecast::SpanSeconds& k : custom_by_kind) {
    v1::SpanSeconds* pk = t->add_custom_seconds_by_kind();
    pk->set_kind(k.kind);
    pk->set_seconds(k.seconds);
  }
  t->set_elapsed(elapsed_seconds);
}

v1::RunStatus StatusToProto(const std::string& run, const forecast::RunSnapshot& s, int64_t target_tokens,
                            double plan_tokens_per_second) {
  v1::RunStatus p;
  p.set_run(run);
  p.set_state(forecast::PhaseName(s.phase));
  p.set_attempt(s.attempt);
  p.set_events(s.events);
  if (s.events > 0) {
    *p.mutable_first_event_time() = TimeToProto(s.first_time);
    *p.mutable_last_event_time() = TimeToProto(s.last_time);
  }
  if (s.as_of != absl::InfinitePast() && s.as_of != absl::InfiniteFuture()) {
    *p.mutable_as_of() = TimeToProto(s.as_of);
  }
  auto* progress = p.mutable_progress();
  progress->set_tokens(s.tokens);
  progress->set_target_tokens(target_tokens);
  progress->set_step(s.step);
  progress->set_fraction(target_tokens > 0 ? static_cast<double>(s.tokens) / static_cast<double>(target_tokens) : 0);
  if (s.last_step_time != absl::InfinitePast() && s.as_of != absl::InfinitePast()) {
    // Silence inside a span counts from when its promise runs out.
    const absl::Time quiet_since = std::max(s.last_step_time, s.span_promised_until);
    progress->set_seconds_since_step(std::max(0.0, absl::ToDoubleSeconds(s.as_of - quiet_since)));
  }
  if (!s.span_kind.empty()) {
    v1::OpenSpan* span = p.mutable_span();
    span->set_kind(s.span_kind);
    *span->mutable_since() = TimeToProto(s.span_start);
    *span->mutable_promised_until() = TimeToProto(s.span_promised_until);
  }
  p.set_gpus(s.gpus);
  for (const forecast::ExclusionWindow& w : s.exclusions) {
    v1::ExclusionWindow* pw = p.add_exclusions();
    *pw->mutable_from() = TimeToProto(w.from);
    *pw->mutable_until() = TimeToProto(w.until);
    pw->set_reason(w.reason);
  }
  progress->set_usual_report_interval_seconds(s.typical_step_gap);
  TimeSecondsToProto(s.seconds, s.custom_by_kind, s.elapsed_seconds, p.mutable_time_seconds());
  for (const auto& i : s.interruptions) {
    auto* pi = p.add_interruptions();
    pi->set_cause(i.cause);
    pi->set_planned(i.planned);
    pi->set_count(i.count);
  }
  auto* tp = p.mutable_throughput();
  tp->set_tokens_per_second(s.tokens_per_second);
  tp->set_recent_tokens_per_second(s.recent_tokens_per_second);
  tp->set_plan_tokens_per_second(plan_tokens_per_second);
  for (const auto& f : s.flags) p.add_flags(f);
  p.mutable_failure_budget()->set_consumed_seconds(s.failure_budget_consumed_seconds);
  const forecast::SlowdownReport& sd = s.slowdown;
  v1::Slowdown* slow = p.mutable_slowdown();
  const double tokens_left = std::max<double>(0, static_cast<double>(target_tokens - s.tokens));
  slow->set_seconds(sd.seconds);
  slow->set_projected_seconds(sd.seconds + tokens_left * sd.excess_seconds_per_token);
  slow->set_factor(sd.factor);
  slow->set_node(sd.node);
  slow->set_active(sd.active);
  slow->set_count(sd.count);
  if (sd.since != absl::InfinitePast()) *slow->mutable_since() = TimeToProto(sd.since);
  if (!sd.active && sd.until != absl::InfinitePast() && sd.until != absl::InfiniteFuture()) {
    *slow->mutable_until() = TimeToProto(sd.until);
  }
  slow->set_reference_tokens_per_second(sd.reference_tokens_per_second);
  slow->set_plan_tokens_per_second(plan_tokens_per_second);
  slow->set_noise(sd.noise);
  slow->set_rank_spread(s.rank_spread);
  slow->set_typical_rank_spread(s.typical_rank_spread);
  for (size_t i = 0; i < 3; ++i) {
    if (sd.throughput_ratio[i] <= 0) continue;
    v1::WindowRatio* w = slow->add_throughput_ratio();
    w->set_window(forecast::kThroughputRatioWindowNames[i]);
    w->set_ratio(sd.throughput_ratio[i]);
  }
  return p;
}

void ForecastToProto(const forecast::Forecast& f, uint64_t forecast_events, v1::RunStatus& p) {
  // Timestamp's range is years 1-9999; a time past it (a run that would take millennia at
  // its current rate) is left out rather than printed wrong.
  static const absl::Time kMin = absl::FromUnixSeconds(-62135596800);
  static const absl::Time kMax = absl::FromUnixSeconds(253402300799);
  auto finite = [](absl::Time t) { return t >= kMin && t <= kMax; };
  v1::Forecast* fc = p.mutable_forecast();
  if (forecast_events > 0 || f.finished) {
    if (finite(f.finish_p10)) *fc->mutable_finish_p10() = TimeToProto(f.finish_p10);
    if (finite(f.finish_p50)) *fc->mutable_finish_p50() = TimeToProto(f.finish_p50);
    if (finite(f.finish_p90)) *fc->mutable_finish_p90() = TimeToProto(f.finish_p90);
    fc->set_slip_seconds(f.slip_seconds);
    fc->set_deadline_probability(f.deadline_probability);
  }
  *fc->mutable_plan_finish() = TimeToProto(f.plan_finish);
  *fc->mutable_plan_expected_finish() = TimeToProto(f.plan_expected_finish);
  if (f.deadline) *fc->mutable_deadline() = TimeToProto(*f.deadline);
  fc->set_forecast_events(forecast_events);
  fc->set_forecast_tokens_per_second(f.forecast_tokens_per_second);
  fc->set_throughput_shifted(f.throughput_shifted);
  fc->set_custom_ratio(f.custom_ratio);
  if (f.full_size) {
    v1::FullSize* fs = fc->mutable_full_size();
    fs->set_gpus(f.full_size->gpus);
    fs->set_plan_gpus(f.full_size->plan_gpus);
    fs->set_missing_nodes(f.full_size->missing_nodes);
    fs->set_p50_seconds(f.full_size->p50_seconds);
    fs->set_reason(f.full_size->reason);
  } else {
    fc->clear_full_size();
  }

  p.clear_futures();
  for (const forecast::Forecast::FutureFinish& fu : f.futures) {
    if (!finite(fu.finish_p50)) continue;
    v1::Future* out = p.add_futures();
    out->set_name(fu.future.name);
    *out->mutable_finish_p50() = TimeToProto(fu.finish_p50);
    out->set_budget_at_finish_seconds(fu.future.budget_at_finish_seconds);
    out->set_weight(fu.future.weight);
    out->set_reason(fu.future.reason);
    out->set_mtbf_seconds(fu.future.mtbf_seconds);
    out->set_loss_per_incident_seconds(fu.future.loss_per_incident_seconds);
  }

  v1::FailureBudget* b = p.mutable_failure_budget();
  b->set_budget_seconds(f.budget_seconds);
  b->set_schedule_seconds(f.schedule_seconds);
  if (f.budget_seconds > 0) b->set_burn_rate_ceiling(f.schedule_seconds / f.budget_seconds);
  b->set_consumed_seconds(f.consumed_seconds);
  b->set_remaining_seconds(f.remaining_seconds);
  b->set_burn_rate(f.burn_rate);
  b->set_burn_rate_1h(f.burn_rate_1h);
  b->set_burn_rate_6h(f.burn_rate_6h);
  b->set_burn_rate_1d(f.burn_rate_1d);
  b->set_burn_rate_3d(f.burn_rate_3d);
  b->set_projected_at_finish_seconds(f.projected_at_finish_seconds);
  b->set_exhaustion_probability(f.exhaustion_probability);
  if (f.exhausted_at && finite(*f.exhausted_at)) *b->mutable_exhausted_at() = TimeToProto(*f.exhausted_at);

  v1::Reliability* r = p.mutable_reliability();
  r->set_goodput(f.goodput);
  r->set_goodput_counting_excluded(f.goodput_counting_excluded);
  p.mutable_mfu()->set_lifetime(f.mfu_lifetime);
  p.mutable_mfu()->set_last_hour(f.mfu_last_hour);
  p.mutable_mfu()->set_plan(f.mfu_plan);
  p.set_plan_gpus(f.plan_gpus);
  r->set_observed_mtbf_seconds(f.observed_mtbf_seconds);
  r->set_plan_mtbf_seconds(f.plan_mtbf_seconds);
  r->set_mean_loss_per_interruption_seconds(f.mean_loss_per_interruption_seconds);
  r->set_recommended_checkpoint_interval_seconds(f.recommended_checkpoint_interval_seconds);
  r->set_plan_checkpoint_interval_seconds(f.plan_checkpoint_interval_seconds);
  r->set_posterior_mtbf_seconds(f.posterior_mtbf_seconds);
}

void CostToProto(const forecast::RunCost& cost, const forecast::ForecastPrior::Cost& prices, v1::RunStatus& status) {
  v1::RunCost* c = status.mutable_cost();
  c->set_spent_dollars(cost.spent_dollars);
  c->set_badput_dollars(cost.badput_dollars);
  c->set_energy_joules(cost.energy_joules);
  c->set_projected_dollars_p50(cost.projected_dollars_p50);
  c->set_projected_dollars_p90(cost.projected_dollars_p90);
  for (const forecast::RunCost::Category& k : cost.categories) {
    v1::CategoryCost* out = c->add_categories();
    out->set_category(k.name);
    out->set_dollars(k.dollars);
    out->set_energy_joules(k.joules);
  }
  c->set_gpu_hour_dollars(prices.gpu_hour_dollars);
  c->set_energy_dollars_per_mwh(prices.energy_dollars_per_mwh);
  c->set_reserved_gpus(prices.reserved_gpus);
}

}  // namespace flightplan::convert
