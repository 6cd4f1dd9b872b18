// The cheap part of a forecast, at any read (ForecastNow): throughput, the failure budget
// and its burn over windows, reliability, from the run's state alone.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "forecast/forecaster.h"
#include "forecast/forecaster_internal.h"
#include "planner/formulas.h"

namespace flightplan::forecast {

using namespace forecaster_internal;  // NOLINT(build/namespaces): this folder's own helpers

Forecast ForecastNow(const RunState& s, const ForecastPrior& prior, absl::Time now) {
  const RunSnapshot snap = Snapshot(s, now);
  Forecast f;
  f.as_of = snap.as_of == absl::InfinitePast() ? now : snap.as_of;
  f.events = s.events;
  f.finished = s.phase == Phase::kFinished;
  f.tokens_per_second = snap.tokens_per_second;
  f.recent_tokens_per_second = snap.recent_tokens_per_second;
  f.plan_tokens_per_second = prior.plan_tokens_per_second;
  f.plan_finish = prior.plan_finish;
  f.plan_expected_finish = prior.plan_expected_finish;
  f.deadline = prior.deadline;
  f.finish_p10 = f.finish_p50 = f.finish_p90 = f.finished ? s.last_time : prior.plan_finish;

  // Failure budget.
  f.budget_seconds = prior.budget_seconds;
  f.schedule_seconds = prior.plan_total_seconds;
  f.consumed_seconds = snap.failure_budget_consumed_seconds;
  f.remaining_seconds = f.budget_seconds - f.consumed_seconds;
  // Excluded windows are outside the budget's clock and goodput's denominator.
  const double elapsed = std::max(0.0, snap.elapsed_seconds - snap.seconds.excluded);
  auto burn = [&](double consumed, double window) {
    return Div(Div(consumed, prior.budget_seconds), Div(window, prior.plan_total_seconds));
  };
  f.burn_rate = burn(f.consumed_seconds, elapsed);
  const double windows[] = {3600, 6 * 3600, 86400, 3 * 86400};
  double* outs[] = {&f.burn_rate_1h, &f.burn_rate_6h, &f.burn_rate_1d, &f.burn_rate_3d};
  for (int i = 0; i < 4; ++i) {
    const double window = std::min(windows[i], elapsed);
    const double before = ConsumedAt(s, f.as_of - absl::Seconds(window), f.consumed_seconds, f.as_of);
    *outs[i] = burn(f.consumed_seconds - before, window);
  }
  f.projected_at_finish_seconds = f.consumed_seconds;
  if (prior.budget_seconds <= 0) {
    // No budget to run out of.
  } else if (f.remaining_seconds <= 0) {
    // Already spent: when it ran out, between the samples (and now, with what is consumed
    // now), interpolated.
    absl::Time prev_time = s.first_time;
    double prev = 0;
    auto crossing = [&](absl::Time t, double consumed) -> bool {
      if (consumed < prior.budget_seconds) {
        prev_time = t;
        prev = consumed;
        return false;
      }
      const double span = absl::ToDoubleSeconds(t - prev_time);
      const double share = consumed > prev ? (prior.budget_seconds - prev) / (consumed - prev) : 1.0;
      f.exhausted_at = prev_time + absl::Seconds(span * std::clamp(share, 0.0, 1.0));
      return true;
    };
    bool found = false;
    for (const BudgetSample& b : s.budget_samples) {
      if ((found = crossing(b.time, b.consumed_seconds))) break;
    }
    if (!found) crossing(f.as_of, f.consumed_seconds);
  } else if (f.consumed_seconds > 0 && elapsed > 0 && !f.finished) {
    const double per_second = f.consumed_seconds / elapsed;
    f.exhausted_at = AtOffset(f.as_of, f.remaining_seconds / per_second);
  }

  // Reliability.
  f.goodput = Div(snap.seconds.productive, elapsed);
  f.goodput_counting_excluded = Div(snap.seconds.productive, snap.elapsed_seconds);
  // Tokens per productive second are the plan's fleet's (a launch on fewer GPUs charges the
  // missing share to capacity), so the plan's GPUs are the denominator's.
  const double peak = static_cast<double>(prior.plan_gpus) * prior.peak_flops_per_gpu;
  f.mfu_lifetime = Div(prior.flops_per_token * snap.tokens_per_second, peak);
  f.mfu_last_hour = Div(prior.flops_per_token * snap.recent_tokens_per_second, peak);
  f.plan_gpus = prior.plan_gpus;
  f.mfu_plan = Div(prior.flops_per_token * prior.plan_tokens_per_second, peak);
  f.observed_mtbf_seconds = s.unplanned_interruptions > 0 ? snap.running_seconds / s.unplanned_interruptions : 0;
  f.plan_mtbf_seconds = prior.job_mtbf_seconds;
  // The rate counts incidents (a crash during the recovery from another is one incident,
  // with one loss), so that rate x loss counts each second once.
  const double alpha = kPriorInterruptions + Incidents(s);
  const double beta = kPriorInterruptions * prior.job_mtbf_seconds + snap.running_seconds;
  f.posterior_mtbf_seconds = Div(beta, alpha);
  f.mean_loss_per_interruption_seconds =
      s.incidents > 0 ? s.incident_loss_sum / s.incidents : prior.loss_per_interruption_seconds;
  const double observed_blocking = s.checkpoint_count > 0 ? s.checkpoint_blocking_sum / s.checkpoint_count : 0;
  // Async saves may block for ~0 s; Daly needs a cost, so the plan's then.
  const double blocking = observed_blocking > 0 ? observed_blocking : prior.checkpoint_blocking_seconds;
  if (f.posterior_mtbf_seconds > 0) {
    f.recommended_checkpoint_interval_seconds = planner::DalyIntervalSeconds(blocking, f.posterior_mtbf_seconds);
  }
  f.plan_checkpoint_interval_seconds = prior.checkpoint_interval_seconds;

  // Naive estimates.
  const double remaining_tokens = static_cast<double>(std::max<int64_t>(0, prior.target_tokens - s.tokens));
  const double lifetime_rate = Div(static_cast<double>(s.tokens), elapsed);
  if (lifetime_rate > 0) f.naive_lifetime_finish = AtOffset(f.as_of, remaining_tokens / lifetime_rate);
  const double hour_rate = LastHourWallRate(s, f.as_of);
  if (hour_rate > 0) f.naive_recent_finish = AtOffset(f.as_of, remaining_tokens / hour_rate);
  if (f.finished) {
    f.naive_lifetime_finish = f.naive_recent_finish = s.last_time;
    f.slip_seconds = absl::ToDoubleSeconds(s.last_time - prior.plan_expected_finish);
    f.deadline_probability = prior.deadline && s.last_time <= *prior.deadline ? 1 : 0;
    f.exhaustion_probability = prior.budget_seconds > 0 && f.remaining_seconds < 0 ? 1 : 0;
  }
  return f;
}

}  // namespace flightplan::forecast
