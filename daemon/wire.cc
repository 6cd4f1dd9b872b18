#include "daemon/wire.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "forecast/interval.h"
#include "text/hostlist.h"

namespace flightplan::daemon {

IngestEvent IngestEventFromProto(const v1::Event& event) {
  IngestEvent in;
  in.run = event.run();
  in.id = event.id();
  in.event = convert::EventFromProto(event);
  if (in.event.ok()) in.encoded = convert::Deterministic(event);
  return in;
}

PlanInput PlanInputFromProto(const v1::Plan& plan) {
  return PlanInput{convert::PlanFromProto(plan), convert::Deterministic(plan)};
}

absl::StatusOr<WhatIfQuery> WhatIfQueryFromProto(const v1::WhatIfRequest& request) {
  WhatIfQuery query;
  query.run = request.run();
  if (request.has_deadline()) query.deadline = convert::TimeFromProto(request.deadline());
  query.exclude_nodes.assign(request.exclude_nodes().begin(), request.exclude_nodes().end());
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
    query.variants.push_back(std::move(v));
  }
  return query;
}

RetractSpec RetractSpecFromProto(const v1::RetractRequest& request) {
  RetractSpec spec;
  spec.ids.assign(request.ids().begin(), request.ids().end());
  if (request.has_after()) spec.after = convert::TimeFromProto(request.after());
  spec.reason = request.reason();
  spec.dry_run = request.dry_run();
  return spec;
}

v1::RunStatus RunStatusToProto(const RunStatus& s) {
  v1::RunStatus status = convert::StatusToProto(s.run, s.snapshot, s.target_tokens, s.plan_tokens_per_second);
  status.set_plan_revision(s.plan_revision);
  status.set_plan_name(s.plan_name);
  status.mutable_progress()->set_plan_tokens(static_cast<int64_t>(s.plan_tokens_now));
  // Finish quantiles once a simulation exists (also one of a run without events).
  convert::ForecastToProto(s.forecast, s.simulated_events ? std::max<uint64_t>(*s.simulated_events, 1) : 0, status);
  v1::Forecast* fc = status.mutable_forecast();
  fc->set_forecast_stale(s.forecast_stale);
  if (s.simulated_events) fc->set_forecast_events(*s.simulated_events);
  if (s.simulated_as_of) {
    *fc->mutable_forecast_as_of() = convert::TimeToProto(*s.simulated_as_of);
    fc->set_forecast_age_seconds(std::max(0.0, absl::ToDoubleSeconds(s.forecast.as_of - *s.simulated_as_of)));
  }
  convert::CostToProto(s.cost, s.prices, status);
  for (const std::string& flag : s.flags) status.add_flags(flag);
  v1::Outage* outage = status.mutable_outage();
  outage->set_seconds(s.outage.seconds);
  outage->set_allowance_seconds(s.outage.allowance_seconds);
  if (s.outage.seconds > 0) *outage->mutable_since() = convert::TimeToProto(s.outage.since);
  v1::Reliability* r = status.mutable_reliability();
  if (s.checkpoints.last != absl::InfinitePast())
    *r->mutable_last_checkpoint_time() = convert::TimeToProto(s.checkpoints.last);
  r->set_unsaved_work_seconds(s.checkpoints.unsaved_work_seconds);
  r->set_observed_checkpoint_interval_seconds(s.checkpoints.observed_interval_seconds);
  v1::RunNodes* nodes = status.mutable_nodes();
  nodes->set_named(s.nodes.named);
  nodes->set_nodes(s.nodes.nodes);
  std::vector<std::string> suspects;
  for (const forecast::NodeRecord& n : s.nodes.suspects) {
    NodeVerdictToProto(n, nodes->add_suspects());
    suspects.push_back(n.node);
  }
  nodes->set_exclude(ExcludeOption(suspects));
  if (!s.nodes.named) nodes->set_note(kNoNodesNote);
  return status;
}

