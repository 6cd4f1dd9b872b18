#include "forecast/forecaster.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "forecast/formulas.h"

namespace flightplan::forecast {
namespace {

// Prior strength of the plan's failure rate, in interruptions: the evidence outweighs the
// plan once a few real interruptions have been seen (Gamma-Poisson conjugate update).
constexpr double kPriorInterruptions = 2.0;
// Prior strength of the plan's loss per interruption, in incidents.
constexpr double kPriorIncidents = 2.0;
// Spread (log-normal sigma) of the plan's loss per interruption before any is observed.
constexpr double kPlanLossSigma = 0.5;
// Throughput: uncertainty of the plan's rate before any is observed (plans are optimistic
// by about this much), and a floor for the observed one.
constexpr double kPlanRateSigma = 0.15;
constexpr double kObservedRateSigma = 0.01;
// Productive seconds of evidence at which observed throughput outweighs the plan's.
constexpr double kRateEvidenceSeconds = 900;
// The recent rate counts as a shift when it differs from the lifetime rate by this much.
constexpr double kShiftThreshold = 0.03;
// Unforeseeable change ahead: extra log-normal spread of the future rate per unit of
// remaining fraction of the run (a slower rack, a new data mix happen; the past can't say
// when).
constexpr double kFutureRateSigma = 0.06;

double Div(double a, double b) { return b > 0 ? a / b : 0; }

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

double Incidents(const RunState& s) { return s.incidents + (s.incident_open ? 1 : 0); }

absl::Time AtOffset(absl::Time t, double seconds) {
  if (!std::isfinite(seconds)) return absl::InfiniteFuture();
  return t + absl::Seconds(seconds);
}

// Budget consumed at `t`, from the samples (linear between them; 0 before the run).
double ConsumedAt(const RunState& s, absl::Time t, double consumed_now, absl::Time now) {
  if (t >= now) return consumed_now;
  if (s.budget_samples.empty() || t <= s.first_time) return 0;
  const BudgetSample* before = nullptr;
  const BudgetSample* after = nullptr;
  for (const BudgetSample& b : s.budget_samples) {
    if (b.time <= t) before = &b;
    if (b.time > t) {
      after = &b;
      break;
    }
  }
  if (before == nullptr) return 0;
  const double c1 = before->consumed_seconds;
  const double c2 = after ? after->consumed_seconds : consumed_now;
  const absl::Time t2 = after ? after->time : now;
  const double span = absl::ToDoubleSeconds(t2 - before->time);
  if (span <= 0) return c1;
  return c1 + (c2 - c1) * absl::ToDoubleSeconds(t - before->time) / span;
}

// The lineage's tokens per wall second over the last hour (0 before an hour has passed).
double LastHourWallRate(const RunState& s, absl::Time now) {
  const absl::Time from = now - absl::Hours(1);
  if (s.wall_tokens.empty() || s.wall_tokens.front().time > from) return 0;
  int64_t then = s.wall_tokens.front().tokens;
  for (const TokenSample& t : s.wall_tokens) {
    if (t.time <= from) then = t.tokens;
  }
  return std::max(0.0, static_cast<double>(s.tokens - then) / 3600.0);
}

}  // namespace

ForecastPrior PriorFromPlan(const PlanSpec& plan, const PlanReport& r) {
  ForecastPrior p;
  p.target_tokens = static_cast<int64_t>(plan.data.tokens);
  p.plan_start = r.schedule.start_time;
  p.plan_finish = r.schedule.finish_time;
  p.deadline = plan.deadline;
  p.plan_tokens_per_second = r.compute.tokens_per_second;
  p.plan_total_seconds = r.schedule.total_seconds;
  p.plan_active_seconds = r.schedule.active_compute_seconds;
  p.plan_checkpoint_seconds = r.schedule.checkpoint_seconds;
  p.plan_availability_seconds = r.schedule.availability_seconds;
  p.budget_seconds = r.failures.budget_seconds;
  p.job_mtbf_seconds = r.failures.job_mtbf_seconds;
  p.loss_per_interruption_seconds = r.failures.loss_per_interruption_seconds;
  p.checkpoint_blocking_seconds = r.checkpoint.blocking_seconds;
  p.checkpoint_interval_seconds = r.checkpoint.interval_seconds;
  return p;
}

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
  f.deadline = prior.deadline;
  f.finish_p10 = f.finish_p50 = f.finish_p90 = f.finished ? s.last_time : prior.plan_finish;

