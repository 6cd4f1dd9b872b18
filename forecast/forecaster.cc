#include "forecast/forecaster.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "forecast/bad_period.h"
#include "forecast/forecaster_internal.h"
#include "forecast/processes.h"
#include "planner/formulas.h"

namespace flightplan::forecast {

using namespace forecaster_internal;  // NOLINT(build/namespaces): this folder's own helpers

namespace {

// Deliberate work (evaluations, checks) comes in lumps every few hours: the plan's share
// (schedule.custom_fraction) is a prior worth a day of compute, after which the run's own
// spans weigh as much.
constexpr double kCustomPriorSeconds = 86400;

// The age at which a bad period is first seen as one, where the law's "it never ends" is
// stated (bad_period.h): a slowdown once the alert would ticket it (two hours of work), a
// crisis once the futures would show it (a day of recent failures).
constexpr double kSlowdownSeenSeconds = 2 * 3600.0;
constexpr double kCrisisSeenSeconds = 86400.0;

// The time until k of n nodes out for repair are back, each out an exponential time of
// mean `mean` (k <= n): the k-th first of n exponentials, a sum of k exponentials of means
// mean / n, mean / (n - 1), ... (the minimum of m exponentials is exponential, m times as fast).
double DrawKthOfExponentials(uint32_t k, uint32_t n, double mean, SplitMix64& g) {
  double t = 0;
  for (uint32_t j = 0; j < k && j < n; ++j) {
    t += -std::log1p(-Uniform01(g)) * std::max(1.0, mean) / static_cast<double>(n - j);
  }
  return t;
}

// "; the run's 2 earlier crises lasted 3.1 and 6.0 days", or nothing without any.
std::string EarlierCrisesText(const std::vector<double>& seconds) {
  if (seconds.empty()) return "";
  std::string days;
  for (size_t i = 0; i < seconds.size(); ++i) {
    absl::StrAppend(&days,
                    i == 0                    ? ""
                    : i + 1 == seconds.size() ? " and "
                                              : ", ",
                    absl::StrFormat("%.1f", seconds[i] / 86400));
  }
  return seconds.size() == 1 ? absl::StrCat("; the run's earlier crisis lasted ", days, " days")
                             : absl::StrCat("; the run's ", seconds.size(), " earlier crises lasted ", days, " days");
}

}  // namespace

const char* EvidenceModelName(EvidenceModel model) {
  switch (model) {
    case EvidenceModel::kLifetime:
      return "lifetime";
    case EvidenceModel::kDiscounted:
      return "discounted";
    case EvidenceModel::kChangepoint:
      return "changepoint";
    case EvidenceModel::kFutures:
      return "futures";
  }
  return "?";
}

Simulation Simulate(const RunState& s, const ForecastPrior& prior, absl::Time now, const ForecastOptions& options) {
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
  // With phases the plan's rate is the one ahead (the tokens left over the plan's time for
  // them), and each of the run's own rates is read against the plan's for the tokens it
  // covers (all done, or the last hour's): a run 10% slower than plan in a fast phase is
  // 10% slower in the slow one ahead, and entering a slower phase is not a shift.
  const double done = std::max(0.0, static_cast<double>(snap.tokens));
  const double target = static_cast<double>(prior.target_tokens);
  double plan_rate = prior.plan_tokens_per_second;
  double lifetime = snap.tokens_per_second;
  double recent = snap.recent_tokens_per_second;
  if (!prior.phases.empty() && target > done) {
    plan_rate = Div(target - done, PlannedActiveSeconds(prior, done, target));
    const double plan_done = Div(done, PlannedActiveSeconds(prior, 0, done));
    const double window = std::min(done, recent * 3600.0);
    const double plan_recent = Div(window, PlannedActiveSeconds(prior, done - window, done));
    if (plan_rate > 0 && plan_done > 0) lifetime *= plan_rate / plan_done;
    if (plan_rate > 0 && plan_recent > 0) recent *= plan_rate / plan_recent;
  }
  const double produced = snap.seconds.productive;
  double observed = lifetime;
  if (lifetime > 0 && recent > 0) {
    sim.throughput_shifted = std::fabs(recent / lifetime - 1) > kShiftThreshold;
    observed = sim.throughput_shifted ? recent : std::exp(0.5 * std::log(recent) + 0.5 * std::log(lifetime));
  }
  // An active slowdown: the run's own pace before it is the rate once it is found and
  // fixed, and each draw keeps the slowed pace for a time drawn from how long slowdowns
  // last. The evidence is its own age and the durations of the run's earlier ones
  // (productive seconds, each at least a bin): their geometric mean is the scale of the
  // scale-free law P(it lasts x more) = scale / (scale + x) (Gott 1993, as for a crisis
  // below), whose median is the scale. The plan's time to find and fix one
  // (failures.slowdown_fix_hours), when it gives one, counts as one earlier slowdown of that
  // length that ended: the team's experience, weighed as one more of the run's own.
  // Only one the alert would ticket (3% or more, two hours of work or more): a smaller or
  // younger one is as likely noise, and the rates as they are already carry it.
  std::optional<BadPeriodLaw> slow_law;  // options.bad_period_law: how long the slowdown lasts
  double slow_share = 1;                 // its productive seconds per wall second
  if (options.slowdown_mixture && !s.slowdown.stretches.empty() && s.slowdown.stretches.back().active &&
      s.slowdown.stretches.back().Factor() >= 1 + kSlowdownMinShift &&
      s.slowdown.stretches.back().seconds >= 2 * 3600) {
    const SlowStretch& st = s.slowdown.stretches.back();
    double log_sum = 0;
    int n = 0, ended = 0;
    for (const SlowStretch& past : s.slowdown.stretches) {
      log_sum += std::log(std::max(past.seconds, kSlowdownBinSeconds));
      ++n;
      ended += past.active ? 0 : 1;
    }
    if (prior.slowdown_fix_seconds > 0) {
      log_sum += std::log(std::max(prior.slowdown_fix_seconds, kSlowdownBinSeconds));
      ++n;
      ++ended;
    }
    // Its size now: the last 6 hours' pace against the reference (a slowdown that deepens,
    // as a fleet degrading does, is as slow as it has become), else its average.
    const double ratio = ThroughputRatio(s.slowdown, sim.as_of, absl::Hours(6));
    sim.slowdown_factor = ratio > 0 ? std::max(1.0, 1 / ratio) : st.Factor();
    sim.slowdown_persist_seconds = std::exp(log_sum / n);
    // Whether it can be fixed at all (a slow node is; a fleet that degrades is not): by
    // Laplace's rule of succession on the run's earlier slowdowns (and the plan's), all of
    // which ended, the chance that this one never does is 1 / (ended + 2): a half with no
    // history.
    sim.slowdown_permanent_probability = 1.0 / (ended + 2);
    if (options.bad_period_law) {
      // The law on a human's clock (a straggler is never taken to end by itself), from its
      // age on the wall clock; the run's ended slowdowns and the plan's fix time move it,
      // and Laplace's odds above are its "never" when the alert would have ticketed it.
      PeriodEvidence evidence;
      for (const SlowStretch& past : s.slowdown.stretches) {
        if (!past.active) evidence.ended_seconds.push_back(absl::ToDoubleSeconds(past.end - past.start));
      }
      evidence.team_fix_seconds = prior.slowdown_fix_seconds;
      const double age = std::max(0.0, absl::ToDoubleSeconds(sim.as_of - st.start));
      slow_law.emplace(PeriodKind::kHuman, age, kSlowdownSeenSeconds, sim.slowdown_permanent_probability, evidence);
      slow_share = age > 0 ? std::clamp(st.seconds / age, 0.05, 1.0) : 1.0;
      sim.slowdown_permanent_probability = slow_law->never();
      const double median = slow_law->MedianLeft();
      sim.slowdown_persist_seconds = std::isfinite(median) ? median * slow_share : 0;
    }
    observed = std::exp(-st.reference_log_pace);
    if (!prior.phases.empty() && target > done) {
      // Read against the plan's rate for the tokens ahead, as the run's own rates are above.
      const double window = std::min(done, st.tokens);
      const double plan_then = Div(window, PlannedActiveSeconds(prior, done - window, done));
      if (plan_rate > 0 && plan_then > 0) observed *= plan_rate / plan_then;
    }
  }
  // A revised plan: the rate before it, scaled to the new plan, until the run shows its
  // own since (weighed like the plan against the first evidence); a trend is read from the
  // evidence since the revision only.
  EvidenceSample at{};  // the evidence when the plan was revised
  if (prior.revised_at) {
    for (const EvidenceSample& e : s.evidence) {
      if (e.time > *prior.revised_at) break;
      at = e;
    }
  }
  if (prior.revised_at && observed > 0) {
    const double since_seconds = produced - at.productive_seconds;
    const double since_tokens = s.productive_tokens - at.productive_tokens;
    const double scaled = observed * prior.revision_rate_scale;
    const double w_since =
        since_seconds > 0 && since_tokens > 0 ? since_seconds / (since_seconds + kRateEvidenceSeconds) : 0;
    observed = w_since > 0
                   ? std::exp(w_since * std::log(since_tokens / since_seconds) + (1 - w_since) * std::log(scaled))
                   : scaled;
  }
  const double w_obs = observed > 0 ? produced / (produced + kRateEvidenceSeconds) : 0;
  const double center_before_change =
      w_obs > 0 ? std::exp(w_obs * std::log(observed) + (1 - w_obs) * std::log(plan_rate)) : plan_rate;
  const double center = center_before_change * prior.change.rate_scale;
  sim.forecast_tokens_per_second = center;
  const EvidenceSample evidence_now = EvidenceNow(s, snap);
  ThroughputTrend trend;
  if (options.model == EvidenceModel::kChangepoint || options.model == EvidenceModel::kFutures) {
    const double change_prior = std::clamp(options.recent_share, 0.01, 0.5);
    if (!prior.revised_at) {
      std::function<double(double, double)> planned;
      if (!prior.phases.empty()) planned = [&](double a, double b) { return PlannedActiveSeconds(prior, a, b); };
      trend = EstimateTrend(s.evidence, evidence_now, change_prior, planned);
    } else {
      // Across a revision the new fleet's step would read as a drift: the evidence since.
      std::deque<EvidenceSample> since;
      auto rebase = [&](EvidenceSample e) {
        e.productive_seconds -= at.productive_seconds;
        e.productive_tokens -= at.productive_tokens;
        return e;
      };
      for (const EvidenceSample& e : s.evidence) {
        if (e.time > *prior.revised_at) since.push_back(rebase(e));
      }
      std::function<double(double, double)> planned;
      if (!prior.phases.empty()) {
        planned = [&](double a, double b) {
          return PlannedActiveSeconds(prior, a + at.productive_tokens, b + at.productive_tokens);
        };
      }
      trend = EstimateTrend(since, rebase(evidence_now), change_prior, planned);
    }
  }
  sim.trend_weight = trend.weight;
  const double disagreement = (lifetime > 0 && recent > 0) ? std::fabs(std::log(recent / lifetime)) : 0;
  const double remaining_tokens = static_cast<double>(std::max<int64_t>(0, prior.target_tokens - s.tokens));
  const double remaining_fraction = Div(remaining_tokens, static_cast<double>(prior.target_tokens));
  // Change ahead: while the run has not shown how its rate wanders, the prior's
  // kFutureRateSigma per remaining fraction; then its own (EstimateTrend), scaled from its
  // horizons to this one (the compute ahead over the compute so far), beside a change no
  // history can show (kUnforeseenRateSigma per remaining fraction), never wider than the
  // prior (the history narrows the band; widening is the trend regime's and the
  // disagreement's).
  double future_sigma = kFutureRateSigma * remaining_fraction;
  if (options.model == EvidenceModel::kFutures && trend.drift_known && produced > 0 && center > 0) {
    const double horizon = remaining_tokens / center / produced;
    future_sigma = std::min(future_sigma, std::hypot(std::sqrt(trend.drift_variance_per_horizon * horizon),
                                                     kUnforeseenRateSigma * remaining_fraction));
  }
  const double rate_sigma = std::sqrt(std::pow((1 - w_obs) * kPlanRateSigma, 2) +
                                      std::pow(kObservedRateSigma + disagreement, 2) + std::pow(future_sigma, 2));

  // Checkpoint overhead ahead in proportion to the compute ahead, as observed (the plan's
  // until an hour of evidence).
  const double plan_ckpt_ratio = Div(prior.plan_checkpoint_seconds, prior.plan_active_seconds);
  const double obs_ckpt_ratio = Div(snap.seconds.checkpoint, snap.seconds.productive);
  const double ckpt_ratio = (w_obs * obs_ckpt_ratio + (1 - w_obs) * plan_ckpt_ratio) * prior.change.checkpoint_scale;
  // Deliberate work ahead in proportion to the compute ahead (kCustomPriorSeconds).
  const double plan_custom_ratio = Div(prior.plan_custom_seconds, prior.plan_active_seconds);
  sim.custom_ratio = (plan_custom_ratio * kCustomPriorSeconds + snap.seconds.custom) /
                     (kCustomPriorSeconds + snap.seconds.productive + snap.seconds.capacity);
  // On fewer GPUs than the plan's: full size returns when the missing nodes are back (FullSize).
  const double share = s.gpus > 0 && prior.plan_gpus > 0 && s.gpus < prior.plan_gpus
                           ? static_cast<double>(s.gpus) / prior.plan_gpus
                           : 1.0;
  uint32_t missing_nodes = 0, nodes_out = 0;
  if (share < 1) {
    const uint32_t per_node = std::max(1U, prior.gpus_per_node);
    missing_nodes = (prior.plan_gpus - s.gpus + per_node - 1) / per_node;
    nodes_out = missing_nodes + prior.spare_nodes;
    FullSize fs;
    fs.gpus = s.gpus;
    fs.plan_gpus = prior.plan_gpus;
    fs.missing_nodes = missing_nodes;
    SplitMix64 g(SplitMix64::Mix(static_cast<uint64_t>(s.events) ^ 0xF5F5));
    std::vector<double> back(static_cast<size_t>(std::max(1, options.draws)));
    for (double& b : back) b = DrawKthOfExponentials(missing_nodes, nodes_out, prior.node_repair_seconds, g);
    fs.p50_seconds = Quantile(back, 0.5);
    fs.reason = absl::StrFormat(
        "on %u of the plan's %u GPUs: full size when %u of the %u nodes out (the %u missing and the plan's %u spares, "
        "in use) are back from repair, each out %.0f h on average (failures.spare_repair_hours); about %.1f h from now",
        s.gpus, prior.plan_gpus, missing_nodes, nodes_out, missing_nodes, prior.spare_nodes,
        prior.node_repair_seconds / 3600, fs.p50_seconds / 3600);
    sim.full_size = fs;
  }

  // Failures, losses and planned overhead: a regime per process (see EvidenceModel).
  const Processes proc = EstimateProcesses(s, snap, evidence_now, prior, options, sim.as_of);
  sim.change_probability_failures = proc.p_failures;
  sim.change_probability_losses = proc.p_losses;
  auto mix = [](double p, double old_value, double new_value) { return (1 - p) * old_value + p * new_value; };
  sim.mtbf_seconds = 1 / mix(proc.p_failures, proc.failures[0].alpha / proc.failures[0].beta,
                             proc.failures[1].alpha / proc.failures[1].beta);
  sim.loss_per_incident_seconds = mix(proc.p_losses, proc.losses[0].mean, proc.losses[1].mean);
  sim.overhead_ratio = proc.overhead.ratio;

  // The incident in progress, if the run is down or restarting after an unplanned stop.
  const bool in_incident = s.incident_open && (s.phase == Phase::kDown || s.phase == Phase::kStarting);
  const double incident_so_far =
      in_incident ? std::max(0.0, snap.failure_budget_consumed_seconds - s.incident_start_budget) : 0;
  // Planned downtime in progress: assume it lasts as long again (no better evidence).
  double planned_down_left = 0;
  if (s.phase == Phase::kDown && s.down_planned) {
    planned_down_left = absl::ToDoubleSeconds(sim.as_of - s.last_time);
  }

  // Seeded by the history, not the clock, and each draw's stages (throughput, regimes,
  // rate, count, losses, overhead) from streams of their own: a refresh with nothing new
  // draws the same numbers even where a parameter moved a little and a distribution takes
  // more or fewer of them, so the finish moves only by what the time that passed changed.
  const uint64_t base =
      SplitMix64::Mix(static_cast<uint64_t>(s.events) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(s.tokens) ^
                      SplitMix64::Mix(static_cast<uint64_t>(absl::ToUnixMicros(s.last_time))));
  const double plan_loss = std::max(1.0, prior.loss_per_interruption_seconds);
  const double plan_loss_mu = std::log(plan_loss) - 0.5 * kPlanLossSigma * kPlanLossSigma;
  auto draw_loss = [&](const LossPool& pool, SplitMix64& g, StandardNormal& normal) {
    if (!pool.losses.empty() && Uniform01(g) < pool.p_observed) {
      return pool
          .losses[static_cast<size_t>(Uniform01(g) * static_cast<double>(pool.losses.size())) % pool.losses.size()];
    }
    return std::exp(plan_loss_mu + kPlanLossSigma * normal(g));  // lognormal around the plan's loss
  };
  // For many interruptions in one draw, their total loss as a Gamma with its mean and
  // variance: a sum of many positive losses, right-skewed as they are (the skew falls as
  // 1/sqrt(n)), at the cost of one draw instead of n (the loss loop was most of a
  // simulation's time at a high failure rate).
  constexpr long kExactLossDraws = 32;

  // One draw: the whole run ahead. kMixture is the forecast: each process picks a regime
  // by its weight, and an excess over the plan that is a crisis (crisis_probability) is
  // fixed after a time drawn from its age (below), from which the failures and losses are
  // the plan's. kRecent and kPlan are the two futures: the recent regime for the rest of
  // the run, or the plan's from now on.
  enum class Mode { kMixture, kRecent, kPlan };
  struct Outcome {
    double total = 0, loss = 0;
    TimeAhead ahead;
    bool recovered = false;  // the crisis was fixed before the finish (kMixture)
  };
  const double consumed = snap.failure_budget_consumed_seconds;
  // options.bad_period_law: the crisis's end from the law on a human's clock, its age on the
  // wall clock, "never" the odds that the excess is the fleet's level (1 - P(crisis)) when
  // the futures first show it; the plan's crisis_fix_days and the run's earlier crises move it.
  std::optional<BadPeriodLaw> crisis_law;
  if (options.bad_period_law && proc.crisis_probability > 0) {
    PeriodEvidence evidence;
    evidence.team_fix_seconds = prior.crisis_fix_seconds;
    // The run's own crises that ended before this one began, each an observation; this one
    // is aged from the day the days turned bad, when the history of days shows it.
    absl::Time since = proc.crisis_since;
    if (proc.crises.open_since != absl::InfiniteFuture()) since = std::max(since, proc.crises.open_since);
    for (const PastCrisis& c : proc.crises.ended) {
      if (c.end <= since) sim.earlier_crises_seconds.push_back(absl::ToDoubleSeconds(c.end - c.start));
    }
    evidence.ended_seconds = sim.earlier_crises_seconds;
    const double age = since > absl::InfinitePast() ? absl::ToDoubleSeconds(sim.as_of - since)
                                                    : proc.crisis_age_seconds / proc.crisis_running_share;
    crisis_law.emplace(PeriodKind::kHuman, std::max(0.0, age), kCrisisSeenSeconds, 1 - proc.crisis_probability,
                       evidence);
  }
  // A change shifts each loss (never below a tenth of what it was).
  auto shifted = [&](double l) { return std::max(0.1 * l, l + prior.change.loss_shift_seconds); };
  auto draw = [&](int i, Mode mode) {
    auto stream = [&](uint64_t stage) { return SplitMix64(base + static_cast<uint64_t>(i) * 16 + stage); };
    SplitMix64 throughput_rng = stream(0), regime_rng = stream(1), rate_rng = stream(2), count_rng = stream(3),
               loss_rng = stream(4), overhead_rng = stream(5), crisis_rng = stream(6), slowdown_rng = stream(7);
    StandardNormal throughput_normal, loss_normal, regime_normal, rate_normal;
    Outcome out;
    const double rate = center * std::exp(rate_sigma * throughput_normal(throughput_rng));
    double compute = 0;
    const bool trend_regime = Uniform01(regime_rng) < trend.weight;
    if (sim.slowdown_factor > 1 && rate > 0 && !trend_regime) {
      // The slowdown persists for `persist` productive seconds ahead, then the run's own pace.
      // In the trend regime's draws the slowdown is a drift's latest step (a run degrading
      // steadily, which no one fixes), and the trend goes on instead.
      const double u = Uniform01(slowdown_rng);
      const double u2 = Uniform01(slowdown_rng);
      const double persist = slow_law ? slow_law->DrawLeft(u2, u) * slow_share
                             : u2 < sim.slowdown_permanent_probability
                                 ? std::numeric_limits<double>::infinity()
                                 : sim.slowdown_persist_seconds * u / std::max(1e-12, 1 - u);
      const double slow_rate = rate / sim.slowdown_factor;
      const double slow_tokens = std::min(remaining_tokens, slow_rate * persist);
      compute = slow_tokens / slow_rate + (remaining_tokens - slow_tokens) / rate;
    } else {
      // The trend regime from the run's own rate; in a slowdown's trend draws, from the
      // slowed rate it has reached.
      const double from = sim.slowdown_factor > 1 ? rate / sim.slowdown_factor : rate;
      compute = trend_regime ? ComputeWithTrend(remaining_tokens, from, trend.slope)
                : rate > 0   ? remaining_tokens / rate
                             : 0;
    }
    const double full_size_compute = compute;
    if (share < 1 && rate > 0) {
      // Until full size returns (its running time, in compute seconds), the tokens come at
      // the smaller fleet's rate: (1 - share) of that time is added, or of the rest of the run
      // when it finishes first.
      SplitMix64 fleet_rng = stream(8);
      const double back = DrawKthOfExponentials(missing_nodes, nodes_out, prior.node_repair_seconds, fleet_rng);
      const double back_compute = back / (1 + ckpt_ratio + sim.custom_ratio);
      compute += (1 - share) * std::min(back_compute, remaining_tokens / (share * rate));
    }
    const double running = compute * (1 + ckpt_ratio + sim.custom_ratio);
    const bool recent_failures = Uniform01(regime_rng) < proc.p_failures;
    const bool recent_losses = Uniform01(regime_rng) < proc.p_losses;
    const RateRegime& fr = mode == Mode::kPlan     ? proc.plan_failures
                           : mode == Mode::kRecent ? proc.failures[1]
                                                   : proc.failures[recent_failures ? 1 : 0];
    const LossPool& pool = mode == Mode::kPlan     ? proc.plan_losses
                           : mode == Mode::kRecent ? proc.losses[1]
                                                   : proc.losses[recent_losses ? 1 : 0];
    // The running seconds ahead under `fr` and `pool`; the rest at the plan's. A crisis
    // is fixed after a time with the scale-free law of a process that has lasted `age`:
    // P(it lasts x more | it lasted age) = age / (age + x) (Gott 1993, Nature 363:315).
    double before = running;
    if (mode == Mode::kMixture && !prior.change.failure_rate_ahead && crisis_law) {
      // The law's time left is on the wall clock: the running seconds in it at the crisis's
      // own share.
      const double left = crisis_law->DrawLeft(Uniform01(crisis_rng), Uniform01(crisis_rng));
      if (std::isfinite(left)) {
        before = std::min(running, left * proc.crisis_running_share);
        out.recovered = before < running;
      }
    } else if (mode == Mode::kMixture && !prior.change.failure_rate_ahead &&
               Uniform01(crisis_rng) < proc.crisis_probability) {
      const double u = Uniform01(crisis_rng);
      before = std::min(running, proc.crisis_scale_seconds * u / std::max(1e-12, 1 - u));
      out.recovered = before < running;
    }
    auto losses_over = [&](const RateRegime& regime, const LossPool& from, double seconds, bool bursty) {
      const double lambda = prior.change.failure_rate_ahead
                                ? *prior.change.failure_rate_ahead
                                : DrawGamma(regime.alpha, rate_rng, rate_normal) / std::max(regime.beta, 1.0) *
                                      prior.change.failure_scale;
      double expected = std::max(0.0, lambda * seconds);
      if (bursty && proc.failure_dispersion > 1 && expected > 0) {
        // Bursty failures: the count ahead is negative binomial, variance = dispersion x mean.
        const double scale = proc.failure_dispersion - 1;
        expected = DrawGamma(expected / scale, rate_rng, rate_normal) * scale;
      }
      const long n = DrawPoisson(expected, count_rng);
      double loss = 0;
      if (n <= kExactLossDraws) {
        for (long k = 0; k < n; ++k) loss += shifted(draw_loss(from, loss_rng, loss_normal));
      } else {
        const double nd = static_cast<double>(n), mean = shifted(from.mean);
        loss = from.var > 0 && mean > 0
                   ? DrawGamma(nd * mean * mean / from.var, loss_rng, loss_normal) * from.var / mean
                   : nd * mean;
      }
      return loss;
    };
    double loss = losses_over(fr, pool, before, mode != Mode::kPlan);
    if (running > before) loss += losses_over(proc.plan_failures, proc.plan_losses, running - before, false);
    if (in_incident) {
      const double whole = draw_loss(pool, regime_rng, regime_normal);
      loss += whole > incident_so_far ? whole - incident_so_far : 0.1 * incident_so_far;
    }
    const RatioRegime& over = proc.overhead;
    double overhead_ratio = over.ratio;
    if (over.shape < 1e8 && over.ratio > 0) {
      std::gamma_distribution<double> spread(over.shape, over.ratio / over.shape);
      overhead_ratio = spread(overhead_rng);
    }
    const double planned_ahead = std::max(0.0, compute * overhead_ratio + proc.overhead_phase_seconds);
    out.total = wait + running + loss + planned_ahead + planned_down_left;
    out.loss = loss;
    out.ahead = {.waiting = wait,
                 .productive = full_size_compute,
                 .capacity = compute - full_size_compute,
                 .checkpoint = compute * ckpt_ratio,
                 .custom = compute * sim.custom_ratio,
                 .failures = loss,
                 .planned = planned_ahead + planned_down_left};
    return out;
  };

  const int draws = std::max(1, options.draws);
  std::vector<double> finish(static_cast<size_t>(draws)), future_loss(static_cast<size_t>(draws));
  int exhausted = 0, on_time = 0, recovered = 0;
  for (int i = 0; i < draws; ++i) {
    const Outcome o = draw(i, Mode::kMixture);
    finish[static_cast<size_t>(i)] = o.total;
    future_loss[static_cast<size_t>(i)] = o.loss;
    if (consumed + o.loss > prior.budget_seconds) ++exhausted;
    if (prior.deadline && AtOffset(sim.as_of, o.total) <= *prior.deadline) ++on_time;
    recovered += o.recovered ? 1 : 0;
    TimeAhead& a = sim.ahead;
    const TimeAhead& d = o.ahead;
    a.waiting += d.waiting / draws;
    a.productive += d.productive / draws;
    a.capacity += d.capacity / draws;
    a.checkpoint += d.checkpoint / draws;
    a.custom += d.custom / draws;
    a.failures += d.failures / draws;
    a.planned += d.planned / draws;
  }
  sim.finish_p10_seconds = Quantile(finish, 0.1);
  sim.finish_p50_seconds = Quantile(finish, 0.5);
  sim.finish_p90_seconds = Quantile(finish, 0.9);
  sim.future_loss_p50_seconds = Quantile(future_loss, 0.5);
  sim.exhaustion_probability = static_cast<double>(exhausted) / draws;
  sim.deadline_probability = prior.deadline ? static_cast<double>(on_time) / draws : 0;
  std::sort(finish.begin(), finish.end());
  for (int q = 0; q < kFinishQuantiles; ++q) {
    const size_t k = std::min(finish.size() - 1, static_cast<size_t>(FinishQuantileLevel(q) * draws));
    sim.quantile_seconds.push_back(finish[k]);
  }
  sim.excess_ratio = proc.excess_ratio;
  sim.crisis_probability = proc.crisis_probability;
  sim.crisis_age_seconds = proc.crisis_age_seconds;
  sim.recovery_weight = static_cast<double>(recovered) / draws;

  // The two futures, when the recent failure cost is far above the plan's (the same
  // random numbers, so they differ only by the regime), unless they agree.
  // "The last days" are a day at least: a younger window is a burst, not a future.
  if (options.model == EvidenceModel::kFutures && proc.excess_ratio >= kFarRatio && proc.recent_seconds >= 86400 &&
      !prior.change.failure_rate_ahead) {
    // A quarter of the draws each: the futures give two medians, not a distribution, and
    // with the same random numbers for both their difference is what they say. A half each
    // was a fifth of the forecaster's time over the calibration suite (issue 41).
    const int n = std::max(1, draws / 4);
    Future futures[2];
    futures[0].name = "recent";
    futures[1].name = "plan";
    for (int m = 0; m < 2; ++m) {
      std::vector<double> total(static_cast<size_t>(n)), loss(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        const Outcome o = draw(i, m == 0 ? Mode::kRecent : Mode::kPlan);
        total[static_cast<size_t>(i)] = o.total;
        loss[static_cast<size_t>(i)] = o.loss;
      }
      futures[m].finish_p50_seconds = Quantile(total, 0.5);
      futures[m].budget_at_finish_seconds = consumed + Quantile(loss, 0.5);
    }
    const RateRegime& r = proc.failures[1];
    futures[0].mtbf_seconds = Div(r.beta, r.alpha);
    futures[0].loss_per_incident_seconds = proc.losses[1].mean;
    futures[1].mtbf_seconds = prior.job_mtbf_seconds;
    futures[1].loss_per_incident_seconds = proc.plan_losses.mean;
    futures[1].weight = sim.recovery_weight;
    futures[0].weight = 1 - sim.recovery_weight;
    const double recent_days = proc.recent_seconds / 86400;
    futures[0].reason = absl::StrFormat(
        "failures in the last %.1f days cost %.1fx the plan's per running hour (an incident every %.1f h, "
        "%.0f min lost each); it goes on to the finish unless fixed",
        recent_days, proc.excess_ratio, futures[0].mtbf_seconds / 3600, futures[0].loss_per_incident_seconds / 60);
    futures[1].reason =
        crisis_law
            ? absl::StrFormat(
                  "the excess is a crisis rather than the fleet's level with probability %.0f%% (at %.1fx the plan's "
                  "cost), and fixed before the finish in %.0f%% of the draws: %s%s; after the fix, the plan's "
                  "incident every %.1f h",
                  100 * (1 - crisis_law->never()), proc.excess_ratio, 100 * sim.recovery_weight,
                  DescribeLaw(*crisis_law), EarlierCrisesText(sim.earlier_crises_seconds),
                  futures[1].mtbf_seconds / 3600)
            : absl::StrFormat(
                  "the excess is a crisis rather than the fleet's level with probability %.0f%% (at %.1fx the plan's "
                  "cost; a plan taken as right within 2x at one sigma, a crisis as likely as not), and fixed before "
                  "the finish in %.0f%% of the draws: it has lasted %.1f running days%s, and what has lasted that long "
                  "lasts as long again with even odds (Gott 1993); after the fix, the plan's incident every %.1f h",
                  100 * proc.crisis_probability, proc.excess_ratio, 100 * sim.recovery_weight,
                  proc.crisis_age_seconds / 86400,
                  proc.crisis_scale_seconds > proc.crisis_age_seconds ? " (a fix takes a week at least)" : "",
                  futures[1].mtbf_seconds / 3600);
    // They agree when their medians are within 1% of the time ahead (an hour at least).
    const double apart = std::fabs(futures[0].finish_p50_seconds - futures[1].finish_p50_seconds);
    if (apart > std::max(3600.0, 0.01 * sim.finish_p50_seconds)) {
      sim.futures.assign(std::begin(futures), std::end(futures));
    }
  }
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
  const double shift = stale > 0 && f.events == sim.events ? stale : 0;
  f.finish_quantiles.clear();
  for (double q : sim.quantile_seconds) f.finish_quantiles.push_back(std::max(f.as_of, AtOffset(sim.as_of, q + shift)));
  f.futures.clear();
  for (const Future& fu : sim.futures) {
    f.futures.push_back({fu, std::max(f.as_of, AtOffset(sim.as_of, fu.finish_p50_seconds + shift))});
  }
  // Against the plan's own P50: a run on plan reads about 0 (the committed finish holds
  // contingency and the P90 failure budget, so it would read early).
  f.slip_seconds = absl::ToDoubleSeconds(f.finish_p50 - f.plan_expected_finish);
  f.deadline_probability = sim.deadline_probability;
  f.exhaustion_probability = sim.exhaustion_probability;
  f.projected_at_finish_seconds = f.consumed_seconds + sim.future_loss_p50_seconds;
  f.custom_ratio = sim.custom_ratio;
  f.full_size = sim.full_size;
  return f;
}

Forecast ComputeForecast(const RunState& state, const ForecastPrior& prior, absl::Time now,
                         const ForecastOptions& options) {
  return Combine(ForecastNow(state, prior, now), Simulate(state, prior, now, options));
}

}  // namespace flightplan::forecast
