#include "forecast/whatif.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planner/plan_engine.h"

namespace flightplan::forecast {
namespace {

double Ratio(double a, double b) { return a > 0 && b > 0 && std::isfinite(a / b) ? a / b : 1.0; }

std::string When(absl::Time t) { return absl::FormatTime("%Y-%m-%d %H:%M UTC", t, absl::UTCTimeZone()); }

std::string Minutes(double seconds) {
  return seconds >= 60 && std::fmod(seconds, 60) == 0 ? absl::StrCat(seconds / 60, " min")
                                                      : absl::StrCat(seconds, " s");
}

}  // namespace

std::string Describe(const Variant& v) {
  if (!v.name.empty()) return v.name;
  std::vector<std::string> parts;
  if (v.gpus) parts.push_back(absl::StrCat(*v.gpus, " GPUs"));
  if (v.add_gpus) parts.push_back(absl::StrCat(*v.add_gpus >= 0 ? "+" : "", *v.add_gpus, " GPUs"));
  if (v.checkpoint_interval_seconds)
    parts.push_back(absl::StrCat("checkpoint every ", Minutes(*v.checkpoint_interval_seconds)));
  if (v.async_checkpoint) parts.push_back(*v.async_checkpoint ? "async checkpoints" : "sync checkpoints");
  if (v.node_mtbf_hours) parts.push_back(absl::StrCat("node MTBF ", *v.node_mtbf_hours, " h"));
  if (v.node_mtbf_factor) parts.push_back(absl::StrCat("node MTBF x", *v.node_mtbf_factor));
  if (v.restart_seconds) parts.push_back(absl::StrCat("restart ", Minutes(*v.restart_seconds)));
  if (v.mfu) parts.push_back(absl::StrCat("MFU ", *v.mfu));
  return parts.empty() ? "no change" : absl::StrJoin(parts, ", ");
}

std::vector<Outcome> WhatIf(const PlanSpec& plan, const RunState& state, absl::Time now,
                            const std::vector<Variant>& variants, std::optional<absl::Time> deadline,
                            const ForecastOptions& options) {
  const PlanReport base = planner::ComputePlan(plan);
  // The plan's end-to-end figure belongs to its layout: a variant keeps the efficiency
  // while busy and pays its own bubble (planner::ComputeVariant).
  const std::optional<double> figure_bubble = planner::FigureBubble(plan);
  ForecastPrior prior = PriorFromPlan(plan, base);
  if (deadline) prior.deadline = *deadline;
  const RunSnapshot snap = Snapshot(state, now);
  auto ckpt_per_compute = [](const PlanReport& r) {
    return r.schedule.active_compute_seconds > 0 ? r.checkpoint.overhead_seconds / r.schedule.active_compute_seconds
                                                 : 0.0;
  };
  // A change of checkpoint interval is a change from what the run does, not from the plan:
  // once the run has shown its cadence (the usual time between two saves), the overhead and
  // the rework per interruption are compared with the plan saving at that cadence. The
  // forecast's overhead is the run's own (its observed save cost), so a new interval scales
  // it by cadence over interval, as Daly's advice in the status weighs the observed cost.
  const PlanReport* cadence_base = &base;
  PlanReport at_cadence;
  if (state.typical_checkpoint_gap > 0) {
    // The interval is the work between two saves: the usual gap less the save's own blocking.
    const double blocking = state.checkpoint_count > 0 ? state.checkpoint_blocking_sum / state.checkpoint_count : 0.0;
    PlanSpec as_run = plan;
    as_run.checkpoint.interval_seconds =
        std::max(state.typical_checkpoint_gap - blocking, 0.5 * state.typical_checkpoint_gap);
    at_cadence = planner::ComputePlan(as_run);  // a reference for ratios: its findings do not apply
    cadence_base = &at_cadence;
  }

  auto forecast = [&](Outcome& out, const PlanReport& r, bool absolute_mtbf, bool interval_changed) {
    const PlanReport& ref = interval_changed ? *cadence_base : base;
    const double ref_ckpt = ckpt_per_compute(ref);
    ForecastPrior p = prior;
    p.change.rate_scale = Ratio(r.compute.tokens_per_second, base.compute.tokens_per_second);
    p.change.failure_scale = Ratio(base.failures.job_mtbf_seconds, r.failures.job_mtbf_seconds);
    if (absolute_mtbf && r.failures.job_mtbf_seconds > 0) p.change.failure_rate_ahead = 1 / r.failures.job_mtbf_seconds;
    p.change.loss_shift_seconds = r.failures.loss_per_interruption_seconds - ref.failures.loss_per_interruption_seconds;
    p.change.checkpoint_scale = ref_ckpt > 0 ? ckpt_per_compute(r) / ref_ckpt : 1.0;
    const Simulation sim = Simulate(state, p, now, options);
    const Forecast f = Combine(ForecastNow(state, p, now), sim);
    out.gpus = r.fleet.gpus;
    out.mfu = r.compute.mfu;
    out.bubble_fraction = r.compute.bubble_fraction;
    out.tokens_per_second = sim.forecast_tokens_per_second;
    out.mtbf_seconds =
        p.change.failure_rate_ahead ? r.failures.job_mtbf_seconds : sim.mtbf_seconds / p.change.failure_scale;
    out.finish_p10 = f.finish_p10;
    out.finish_p50 = f.finish_p50;
    out.finish_p90 = f.finish_p90;
    out.budget_projected_seconds = snap.failure_budget_consumed_seconds + sim.future_loss_p50_seconds;
    out.exhaustion_probability = sim.exhaustion_probability;
    out.deadline_probability = sim.deadline_probability;
    out.ahead = sim.ahead;
    // What is spent is spent (at the plan's prices); ahead, the changed fleet and its draw.
    const RunCost spent = CostOfRun(snap.seconds, prior.cost, f.as_of, f.as_of, f.as_of);
    ForecastPrior::Cost ahead = prior.cost;
    ahead.reserved_gpus = r.cost.reserved_gpus;
    ahead.training_watts = r.cost.training_facility_watts;
    const double to_p50 = std::max(0.0, absl::ToDoubleSeconds(f.finish_p50 - f.as_of));
    out.cost_p50_dollars = spent.spent_dollars + to_p50 * (ahead.reserved_gpus * ahead.gpu_hour_dollars / 3600.0 +
                                                           ahead.training_watts * ahead.energy_dollars_per_mwh / 3.6e9);
    out.energy_p50_mwh = (spent.energy_joules + to_p50 * ahead.training_watts) / 3.6e9;
  };

  std::vector<Outcome> out;
  Outcome baseline;
  baseline.name = "baseline";
  forecast(baseline, base, false, false);
  out.push_back(std::move(baseline));

  for (const Variant& v : variants) {
    Outcome o;
    o.name = Describe(v);
    PlanSpec changed = plan;
    if (v.gpus || v.add_gpus) {
      const int64_t gpus = v.gpus ? static_cast<int64_t>(*v.gpus) : static_cast<int64_t>(plan.fleet.gpus) + *v.add_gpus;
      const uint64_t replica =
          uint64_t{plan.layout.tp.value_or(1)} * plan.layout.pp.value_or(1) * plan.layout.cp.value_or(1);
      if (!plan.phases.empty()) {
        o.errors.push_back("the plan is in phases, each with its own fleet: change the fleet in the phases' plan");
      } else if (gpus <= 0) {
        o.errors.push_back(absl::StrCat("fleet.gpus ", gpus, ": a fleet needs GPUs"));
      } else if (!planner::SetFleetHoldingBatch(changed, static_cast<uint64_t>(gpus), base.batch.sequences_per_step)) {
        o.errors.push_back(
            static_cast<uint64_t>(gpus) % std::max<uint64_t>(replica, 1) != 0
                ? absl::StrCat("fleet.gpus ", gpus, " is not whole replicas of tp x pp x cp = ", replica, " GPUs")
                : absl::StrCat("fleet.gpus ", gpus, " gives dp ", static_cast<uint64_t>(gpus) / replica,
                               ", which does not divide the global batch of ", base.batch.sequences_per_step,
                               " sequences (the recipe holds it)"));
      }
    }
    if (v.checkpoint_interval_seconds) changed.checkpoint.interval_seconds = *v.checkpoint_interval_seconds;
    if (v.async_checkpoint) changed.checkpoint.async = *v.async_checkpoint;
    if (v.node_mtbf_hours && v.node_mtbf_factor) {
      o.errors.push_back("node_mtbf_hours and node_mtbf_factor: give one (the MTBF ahead, or a factor on the run's)");
    } else if (v.node_mtbf_hours) {
      changed.failures.node_mtbf_hours = *v.node_mtbf_hours;
      changed.failures.failures_per_1000_node_days.reset();
    } else if (v.node_mtbf_factor) {
      // The plan's node MTBF, however it was given, times the factor.
      const double node_mtbf = base.failures.node_mtbf_seconds / 3600;
      if (!(*v.node_mtbf_factor > 0) || !(node_mtbf > 0)) {
        o.errors.push_back(absl::StrCat("node_mtbf_factor ", *v.node_mtbf_factor, ": a factor needs to be positive"));
      } else {
        changed.failures.node_mtbf_hours = node_mtbf * *v.node_mtbf_factor;
        changed.failures.failures_per_1000_node_days.reset();
      }
    }
    if (v.restart_seconds) changed.failures.restart_seconds = *v.restart_seconds;
    if (v.mfu) {
      // MFU end to end, as the field means it: it replaces whichever figure the plan gave.
      changed.efficiency.mfu = *v.mfu;
      changed.efficiency.hfu.reset();
      changed.efficiency.busy_mfu.reset();
      changed.efficiency.busy_hfu.reset();
    }
    // A typed MFU is the variant's own, end to end on its layout.
    const PlanReport r = planner::ComputeVariant(changed, v.mfu ? std::nullopt : figure_bubble);
    for (const planner::Finding& f : r.findings) {
      // The plan's own deadline is the forecast's question, not a rule the change breaks.
      if (f.severity == planner::Severity::kError && f.code != "DEADLINE_MISSED") {
        o.errors.push_back(absl::StrCat(f.code, ": ", f.message));
      }
    }
    o.broken = !o.errors.empty();
    if (!o.broken) forecast(o, r, v.node_mtbf_hours.has_value(), v.checkpoint_interval_seconds.has_value());
    out.push_back(std::move(o));
  }
  return out;
}

LiveDeadlineFleet FleetForDeadline(const PlanSpec& plan, const RunState& state, absl::Time now, absl::Time deadline,
                                   uint32_t max_gpus, const ForecastOptions& options) {
  LiveDeadlineFleet out;
  const uint64_t replica =
      uint64_t{plan.layout.tp.value_or(1)} * plan.layout.pp.value_or(1) * plan.layout.cp.value_or(1);
  const uint32_t per_node = plan.hardware.gpus_per_node.value_or(8);
  const uint64_t batch = planner::ComputePlan(plan).batch.sequences_per_step;
  if (!plan.phases.empty() || replica == 0 || per_node == 0 || batch == 0) {
    out.explanation = "the plan is in phases or has no valid layout or batch: no fleet is searched.";
    return out;
  }
  std::vector<Variant> candidates;
  for (uint64_t dp = 1; dp <= batch && dp * replica <= max_gpus; ++dp) {
    if (batch % dp != 0 || (dp * replica) % per_node != 0) continue;
    Variant v;
    v.gpus = static_cast<uint32_t>(dp * replica);
    candidates.push_back(v);
  }
  if (candidates.empty()) {
    out.explanation = absl::StrCat("no fleet of whole ", replica, "-GPU replicas on whole ", per_node,
                                   "-GPU nodes holds the batch of ", batch, " sequences up to ", max_gpus, " GPUs.");
    return out;
  }
  // Every candidate in one call (the baseline simulated once), then the smallest that meets it.
  const std::vector<Outcome> all = WhatIf(plan, state, now, candidates, deadline, options);
  const std::vector<Outcome> tried(all.begin() + 1, all.end());
  const Outcome* best = nullptr;
  for (size_t i = 0; i < tried.size(); ++i) {
    const Outcome& t = tried[i];
    if (t.broken) continue;
    if (t.finish_p90 <= deadline) {
      out.met = true;
      out.fleet = t;
      for (size_t j = i; j-- > 0;) {
        if (!tried[j].broken) {
          out.smaller_gpus = tried[j].gpus;
          out.smaller_p90 = tried[j].finish_p90;
          break;
        }
      }
      out.explanation = out.smaller_gpus > 0
                            ? absl::StrCat(t.gpus, " GPUs finish by the deadline at P90 (", When(t.finish_p90),
                                           "); the next smaller "
                                           "valid fleet, ",
                                           out.smaller_gpus, " GPUs, finishes at P90 ", When(out.smaller_p90), ".")
                            : absl::StrCat(t.gpus, " GPUs, the smallest valid fleet, finish by the deadline at P90 (",
                                           When(t.finish_p90), ").");
      return out;
    }
    if (best == nullptr || t.finish_p90 < best->finish_p90) best = &t;
  }
  if (best != nullptr) out.fleet = *best;
  out.explanation = absl::StrCat(
      "no fleet up to ", max_gpus, " GPUs that holds the batch of ", batch,
      " sequences finishes by the deadline at P90",
      best ? absl::StrCat(": the fastest, ", best->gpus, " GPUs, at P90 ", When(best->finish_p90)) : std::string(),
      ".");
  return out;
}

}  // namespace flightplan::forecast