  // Failure budget.
  f.budget_seconds = prior.budget_seconds;
  f.schedule_seconds = prior.plan_total_seconds;
  f.consumed_seconds = snap.failure_budget_consumed_seconds;
  f.remaining_seconds = f.budget_seconds - f.consumed_seconds;
  const double elapsed = snap.elapsed_seconds;
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
  f.observed_mtbf_seconds =
      s.unplanned_interruptions > 0 ? snap.running_seconds / s.unplanned_interruptions : 0;
  f.plan_mtbf_seconds = prior.job_mtbf_seconds;
  // The rate counts incidents (a crash during the recovery from another is one incident,
  // with one loss), so that rate x loss counts each second once.
  const double alpha = kPriorInterruptions + Incidents(s);
  const double beta = kPriorInterruptions * prior.job_mtbf_seconds + snap.running_seconds;
  f.posterior_mtbf_seconds = Div(beta, alpha);
  f.mean_loss_per_interruption_seconds =
      s.incidents > 0 ? s.incident_loss_sum / s.incidents : prior.loss_per_interruption_seconds;
  const double observed_blocking =
      s.checkpoint_count > 0 ? s.checkpoint_blocking_sum / s.checkpoint_count : 0;
  // Async saves may block for ~0 s; Daly needs a cost, so the plan's then.
  const double blocking = observed_blocking > 0 ? observed_blocking : prior.checkpoint_blocking_seconds;
  if (f.posterior_mtbf_seconds > 0) {
    f.recommended_checkpoint_interval_seconds =
        DalyIntervalSeconds(blocking, f.posterior_mtbf_seconds);
  }
  f.plan_checkpoint_interval_seconds = prior.checkpoint_interval_seconds;

  // Naive estimates.
  const double remaining_tokens =
      static_cast<double>(std::max<int64_t>(0, prior.target_tokens - s.tokens));
  const double lifetime_rate = Div(static_cast<double>(s.tokens), elapsed);
  if (lifetime_rate > 0) f.naive_lifetime_finish = AtOffset(f.as_of, remaining_tokens / lifetime_rate);
  const double hour_rate = LastHourWallRate(s, f.as_of);
  if (hour_rate > 0) f.naive_recent_finish = AtOffset(f.as_of, remaining_tokens / hour_rate);
  if (f.finished) {
    f.naive_lifetime_finish = f.naive_recent_finish = s.last_time;
    f.slip_seconds = absl::ToDoubleSeconds(s.last_time - prior.plan_finish);
    f.deadline_probability = prior.deadline && s.last_time <= *prior.deadline ? 1 : 0;
    f.exhaustion_probability = prior.budget_seconds > 0 && f.remaining_seconds < 0 ? 1 : 0;
  }
  return f;
}