std::string ExcludeOption(const std::vector<std::string>& nodes) {
  return nodes.empty() ? "" : absl::StrCat("--exclude=", text::JoinHostlist(nodes));
}

void NodeVerdictToProto(const forecast::NodeRecord& r, v1::NodeVerdict* p) {
  p->set_node(r.node);
  p->set_attempts(r.attempts);
  p->set_node_hours(r.node_hours);
  p->set_failures(r.failures);
  p->set_slow_stretches(r.slow_stretches);
  p->set_suspect(r.suspect);
  p->set_reason(r.reason);
  p->set_evidence(r.evidence);
  p->set_expected_failures(r.expected_failures);
  p->set_p_value(r.p_value);
  for (const std::string& run : r.runs) p->add_runs(run);
}

v1::NodeLedger NodeLedgerToProto(const forecast::NodeLedger& ledger, uint32_t runs) {
  v1::NodeLedger out;
  std::vector<std::string> suspects;
  for (const forecast::NodeRecord& r : ledger.nodes) {
    NodeVerdictToProto(r, out.add_nodes());
    if (r.suspect) suspects.push_back(r.node);
  }
  out.set_exclude(ExcludeOption(suspects));
  out.set_node_hours(ledger.node_hours);
  out.set_failures(ledger.failures);
  out.set_fleet_rate_per_hour(ledger.fleet_rate_per_hour);
  out.set_tested(ledger.tested);
  out.set_threshold(ledger.threshold);
  out.set_runs_with_nodes(ledger.runs_with_nodes);
  out.set_runs(runs);
  return out;
}

namespace {

void OutcomeToProto(const forecast::Outcome& o, v1::WhatIfOutcome* p) {
  p->set_name(o.name);
  p->set_broken(o.broken);
  for (const std::string& e : o.errors) p->add_errors(e);
  if (o.broken) return;
  p->set_gpus(o.gpus);
  p->set_mfu(o.mfu);
  p->set_bubble_fraction(o.bubble_fraction);
  p->set_tokens_per_second(o.tokens_per_second);
  p->set_mtbf_seconds(o.mtbf_seconds);
  *p->mutable_finish_p10() = convert::TimeToProto(o.finish_p10);
  *p->mutable_finish_p50() = convert::TimeToProto(o.finish_p50);
  *p->mutable_finish_p90() = convert::TimeToProto(o.finish_p90);
  p->set_projected_budget_seconds(o.budget_projected_seconds);
  p->set_exhaustion_probability(o.exhaustion_probability);
  p->set_deadline_probability(o.deadline_probability);
  p->set_cost_p50_dollars(o.cost_p50_dollars);
  p->set_energy_p50_mwh(o.energy_p50_mwh);
  v1::TimeAhead* a = p->mutable_seconds_ahead();
  a->set_productive(o.ahead.productive);
  a->set_capacity(o.ahead.capacity);
  a->set_checkpoint(o.ahead.checkpoint);
  a->set_custom(o.ahead.custom);
  a->set_failures(o.ahead.failures);
  a->set_planned(o.ahead.planned);
  a->set_waiting(o.ahead.waiting);
}

}  // namespace

v1::WhatIfResponse WhatIfAnswerToProto(const WhatIfAnswer& answer) {
  v1::WhatIfResponse out;
  out.set_run(answer.run);
  *out.mutable_as_of() = convert::TimeToProto(answer.as_of);
  out.set_budget_seconds(answer.budget_seconds);
  for (const forecast::Outcome& o : answer.outcomes) OutcomeToProto(o, out.add_outcomes());
  if (answer.deadline_fleet) {
    const forecast::LiveDeadlineFleet& d = *answer.deadline_fleet;
    v1::WhatIfDeadlineFleet* p = out.mutable_deadline_fleet();
    p->set_met(d.met);
    if (d.fleet.gpus > 0 || d.fleet.broken) OutcomeToProto(d.fleet, p->mutable_fleet());
    p->set_smaller_gpus(d.smaller_gpus);
    if (d.smaller_gpus > 0) *p->mutable_smaller_finish_p90() = convert::TimeToProto(d.smaller_p90);
    p->set_explanation(d.explanation);
  }
  return out;
}

