// The plan as the forecast's prior (PriorFromPlan, FoldSettingsFor), where the plan says
// the run should be (PlannedTokensAt, PlannedActiveSeconds), what it costs (CostOfRun), and
// the status's flags against the plan (PlausibilityFlags).
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "forecast/forecaster.h"
#include "forecast/forecaster_internal.h"
#include "forecast/outage.h"

namespace flightplan::forecast {

using namespace forecaster_internal;  // NOLINT(build/namespaces): this folder's own helpers

ForecastPrior PriorFromPlan(const PlanSpec& plan, const PlanReport& r) {
  ForecastPrior p;
  p.target_tokens = static_cast<int64_t>(plan.data.tokens);
  p.plan_start = r.schedule.start_time;
  p.plan_finish = r.schedule.finish_time;
  p.plan_expected_finish = r.schedule.expected_finish_time;
  p.deadline = plan.deadline;
  p.plan_tokens_per_second = r.compute.tokens_per_second;
  p.peak_tokens_per_second = r.compute.mfu > 0 ? r.compute.tokens_per_second / r.compute.mfu : 0;
  p.gpus_per_node = r.fleet.nodes > 0 && r.fleet.gpus % r.fleet.nodes == 0 ? r.fleet.gpus / r.fleet.nodes : 0;
  p.plan_gpus = static_cast<uint32_t>(r.fleet.gpus);
  p.flops_per_token = r.compute.flops_per_token;
  p.peak_flops_per_gpu = plan.hardware.peak_flops;
  p.plan_total_seconds = r.schedule.total_seconds;
  p.plan_active_seconds = r.schedule.active_compute_seconds;
  p.plan_checkpoint_seconds = r.schedule.checkpoint_seconds;
  p.plan_availability_seconds = r.schedule.availability_seconds;
  p.plan_custom_seconds = r.schedule.custom_seconds;
  p.spare_nodes = plan.fleet.spare_nodes;
  p.node_repair_seconds = plan.failures.spare_repair_hours.value_or(planner::kDefaultRepairHours) * 3600.0;
  p.budget_seconds = r.failures.budget_seconds;
  p.job_mtbf_seconds = r.failures.job_mtbf_seconds;
  p.loss_per_interruption_seconds = r.failures.loss_per_interruption_seconds;
  p.checkpoint_blocking_seconds = r.checkpoint.blocking_seconds;
  p.checkpoint_interval_seconds = r.checkpoint.interval_seconds;
  p.slowdown_fix_seconds = plan.failures.slowdown_fix_hours.value_or(0) * 3600.0;
  p.crisis_fix_seconds = plan.failures.crisis_fix_days.value_or(0) * 86400.0;
  p.outage_allowance_seconds =
      OutageAllowanceSeconds(plan.failures.detect_seconds.value_or(planner::kDefaultDetectSeconds),
                             plan.failures.restart_seconds.value_or(planner::kDefaultRestartSeconds));
  p.cost = {plan.cost.gpu_hour_dollars, plan.cost.energy_dollars_per_mwh, r.cost.reserved_gpus,
            r.cost.training_facility_watts, r.cost.idle_facility_watts};
  for (const PlanReport::Phase& ph : r.phases) {
    p.phases.push_back(
        {static_cast<double>(ph.tokens_before + ph.tokens), ph.schedule_end_seconds, ph.tokens_per_second});
  }
  return p;
}

FoldSettings FoldSettingsFor(const ForecastPrior& prior, uint32_t max_causes) {
  FoldSettings f;
  f.max_causes = max_causes;
  f.peak_tokens_per_second = prior.peak_tokens_per_second;
  f.gpus_per_node = prior.gpus_per_node;
  f.plan_gpus = prior.plan_gpus;
  // 1%: as the detector's test of the tokens per step (slowdown.cc), a change the plan
  // makes by design is one well above the noise of a rate the plan computes.
  auto differs = [](double a, double b) { return a > 0 && b > 0 && std::abs(a / b - 1) > 0.01; };
  for (size_t i = 0; i + 1 < prior.phases.size(); ++i) {
    if (differs(prior.phases[i + 1].tokens_per_second, prior.phases[i].tokens_per_second)) {
      f.pace_break_tokens.push_back(prior.phases[i].tokens_end);
    }
  }
  if (prior.revised_at && differs(prior.revision_rate_scale, 1)) f.pace_break_time = prior.revised_at;
  return f;
}

RunCost CostOfRun(const TimeSeconds& seconds, const ForecastPrior::Cost& cost, absl::Time as_of, absl::Time finish_p50,
                  absl::Time finish_p90) {
  RunCost out;
  const double gpu_dollars_per_second = cost.reserved_gpus * cost.gpu_hour_dollars / 3600.0;
  const double dollars_per_joule = cost.energy_dollars_per_mwh / 3.6e9;
  auto add = [&](const char* name, double s, bool running) {
    RunCost::Category c;
    c.name = name;
    c.joules = s * (running ? cost.training_watts : cost.idle_watts);
    c.dollars = s * gpu_dollars_per_second + c.joules * dollars_per_joule;
    out.spent_dollars += c.dollars;
    out.energy_joules += c.joules;
    if (std::string_view(name) != "productive") out.badput_dollars += c.dollars;
    out.categories.push_back(std::move(c));
  };
  add("productive", seconds.productive, true);
  add("checkpoint", seconds.checkpoint, true);
  add("lost", seconds.lost, true);
  add("startup", seconds.startup, true);
  add("down_unplanned", seconds.down_unplanned, false);
  add("down_planned", seconds.down_planned, false);
  add("stalled", seconds.stalled, true);
  add("capacity", seconds.capacity, true);
  add("custom", seconds.custom, true);
  // An excluded window is left out of goodput, not out of the bill; whatever ran in it, at idle power.
  add("excluded", seconds.excluded, false);
  const double ahead_rate = gpu_dollars_per_second + cost.training_watts * dollars_per_joule;
  auto ahead = [&](absl::Time finish) {
    const double s = absl::ToDoubleSeconds(finish - as_of);
    return std::isfinite(s) && s > 0 ? s * ahead_rate : 0.0;
  };
  out.projected_dollars_p50 = out.spent_dollars + ahead(finish_p50);
  out.projected_dollars_p90 = out.spent_dollars + ahead(finish_p90);
  return out;
}

double PlannedTokensAt(const ForecastPrior& prior, absl::Time t) {
  const double target = static_cast<double>(prior.target_tokens);
  const double into = absl::ToDoubleSeconds(t - prior.plan_start);
  if (!(into > 0)) return 0;
  if (prior.phases.empty()) {
    const double span = absl::ToDoubleSeconds(prior.plan_finish - prior.plan_start);
    return span > 0 ? std::min(1.0, into / span) * target : 0;
  }
  double tokens = 0, start = 0;
  for (const ForecastPrior::Phase& ph : prior.phases) {
    if (into < ph.schedule_end_seconds) {
      const double span = ph.schedule_end_seconds - start;
      return tokens + (span > 0 ? (into - start) / span : 1) * (ph.tokens_end - tokens);
    }
    tokens = ph.tokens_end;
    start = ph.schedule_end_seconds;
  }
  return std::min(tokens, target);
}

double PlannedActiveSeconds(const ForecastPrior& prior, double from, double to) {
  if (!(to > from)) return 0;
  if (prior.phases.empty()) return Div(to - from, prior.plan_tokens_per_second);
  double seconds = 0, begin = 0;
  for (const ForecastPrior::Phase& ph : prior.phases) {
    const double lo = std::max(from, begin), hi = std::min(to, ph.tokens_end);
    if (hi > lo) seconds += Div(hi - lo, ph.tokens_per_second);
    begin = ph.tokens_end;
  }
  // Tokens past the last phase (the target overshot) at the last phase's rate.
  if (to > begin) seconds += Div(to - std::max(from, begin), prior.phases.back().tokens_per_second);
  return seconds;
}

std::vector<std::string> PlausibilityFlags(const RunSnapshot& snap, const ForecastPrior& prior) {
  std::vector<std::string> flags;
  const double target = static_cast<double>(prior.target_tokens);
  const double tokens = static_cast<double>(snap.tokens);
  // The last step may overshoot the target by a fraction of a step; 1% beyond it is not that.
  if (target > 0 && tokens > 1.01 * target) {
    flags.push_back(
        absl::StrFormat("progress %.4g tokens is %.0f%% of the target %.4g: check the tokens "
                        "reported per step, or the plan's data.tokens",
                        tokens, 100 * tokens / target, target));
  }
  // Ten minutes of work before a rate is judged.
  if (prior.peak_tokens_per_second > 0 && snap.seconds.productive >= 600 &&
      snap.tokens_per_second > prior.peak_tokens_per_second) {
    flags.push_back(
        absl::StrFormat("throughput %.4g tokens/s is above what the plan's fleet does at 100%% "
                        "MFU (%.4g tokens/s): check the tokens reported per step, or the plan's "
                        "fleet and model",
                        snap.tokens_per_second, prior.peak_tokens_per_second));
  }
  if (snap.phase == Phase::kFinished && target > 0 && tokens < 0.99 * target) {
    flags.push_back(absl::StrFormat("run_finished at %.2f%% of the target (%.4g of %.4g tokens)", 100 * tokens / target,
                                    tokens, target));
  }
  return flags;
}

}  // namespace flightplan::forecast