Simulation Simulate(const RunState& s, const ForecastPrior& prior, absl::Time now,
                    const ForecastOptions& options) {
  const RunSnapshot snap = Snapshot(s, now);
  Simulation sim;
  sim.as_of = snap.as_of == absl::InfinitePast() ? now : snap.as_of;
  sim.events = s.events;
  if (s.phase == Phase::kFinished) {
    sim.finish_p10_seconds = sim.finish_p50_seconds = sim.finish_p90_seconds =
        absl::ToDoubleSeconds(s.last_time - sim.as_of);
    sim.exhaustion_probability = snap.failure_budget_consumed_seconds > prior.budget_seconds ? 1 : 0;
    sim.deadline_probability = prior.deadline && s.last_time <= *prior.deadline ? 1 : 0;
    return sim;
  }
  // Before the run starts, its clock starts at the plan's start.
  double wait = 0;
  if (s.events == 0 && prior.plan_start > sim.as_of) wait = absl::ToDoubleSeconds(prior.plan_start - sim.as_of);

  // Throughput: the plan's rate until the run has shown its own; then the lifetime rate,
  // or the recent one when it has shifted away from it.
  const double plan_rate = prior.plan_tokens_per_second;
  const double produced = snap.seconds.productive;
  const double lifetime = snap.tokens_per_second;
  const double recent = snap.recent_tokens_per_second;
  double observed = lifetime;
  if (lifetime > 0 && recent > 0) {
    sim.throughput_shifted = std::fabs(recent / lifetime - 1) > kShiftThreshold;
    observed = sim.throughput_shifted ? recent : std::exp(0.5 * std::log(recent) + 0.5 * std::log(lifetime));
  }
  const double w_obs = observed > 0 ? produced / (produced + kRateEvidenceSeconds) : 0;
  const double center = w_obs > 0 ? std::exp(w_obs * std::log(observed) + (1 - w_obs) * std::log(plan_rate))
                                  : plan_rate;
  sim.forecast_tokens_per_second = center;
  const double disagreement = (lifetime > 0 && recent > 0) ? std::fabs(std::log(recent / lifetime)) : 0;
  const double remaining_tokens =
      static_cast<double>(std::max<int64_t>(0, prior.target_tokens - s.tokens));
  const double remaining_fraction = Div(remaining_tokens, static_cast<double>(prior.target_tokens));
  const double rate_sigma = std::sqrt(std::pow((1 - w_obs) * kPlanRateSigma, 2) +
                                      std::pow(kObservedRateSigma + disagreement, 2) +
                                      std::pow(kFutureRateSigma * remaining_fraction, 2));

  // Overheads ahead, in proportion to the compute ahead: checkpoints as observed (the
  // plan's until an hour of evidence), planned downtime as the plan allots.
  const double plan_ckpt_ratio = Div(prior.plan_checkpoint_seconds, prior.plan_active_seconds);
  const double obs_ckpt_ratio = Div(snap.seconds.checkpoint, snap.seconds.productive);
  const double ckpt_ratio = w_obs * obs_ckpt_ratio + (1 - w_obs) * plan_ckpt_ratio;
  const double maintenance_ratio = Div(prior.plan_availability_seconds, prior.plan_active_seconds);

  // Failures: Gamma-Poisson rate per running second; losses from the observed incidents
  // (bootstrap, heavy tails kept) mixed with the plan's.
  const double alpha = kPriorInterruptions + Incidents(s);
  const double beta = kPriorInterruptions * prior.job_mtbf_seconds + snap.running_seconds;
  const std::vector<double> losses(s.incident_losses.begin(), s.incident_losses.end());
  const double p_observed_loss =
      Div(static_cast<double>(losses.size()), static_cast<double>(losses.size()) + kPriorIncidents);
  const double plan_loss = std::max(1.0, prior.loss_per_interruption_seconds);
  // The incident in progress, if the run is down or restarting after an unplanned stop.
  const bool in_incident = s.incident_open && (s.phase == Phase::kDown || s.phase == Phase::kStarting);
  const double incident_so_far =
      in_incident ? std::max(0.0, snap.failure_budget_consumed_seconds - s.incident_start_budget) : 0;
  // Planned downtime in progress: assume it lasts as long again (no better evidence).
  double planned_down_left = 0;
  if (s.phase == Phase::kDown && s.down_planned) {
    planned_down_left = absl::ToDoubleSeconds(sim.as_of - s.last_time);
  }

  // Seeded by the history: the same run state gives the same forecast.
  std::seed_seq seed{static_cast<uint64_t>(s.events), static_cast<uint64_t>(s.tokens),
                     static_cast<uint64_t>(absl::ToUnixMicros(sim.as_of))};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::lognormal_distribution<double> plan_loss_draw(std::log(plan_loss) - 0.5 * kPlanLossSigma * kPlanLossSigma,
                                                     kPlanLossSigma);
  auto draw_loss = [&]() {
    if (!losses.empty() && uniform(rng) < p_observed_loss) {
      return losses[static_cast<size_t>(uniform(rng) * static_cast<double>(losses.size())) % losses.size()];
    }
    return plan_loss_draw(rng);
  };

  // For many interruptions in one draw, their total loss by the central limit theorem:
  // the mixture's mean and variance, computed once.
  double obs_mean = 0, obs_sq = 0;
  for (double l : losses) {
    obs_mean += l;
    obs_sq += l * l;
  }
  if (!losses.empty()) {
    obs_mean /= static_cast<double>(losses.size());
    obs_sq /= static_cast<double>(losses.size());
  }
  const double plan_sq = plan_loss * plan_loss * std::exp(kPlanLossSigma * kPlanLossSigma);
  const double mix_mean = p_observed_loss * obs_mean + (1 - p_observed_loss) * plan_loss;
  const double mix_var = std::max(
      0.0, p_observed_loss * obs_sq + (1 - p_observed_loss) * plan_sq - mix_mean * mix_mean);
  constexpr long kExactLossDraws = 256;

  const int draws = std::max(1, options.draws);
  std::vector<double> finish(static_cast<size_t>(draws)), future_loss(static_cast<size_t>(draws));
  int exhausted = 0, on_time = 0;
  const double consumed = snap.failure_budget_consumed_seconds;
  for (int i = 0; i < draws; ++i) {
    const double rate = center * std::exp(rate_sigma * normal(rng));
    const double compute = rate > 0 ? remaining_tokens / rate : 0;
    const double running = compute * (1 + ckpt_ratio);
    std::gamma_distribution<double> gamma(alpha, 1.0 / std::max(beta, 1.0));
    const double lambda = gamma(rng);
    std::poisson_distribution<long> count(std::max(0.0, lambda * running));
    const long n = count(rng);
    double loss = 0;
    if (n <= kExactLossDraws) {
      for (long k = 0; k < n; ++k) loss += draw_loss();
    } else {
      const double nd = static_cast<double>(n);
      loss = std::max(0.0, nd * mix_mean + std::sqrt(nd * mix_var) * normal(rng));
    }
    if (in_incident) {
      const double whole = draw_loss();
      loss += whole > incident_so_far ? whole - incident_so_far : 0.1 * incident_so_far;
    }
    const double total = wait + running + loss + compute * maintenance_ratio + planned_down_left;
    finish[static_cast<size_t>(i)] = total;
    future_loss[static_cast<size_t>(i)] = loss;
    if (consumed + loss > prior.budget_seconds) ++exhausted;
    if (prior.deadline && AtOffset(sim.as_of, total) <= *prior.deadline) ++on_time;
  }
  sim.finish_p10_seconds = Quantile(finish, 0.1);
  sim.finish_p50_seconds = Quantile(finish, 0.5);
  sim.finish_p90_seconds = Quantile(finish, 0.9);
  sim.future_loss_p50_seconds = Quantile(future_loss, 0.5);
  sim.exhaustion_probability = static_cast<double>(exhausted) / draws;
  sim.deadline_probability = prior.deadline ? static_cast<double>(on_time) / draws : 0;
  return sim;
}