v1::RunSummary RunSummaryToProto(const RunView& view) {
  v1::RunSummary s;
  s.set_run(view.name);
  s.set_state(forecast::PhaseName(view.state.phase));
  s.set_tokens(view.state.tokens);
  s.set_target_tokens(static_cast<int64_t>(view.plan->spec.data.tokens));
  s.set_events(view.state.events);
  s.set_plan_revision(view.plan->revision);
  return s;
}

void BatchAckToProto(uint64_t sequence, const BatchResult& r, v1::BatchAck& ack) {
  ack.set_sequence(sequence);
  ack.set_accepted(r.accepted);
  ack.set_duplicates(r.duplicates);
  ack.set_code(static_cast<int32_t>(r.status.code()));
  ack.set_message(std::string(r.status.message()));
  ack.set_max_batch_events(static_cast<uint32_t>(BatchLimitOf(r.status)));
  for (const std::string& flag : r.flags) ack.add_flags(flag);
}

v1::Plan PlanToProto(const RunPlan& plan) {
  v1::Plan out;
  // The bytes were made from a v1::Plan by this binary or read back from the store, which
  // refused unreadable ones at recovery.
  (void)out.ParseFromString(plan.encoded);
  return out;
}

void RevisionToProto(const RunInfo& info, size_t i, v1::PlanRevision& out) {
  out.set_revision(info.plans[i]->revision);
  *out.mutable_created() = convert::TimeToProto(info.plan_created[i]);
  if (info.plan_effective[i]) *out.mutable_effective() = convert::TimeToProto(*info.plan_effective[i]);
  *out.mutable_plan() = PlanToProto(*info.plans[i]);
  *out.mutable_report() = convert::ReportToProto(info.plans[i]->report);
}

v1::RunInfo RunInfoToProto(const RunInfo& info) {
  v1::RunInfo out;
  out.set_run(info.run);
  for (size_t i = 0; i < info.plans.size(); ++i) RevisionToProto(info, i, *out.add_plans());
  for (const forecast::AttemptStart& a : info.attempts) {
    v1::Attempt* p = out.add_attempts();
    p->set_attempt(a.attempt);
    *p->mutable_started() = convert::TimeToProto(a.time);
    p->set_launch(a.launch);
  }
  out.set_attempt(info.attempt);
  if (info.latest_event != absl::InfinitePast()) *out.mutable_latest_event() = convert::TimeToProto(info.latest_event);
  return out;
}

void RetractResultToProto(const std::string& run, const RetractResult& r, v1::RetractResponse& out) {
  out.set_retraction_id(r.retraction_id);
  for (const RetractedEvent& e : r.events) {
    v1::RetractedEvent* p = out.add_events();
    p->set_seq(e.seq);
    p->set_key(e.key);
    *p->mutable_event() = convert::EventToProto(e.event, run);
  }
}