Forecast Combine(Forecast f, const Simulation& sim) {
  // A finished run finished when it did, whatever a simulation from before said.
  if (f.finished) return f;
  f.forecast_tokens_per_second = sim.forecast_tokens_per_second;
  f.throughput_shifted = sim.throughput_shifted;
  f.finish_p10 = AtOffset(sim.as_of, sim.finish_p10_seconds);
  f.finish_p50 = AtOffset(sim.as_of, sim.finish_p50_seconds);
  f.finish_p90 = AtOffset(sim.as_of, sim.finish_p90_seconds);
  // A cached simulation of a run that has been silent since: the finish cannot be earlier
  // than now plus what the simulation still had ahead.
  const double stale = absl::ToDoubleSeconds(f.as_of - sim.as_of);
  if (stale > 0 && f.events == sim.events) {
    f.finish_p10 += absl::Seconds(stale);
    f.finish_p50 += absl::Seconds(stale);
    f.finish_p90 += absl::Seconds(stale);
  }
  // Never a finish before now (a simulation a few events behind).
  f.finish_p10 = std::max(f.finish_p10, f.as_of);
  f.finish_p50 = std::max(f.finish_p50, f.as_of);
  f.finish_p90 = std::max(f.finish_p90, f.as_of);
  f.slip_seconds = absl::ToDoubleSeconds(f.finish_p50 - f.plan_finish);
  f.deadline_probability = sim.deadline_probability;
  f.exhaustion_probability = sim.exhaustion_probability;
  f.projected_at_finish_seconds = f.consumed_seconds + sim.future_loss_p50_seconds;
  return f;
}

Forecast ComputeForecast(const RunState& state, const ForecastPrior& prior, absl::Time now,
                         const ForecastOptions& options) {
  return Combine(ForecastNow(state, prior, now), Simulate(state, prior, now, options));
}

}  // namespace flightplan::forecast