v1::ForecastHistory HistoryToProto(const std::string& run, const std::vector<storage::ForecastPoint>& points,
                                   const forecast::RunState* state) {
  v1::ForecastHistory out;
  out.set_run(run);
  out.mutable_points()->Reserve(static_cast<int>(points.size()));
  for (const storage::ForecastPoint& p : points) {
    v1::ForecastPoint* q = out.add_points();
    *q->mutable_as_of() = convert::TimeToProto(p.as_of);
    q->set_events(p.events);
    if (p.finish_p10) *q->mutable_finish_p10() = convert::TimeToProto(*p.finish_p10);
    if (p.finish_p50) *q->mutable_finish_p50() = convert::TimeToProto(*p.finish_p50);
    if (p.finish_p90) *q->mutable_finish_p90() = convert::TimeToProto(*p.finish_p90);
    q->set_budget_consumed_seconds(p.consumed_seconds);
    q->set_projected_at_finish_seconds(p.projected_at_finish_seconds);
    q->set_exhaustion_probability(p.exhaustion_probability);
    q->set_burn_rate(p.burn_rate);
    q->set_finished(p.finished);
    q->set_tokens(p.tokens);
    v1::TimeSeconds* t = q->mutable_time_seconds();
    t->set_productive(p.seconds[0]);
    t->set_checkpoint(p.seconds[1]);
    t->set_lost(p.seconds[2]);
    t->set_startup(p.seconds[3]);
    t->set_down_unplanned(p.seconds[4]);
    t->set_down_planned(p.seconds[5]);
    t->set_stalled(p.seconds[6]);
    t->set_capacity(p.seconds[7]);
    t->set_custom(p.seconds[8]);
    t->set_excluded(p.seconds[9]);
    double elapsed = 0;
    for (const double x : p.seconds) elapsed += x;
    t->set_elapsed(elapsed);
    q->set_slowdown_seconds(p.slowdown_seconds);
  }
  if (state != nullptr) {
    for (const forecast::InterruptionMark& m : state->interruption_marks) {
      v1::InterruptionMark* q = out.add_interruptions();
      *q->mutable_time() = convert::TimeToProto(m.time);
      q->set_cause(m.cause);
      q->set_planned(m.planned);
    }
    for (const forecast::SlowStretch& st : state->slowdown.stretches) {
      v1::SlowStretchMark* q = out.add_slowdowns();
      *q->mutable_start() = convert::TimeToProto(st.start);
      if (!st.active) *q->mutable_end() = convert::TimeToProto(st.end);
      q->set_active(st.active);
      q->set_factor(st.Factor());
      q->set_seconds(st.Cost());
    }
  }
  return out;
}

absl::Status IntervalStatus(const v1::GetStatusRequest& request, std::vector<forecast::LoggedEvent> events,
                            const forecast::FoldSettings& settings, v1::RunStatus& status) {
  if (!status.has_first_event_time()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run '", status.run(), "' has no events yet: an interval of it has no time"));
  }
  const absl::Time now = convert::TimeFromProto(status.as_of());
  const absl::Time from =
      request.has_from() ? convert::TimeFromProto(request.from()) : convert::TimeFromProto(status.first_event_time());
  const absl::Time to = request.has_to() ? convert::TimeFromProto(request.to()) : now;
  if (to <= from) {
    return absl::InvalidArgumentError(absl::StrCat("to ", forecast::FormatUtc(to), " is not after from ",
                                                   forecast::FormatUtc(from), ": an interval runs from from to to"));
  }
  if (from >= now) {
    return absl::InvalidArgumentError(
        absl::StrCat("from ", forecast::FormatUtc(from), " is not before the run's now ", forecast::FormatUtc(now)));
  }
  absl::StatusOr<forecast::IntervalAccounting> a =
      forecast::AccountInterval(std::move(events), settings, from, to, now);
  if (!a.ok()) return a.status();
  const forecast::TimeSeconds& x = a->seconds;
  convert::TimeSecondsToProto(x, a->custom_by_kind, a->elapsed_seconds, status.mutable_time_seconds());
  status.clear_interruptions();
  for (const forecast::InterruptionCount& c : a->interruptions) {
    v1::InterruptionCount* pc = status.add_interruptions();
    pc->set_cause(c.cause);
    pc->set_planned(c.planned);
    pc->set_count(c.count);
  }
  const double counted = a->elapsed_seconds - x.excluded;
  status.mutable_reliability()->set_goodput(counted > 0 ? x.productive / counted : 0);
  status.mutable_reliability()->set_goodput_counting_excluded(a->elapsed_seconds > 0 ? x.productive / a->elapsed_seconds
                                                                                     : 0);
  status.mutable_failure_budget()->set_consumed_seconds(a->failure_budget_consumed_seconds);
  *status.mutable_interval()->mutable_from() = convert::TimeToProto(a->from);
  *status.mutable_interval()->mutable_to() = convert::TimeToProto(a->to);
  return absl::OkStatus();
}

}  // namespace flightplan::daemon
