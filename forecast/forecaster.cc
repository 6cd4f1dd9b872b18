#include "forecast/forecaster.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "forecast/forecaster_internal.h"
#include "planner/formulas.h"

namespace flightplan::forecast {

using namespace forecaster_internal;  // NOLINT(build/namespaces): this folder's own helpers

namespace {

// Planned overhead (maintenance, deliberate restarts) comes in lumps: the plan's share is
// a prior worth kPriorStops planned stops of the run's typical length (kTypicalStopSeconds,
// a working shift, until the run has shown its own), so a run that has not reached its
// first window yet is not read as one that needs none.
constexpr double kPriorStops = 2.0;
constexpr double kTypicalStopSeconds = 6 * 3600.0;
// The shortest recent window whose failure rate is believed to be a new regime rather than
// a burst (see EstimateProcesses).
constexpr double kMinRegimeSeconds = 3 * 86400.0;

// The run's evidence between two samples.
struct Window {
  double seconds = 0, running = 0, productive = 0, incidents = 0, other = 0, stops = 0;
};
Window Minus(const Window& a, const Window& b) {
  Window w;
  w.seconds = std::max(0.0, a.seconds - b.seconds);
  w.running = std::max(0.0, a.running - b.running);
  w.productive = std::max(0.0, a.productive - b.productive);
  w.incidents = std::max(0.0, a.incidents - b.incidents);
  w.other = std::max(0.0, a.other - b.other);
  w.stops = std::max(0.0, a.stops - b.stops);
  return w;
}
// Everything accumulated up to sample `e`, its seconds counted from `origin`.
Window Cumulative(const EvidenceSample& e, absl::Time origin) {
  return {absl::ToDoubleSeconds(e.time - origin),
          e.running_seconds,
          e.productive_seconds,
          e.incidents,
          e.other_seconds,
          e.planned_stops};
}
Window Between(const EvidenceSample& a, const EvidenceSample& b) {
  return Minus(Cumulative(b, a.time), Cumulative(a, a.time));
}

// The start of the window that ends at `now` and reaches back `span` seconds: the latest
// sample at or before its start (the run's start, with nothing accumulated, if none).
EvidenceSample WindowStart(const RunState& s, absl::Time now, double span) {
  EvidenceSample start;
  start.time = s.first_time;
  const absl::Time from = now - absl::Seconds(span);
  for (const EvidenceSample& e : s.evidence) {
    if (e.time > from) break;
    start = e;
  }
  return start;
}

// Log marginal likelihood of n events in exposure e (or of n exponential values summing
// to e: the same kernel) under a Gamma(a, b) prior on the rate; the terms that cancel in
// a Bayes factor are left out.
double LogMarginal(double n, double e, double a, double b) {
  return std::lgamma(a + n) - std::lgamma(a) + a * std::log(b) - (a + n) * std::log(b + e);
}

// Posterior probability that the older and the recent window have different rates: the
// exact Bayes factor of two Gamma-Poisson rates against one (a Gamma(1, 1/pooled rate)
// prior on each, so that a handful of events cannot make a change), tempered by the
// overdispersion (quasi-likelihood: bursts and heavy tails are not read as a change), with
// prior probability `prior` of a change.
double RateChange(double n_old, double e_old, double n_new, double e_new, double dispersion, double prior) {
  if (e_old <= 0 || e_new <= 0) return 0;
  const double n = n_old + n_new, e = e_old + e_new;
  const double b = e / (n + 1);  // a = 1: an exponential prior with the pooled mean
  const double log_bf = LogMarginal(n_old, e_old, 1, b) + LogMarginal(n_new, e_new, 1, b) - LogMarginal(n, e, 1, b);
  const double log_odds = std::log(prior / (1 - prior)) + log_bf / std::max(1.0, dispersion);
  return 1 / (1 + std::exp(-std::clamp(log_odds, -50.0, 50.0)));
}

// Overdispersion of a count against Poisson (1 = Poisson; bursts of failures make it
// larger): Pearson's chi-square over about kDispersionChunks equal spans of exposure,
// divided by its degrees of freedom. Counts and exposure are read from the evidence
// samples (cumulative) with `count` and `exposure`.
constexpr int kDispersionChunks = 32;
// Chunks before exposure `split` are compared with the older part's rate, the rest with
// the recent part's, so that a change between them is not read as bursts; the larger of
// the two parts' dispersions counts, so that a burst inside the recent window (a bad day
// that has just happened) is read as one, not as a new regime.
template <typename Count, typename Exposure>
double Dispersion(const RunState& s, const EvidenceSample& now, double split, double n_split, Count count,
                  Exposure exposure) {
  const double total_e = exposure(now), total_n = count(now);
  if (total_e <= 0 || total_n < 4 || s.evidence.size() < 2 * kDispersionChunks) return 1;
  const double rate_old = split > 0 ? n_split / split : total_n / total_e;
  const double rate_new = total_e > split ? (total_n - n_split) / (total_e - split) : rate_old;
  double chi2[2] = {0, 0}, prev_e = 0, prev_n = 0;
  int chunks[2] = {0, 0};
  auto close = [&](double e, double n) {
    const int part = prev_e < split ? 0 : 1;
    const double expected = (part == 0 ? rate_old : rate_new) * (e - prev_e);
    if (expected > 0) {
      chi2[part] += (n - prev_n - expected) * (n - prev_n - expected) / expected;
      ++chunks[part];
    }
    prev_e = e;
    prev_n = n;
  };
  for (const EvidenceSample& e : s.evidence) {
    if (exposure(e) - prev_e >= total_e / kDispersionChunks &&
        total_e - exposure(e) >= 0.5 * total_e / kDispersionChunks) {
      close(exposure(e), count(e));
    }
  }
  close(total_e, total_n);
  double dispersion = 1;
  for (int part = 0; part < 2; ++part) {
    if (chunks[part] >= 3) dispersion = std::max(dispersion, chi2[part] / (chunks[part] - 1));
  }
  return dispersion;
}

// A pool of losses per incident to bootstrap from, mixed with the plan's log-normal.
struct LossPool {
  std::vector<double> losses;
  double p_observed = 0;     // share of draws from the pool
  double mean = 0, var = 0;  // of the mixture, for many incidents at once
};
LossPool MakePool(std::vector<double> losses, double plan_loss) {
  LossPool p;
  p.losses = std::move(losses);
  const double n = static_cast<double>(p.losses.size());
  p.p_observed = n / (n + kPriorIncidents);
  double mean = 0, sq = 0;
  for (double l : p.losses) {
    mean += l;
    sq += l * l;
  }
  if (n > 0) {
    mean /= n;
    sq /= n;
  }
  const double plan_sq = plan_loss * plan_loss * std::exp(kPlanLossSigma * kPlanLossSigma);
  p.mean = p.p_observed * mean + (1 - p.p_observed) * plan_loss;
  p.var = std::max(0.0, p.p_observed * sq + (1 - p.p_observed) * plan_sq - p.mean * p.mean);
  return p;
}

// One process's estimate under one regime.
struct RateRegime {
  double alpha = 1, beta = 1;  // Gamma posterior of the rate (shape, rate)
};
struct RatioRegime {
  double ratio = 0;  // overhead per compute second
  double shape = 1;  // Gamma shape of its uncertainty (stops seen, plus the prior's)
};

// The failure and overhead processes ahead: a regime per process for "the past
// continues" (index 0) and "the recent regime continues" (index 1), and the probability of
// the latter.
struct Processes {
  RateRegime failures[2];
  double p_failures = 0;
  double failure_dispersion = 1;  // of the count ahead: variance / mean
  LossPool losses[2];
  double p_losses = 0;
  RatioRegime overhead;  // one regime: the lifetime's (see EstimateProcesses)
  // Regular planned stops (a weekly window): seconds to add to the Poisson expectation,
  // from the time since the last stop against the usual gap (negative right after one).
  double overhead_phase_seconds = 0;
  // "The run returns to its plan": the plan's rate (its prior alone) and losses.
  RateRegime plan_failures;
  LossPool plan_losses;
  // The recent regime's failure cost (rate x loss) over the plan's; the probability that
  // an excess is a crisis that will be fixed rather than the fleet's level, and its age in
  // running seconds (see CrisisProbability).
  double excess_ratio = 1;
  double crisis_probability = 0;
  double crisis_age_seconds = 0;    // as observed
  double crisis_scale_seconds = 0;  // the age the fix time is drawn from (a week at least)
  double recent_seconds = 0;        // the recent window's span
};

// An excess of failures over the plan is read two ways: the fleet is like that (the plan
// was wrong, and it stays), or a crisis on top of the fleet's level (burn-in, a batch of
// bad hosts, a flaky switch) that the team will find and fix. The fleet's level is the
// plan's failure cost times a log-normal factor of sigma kPlanMissSigma; that figure is an
// assumption of ours, not a measurement: what plans assume and what large runs report
// differ by about that much (deploy/examples' node MTBF of 2,000 h against Llama 3's 419
// unexpected interruptions in 54 days on 2,048 nodes, about 6,300 node-hours: Dubey et al.
// 2024, "The Llama 3 Herd of Models", section 3.3.4). A crisis multiplies the level by a
// factor log-uniform on [1, kMaxCrisisRatio], and is a priori as likely as not
// (kCrisisPrior: we know of no published base rate, so even odds). The posterior that the
// excess is a crisis, from the observed ratio alone: 0.22 at the plan, 0.45 at 2x, 0.9 at
// 5x (tests/forecaster_test.cc checks these).
constexpr double kPlanMissSigma = 0.6931471805599453;  // ln 2
constexpr double kMaxCrisisRatio = 20;
constexpr double kCrisisPrior = 0.5;
// An excess is read as a possible crisis, and the two futures shown, when the recent
// failure cost is this far above the plan's.
constexpr double kFarRatio = 2;
// The least a crisis is taken to have lasted when its fix time is drawn: teams take days
// to weeks to find and fix one. BLOOM-176B's slow GPU of late April 2022 was found after
// several days and restarts with --exclude (bigscience-workshop/bigscience,
// train/tr11-176B-ml/chronicles.md); OPT-175B's worst stretch, 40+ restarts from mid
// November 2021, ended about two weeks later after GPU burn-in tests and a pool of spare
// hosts (facebookresearch/metaseq, projects/OPT/chronicles, the 27% and 56% updates).
constexpr double kMinCrisisSeconds = 7 * 86400.0;
double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

double CrisisProbability(double ratio) {
  if (!(ratio > 0)) return 0;
  const double x = std::log(ratio), span = std::log(kMaxCrisisRatio);
  const double level = std::exp(-0.5 * (x / kPlanMissSigma) * (x / kPlanMissSigma)) /
                       (kPlanMissSigma * std::sqrt(2 * 3.14159265358979323846));
  const double crisis = (NormalCdf(x / kPlanMissSigma) - NormalCdf((x - span) / kPlanMissSigma)) / span;
  return kCrisisPrior * crisis / (kCrisisPrior * crisis + (1 - kCrisisPrior) * level);
}

namespace {

// Compute seconds at each planned stop, oldest first, read from the evidence samples.
std::vector<double> PlannedStopsAt(const RunState& s) {
  std::vector<double> at;
  double prev_stops = 0;
  for (const EvidenceSample& e : s.evidence) {
    if (e.planned_stops > prev_stops) at.push_back(e.productive_seconds);
    prev_stops = e.planned_stops;
  }
  return at;
}

// Planned stops as a renewal process: when they come regularly, the time since the last
// one says whether the next is near. For a periodic process with gap g and age a, the
// stops in the next R are (a + R)/g - 1/2 on average, against R/g for Poisson; the
// correction is weighed by how regular the gaps have been (1 - their coefficient of
// variation). `at` from PlannedStopsAt; gaps and age in compute seconds.
double OverheadPhaseSeconds(const std::vector<double>& at, const EvidenceSample& now, double unit) {
  if (at.size() < 3) return 0;
  double mean = 0, sq = 0;
  for (size_t i = 1; i < at.size(); ++i) {
    const double gap = at[i] - at[i - 1];
    mean += gap;
    sq += gap * gap;
  }
  const double n = static_cast<double>(at.size() - 1);
  mean /= n;
  if (mean <= 0) return 0;
  const double cv = std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean;
  const double age = std::clamp(now.productive_seconds - at.back(), 0.0, mean);
  return (1 - std::min(cv, 1.0)) * (age / mean - 0.5) * unit;
}

// `now` is EvidenceNow(s, snap).
Processes EstimateProcesses(const RunState& s, const RunSnapshot& snap, const EvidenceSample& now,
                            const ForecastPrior& prior, const ForecastOptions& options, absl::Time as_of) {
  Processes p;
  const double plan_loss = std::max(1.0, prior.loss_per_interruption_seconds);
  const double plan_ratio = Div(prior.plan_availability_seconds, prior.plan_active_seconds);
  const std::vector<double> all_losses(s.incident_losses.begin(), s.incident_losses.end());
  const double incidents = Incidents(s);

  p.plan_failures = {kPriorInterruptions, kPriorInterruptions * prior.job_mtbf_seconds};
  p.plan_losses = MakePool({}, plan_loss);
  // The past continues: the whole history, the plan as the prior.
  p.failures[0] = {kPriorInterruptions + incidents,
                   kPriorInterruptions * prior.job_mtbf_seconds + snap.running_seconds};
  p.losses[0] = MakePool(all_losses, plan_loss);
  EvidenceSample start;
  start.time = s.first_time;
  const Window life = Between(start, now);
  const double unit = life.stops > 0 ? life.other / life.stops : kTypicalStopSeconds;
  // At most a quarter of the run, at least a day.
  const double cap = std::max(86400.0, prior.plan_active_seconds / 4);
  const double prior_seconds = plan_ratio > 0 ? std::clamp(kPriorStops * unit / plan_ratio, 86400.0, cap) : cap;
  auto overhead = [&](double base_ratio, double base_seconds, double other, double productive, double stops) {
    return RatioRegime{(base_ratio * base_seconds + other) / (base_seconds + productive), 1 + stops + kPriorStops};
  };
  // Planned stops are scheduled: the time since the latest one (or since the start) is no
  // evidence of fewer stops until it exceeds the gap they have been coming at (the plan's
  // until seen), so it counts as exposure only past that gap.
  const std::vector<double> stops_at = PlannedStopsAt(s);
  const double last_stop = stops_at.empty() ? 0 : stops_at.back();
  const double gap = life.stops > 0 ? last_stop / life.stops : (plan_ratio > 0 ? unit / plan_ratio : 0);
  const double censored = std::max(0.0, life.productive - last_stop - gap);
  p.overhead = overhead(plan_ratio, prior_seconds, life.other, last_stop + censored, life.stops);
  p.failures[1] = p.failures[0];
  p.losses[1] = p.losses[0];
  if (options.model == EvidenceModel::kLifetime) {
    // The baseline: planned downtime as the plan allots, nothing else from the evidence.
    p.overhead = {plan_ratio, 1e9};
    return p;
  }
  const double elapsed = snap.elapsed_seconds;
  const double span = std::clamp(options.recent_share, 0.01, 1.0) * elapsed;
  if (elapsed <= 0 || span <= 0) return p;
  const double open = s.incident_open ? 1 : 0;  // the incident in progress is recent

  if (options.model == EvidenceModel::kDiscounted) {
    // Exponential discount by age, half-life `span`, over the sampled intervals.
    Window d;
    EvidenceSample prev = start;
    auto add = [&](const EvidenceSample& next) {
      const Window w = Between(prev, next);
      const double mid = absl::ToDoubleSeconds(as_of - prev.time) - 0.5 * w.seconds;
      const double weight = std::exp2(-std::max(0.0, mid) / span);
      d.running += weight * w.running;
      d.productive += weight * w.productive;
      d.incidents += weight * w.incidents;
      d.other += weight * w.other;
      d.stops += weight * w.stops;
      prev = next;
    };
    for (const EvidenceSample& e : s.evidence) {
      if (e.time > prev.time && e.time <= as_of) add(e);
    }
    add(now);
    p.failures[0] = {kPriorInterruptions + d.incidents + open,
                     kPriorInterruptions * prior.job_mtbf_seconds + d.running};
    // Losses: the newest incidents, as many as the discounted count.
    const size_t keep = std::min(all_losses.size(), static_cast<size_t>(std::ceil(d.incidents)));
    p.losses[0] = MakePool({all_losses.end() - static_cast<long>(keep), all_losses.end()}, plan_loss);
    p.overhead = overhead(plan_ratio, prior_seconds, d.other, d.productive, d.stops);
    p.failures[1] = p.failures[0];
    p.losses[1] = p.losses[0];
    p.failure_dispersion = Dispersion(
        s, now, 0, 0, [](const EvidenceSample& e) { return e.incidents; },
        [](const EvidenceSample& e) { return e.running_seconds; });
    return p;
  }

  // kChangepoint: the recent window against the older part.
  const EvidenceSample recent_start = WindowStart(s, as_of, span);
  const Window recent = Between(recent_start, now);
  const Window older = Minus(life, recent);
  const double n_recent = recent.incidents + open;
  const double n_older = std::max(0.0, incidents - n_recent);
  // The recent regime's prior is the lifetime rate, worth one incident.
  const double lifetime_rate = p.failures[0].alpha / p.failures[0].beta;
  p.failures[1] = {1 + n_recent, (lifetime_rate > 0 ? 1 / lifetime_rate : prior.job_mtbf_seconds) + recent.running};
  p.failure_dispersion = Dispersion(
      s, now, older.running, older.incidents, [](const EvidenceSample& e) { return e.incidents; },
      [](const EvidenceSample& e) { return e.running_seconds; });
  // The prior probability of a change inside the recent window: about one change over the
  // run so far, at any time alike, falls in it with the window's share of the time.
  const double change_prior = std::clamp(options.recent_share, 0.01, 0.5);
  // A cluster of crashes within a day (a flaky switch, a bad batch of hosts found at once)
  // is common and passes; a new regime is believed in proportion as the window that shows
  // it has lasted longer than that.
  const double believed = std::min(1.0, recent.seconds / kMinRegimeSeconds);
  p.p_failures =
      believed * RateChange(n_older, older.running, n_recent, recent.running, p.failure_dispersion, change_prior);

  // Losses: the newest incidents, as many as the recent window closed.
  const size_t keep = std::min(all_losses.size(), static_cast<size_t>(recent.incidents));
  if (keep >= 2 && all_losses.size() - keep >= 2) {
    const std::vector<double> newest(all_losses.end() - static_cast<long>(keep), all_losses.end());
    const double n_new = static_cast<double>(keep), n_all = static_cast<double>(all_losses.size());
    // Losses are heavy-tailed (one restart that takes hours), so the change is read on
    // their logarithms: the difference of the mean log-loss of the newest incidents and
    // the older ones, its Bayes factor in the BIC approximation (z^2/2 less half the log
    // of the count).
    double old_sum = 0, old_sq = 0, new_sum = 0, new_sq = 0;
    const size_t split = all_losses.size() - keep;
    for (size_t i = 0; i < all_losses.size(); ++i) {
      const double l = std::log(std::max(1.0, all_losses[i]));
      (i < split ? old_sum : new_sum) += l;
      (i < split ? old_sq : new_sq) += l * l;
    }
    const double n_old = n_all - n_new;
    const double var = std::max(
        1e-6, (old_sq - old_sum * old_sum / n_old + new_sq - new_sum * new_sum / n_new) / std::max(1.0, n_all - 2));
    const double z = (new_sum / n_new - old_sum / n_old) / std::sqrt(var / n_new + var / n_old);
    const double log_odds = std::log(change_prior / (1 - change_prior)) + 0.5 * z * z - 0.5 * std::log(n_all);
    p.p_losses = 1 / (1 + std::exp(-std::clamp(log_odds, -50.0, 50.0)));
    p.losses[1] = MakePool(newest, plan_loss);
  }

  // Planned overhead has no recent regime: it comes in a few long lumps, and a window test
  // reads one maintenance window as a new regime (the backtest's P50 error overall went
  // from 6.0 h to 5.7 h without it). Its lifetime estimate above learns a heavier schedule,
  // and regular stops are phased.
  if (life.stops > 0) p.overhead_phase_seconds = OverheadPhaseSeconds(stops_at, now, unit);

  p.recent_seconds = recent.seconds;
  // The recent regime against the plan (see CrisisProbability). It is believed as the
  // window is long enough to be one (a cluster of crashes within a day is not a crisis).
  const double plan_cost = Div(plan_loss, prior.job_mtbf_seconds);
  auto cost = [](const RateRegime& r, const LossPool& l) { return Div(r.alpha, r.beta) * l.mean; };
  p.excess_ratio = Div(cost(p.failures[1], p.losses[1]), plan_cost);
  if (options.model == EvidenceModel::kFutures && p.excess_ratio >= kFarRatio && plan_cost > 0) {
    // Only an excess far from the plan is read as a crisis (nearer, the plan's own error
    // explains it, and the changepoint estimate stands); a run better than its plan is not
    // expected to get worse.
    p.crisis_probability = believed * CrisisProbability(p.excess_ratio);
    // Its age: the whole run when the older part was in excess too (more than half way, in
    // logs, to the recent level), else the recent window.
    const double older_cost =
        Div(kPriorInterruptions + n_older, kPriorInterruptions * prior.job_mtbf_seconds + older.running) *
        p.losses[0].mean;
    p.crisis_age_seconds =
        Div(older_cost, plan_cost) >= std::sqrt(p.excess_ratio) ? snap.running_seconds : recent.running;
    // Finding and fixing takes days to weeks, however young the crisis: a week at least.
    p.crisis_scale_seconds = std::max(p.crisis_age_seconds, kMinCrisisSeconds);
  }
  return p;
}

// Throughput that drifts (a slow decline as a cluster ages, a data mix that gets heavier):
// log tokens per productive second over kTrendChunks equal spans of productive time,
// three models compared by BIC: constant, one step (the recent rate already follows a
// step), and a linear trend. `weight` is the trend's posterior weight, with a prior of
// `change_prior` split between the step and the trend.
constexpr int kTrendChunks = 16;
struct ThroughputTrend {
  double slope = 0;  // d log(rate) / d productive second
  double weight = 0;
  // How well the run's own rate so far has predicted its rate later (below); unknown
  // (false) before there are kTrendChunks spans to read it from.
  bool drift_known = false;
  double drift_variance_per_horizon = 0;
};
// With a plan in phases, each span's rate is read against the plan's for the tokens it
// covers (`plan_seconds(from, to)`: the plan's compute seconds for them, empty without
// phases), so that a batch ramp or a longer sequence is not read as a drift.
ThroughputTrend EstimateTrend(const std::deque<EvidenceSample>& evidence, const EvidenceSample& now,
                              double change_prior, const std::function<double(double, double)>& plan_seconds = {}) {
  ThroughputTrend t;
  const double total = now.productive_seconds;
  if (total <= 0 || evidence.size() < 2 * kTrendChunks) return t;
  std::vector<double> x, y;
  double prev_p = 0, prev_t = 0;
  auto close = [&](double p, double tokens) {
    if (p - prev_p > 0 && tokens - prev_t > 0) {
      const double planned = plan_seconds ? plan_seconds(prev_t, tokens) : 0;
      x.push_back(0.5 * (p + prev_p));
      y.push_back(planned > 0 ? std::log(planned / (p - prev_p)) : std::log((tokens - prev_t) / (p - prev_p)));
    }
    prev_p = p;
    prev_t = tokens;
  };
  for (const EvidenceSample& e : evidence) {
    if (e.productive_seconds - prev_p >= total / kTrendChunks &&
        total - e.productive_seconds >= 0.5 * total / kTrendChunks) {
      close(e.productive_seconds, e.productive_tokens);
    }
  }
  close(now.productive_seconds, now.productive_tokens);
  const size_t n = x.size();
  if (n < 8) return t;
  const double k = static_cast<double>(n);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i] / k;
    my += y[i] / k;
  }
  double sxx = 0, sxy = 0, rss_const = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    rss_const += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0) return t;
  const double slope = sxy / sxx;
  const double rss_lin = std::max(0.0, rss_const - slope * sxy);
  double rss_step = rss_const;
  for (size_t split = 2; split + 2 <= n; ++split) {
    double m1 = 0, m2 = 0;
    for (size_t i = 0; i < n; ++i) (i < split ? m1 : m2) += y[i];
    m1 /= static_cast<double>(split);
    m2 /= static_cast<double>(n - split);
    double rss = 0;
    for (size_t i = 0; i < n; ++i) rss += (y[i] - (i < split ? m1 : m2)) * (y[i] - (i < split ? m1 : m2));
    rss_step = std::min(rss_step, rss);
  }
  const double floor = 1e-12 * k;  // a perfectly flat run
  auto bic = [&](double rss, double params) { return k * std::log(std::max(rss, floor) / k) + params * std::log(k); };
  const double b_const = bic(rss_const, 1) - 2 * std::log(1 - change_prior);
  const double b_step = bic(rss_step, 3) - 2 * std::log(0.5 * change_prior);
  const double b_lin = bic(rss_lin, 2) - 2 * std::log(0.5 * change_prior);
  const double best = std::min({b_const, b_step, b_lin});
  const double w_const = std::exp(-0.5 * (b_const - best)), w_step = std::exp(-0.5 * (b_step - best)),
               w_lin = std::exp(-0.5 * (b_lin - best));
  t.slope = slope;
  t.weight = w_lin / (w_const + w_step + w_lin);
  // The run's own forecast errors: at each split from the second quarter of the spans on,
  // the mean log rate of the spans before it against that of the spans after, whose
  // squared difference grows with the horizon (spans after over spans before) when the
  // rate wanders, and stays at the noise when it does not. Its mean per unit of horizon
  // scales to the horizon ahead (Simulate): a steady run's band narrows, a wandering one's
  // widens, by what the run has shown.
  // With a trend, the predictor is the trend fitted to the spans before the split,
  // extrapolated, weighed with the mean as the forecast weighs them.
  double sum = 0;
  int splits = 0;
  for (size_t j = n / 4; j + 1 < n; ++j) {
    double bx = 0, by = 0;
    for (size_t i = 0; i < j; ++i) {
      bx += x[i];
      by += y[i];
    }
    bx /= static_cast<double>(j);
    by /= static_cast<double>(j);
    double bxx = 0, bxy = 0;
    for (size_t i = 0; i < j; ++i) {
      bxx += (x[i] - bx) * (x[i] - bx);
      bxy += (x[i] - bx) * (y[i] - by);
    }
    const double b_slope = bxx > 0 ? bxy / bxx : 0;
    double mean_err = 0, trend_err = 0;
    for (size_t i = j; i < n; ++i) {
      mean_err += (y[i] - by) / static_cast<double>(n - j);
      trend_err += (y[i] - by - b_slope * (x[i] - bx)) / static_cast<double>(n - j);
    }
    const double horizon = static_cast<double>(n - j) / static_cast<double>(j);
    sum += ((1 - t.weight) * mean_err * mean_err + t.weight * trend_err * trend_err) / horizon;
    ++splits;
  }
  if (splits > 0) {
    t.drift_known = true;
    t.drift_variance_per_horizon = sum / splits;
  }
  return t;
}

// Compute seconds to produce `tokens` from `rate` on, with log(rate) moving by `slope`
// per compute second, the move capped at a factor of 2 either way.
double ComputeWithTrend(double tokens, double rate, double slope) {
  if (rate <= 0) return 0;
  if (std::fabs(slope) < 1e-15) return tokens / rate;
  const double cap = slope < 0 ? 0.5 : 2.0;
  const double until_cap = std::log(cap) / slope;            // compute seconds
  const double tokens_until_cap = rate * (cap - 1) / slope;  // tokens by then
  if (tokens <= tokens_until_cap) return std::log(1 + slope * tokens / rate) / slope;
  return until_cap + (tokens - tokens_until_cap) / (cap * rate);
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
  auto draw_loss = [&](const LossPool& pool, SplitMix64& g) {
    std::uniform_real_distribution<double> uniform(0, 1);
    if (!pool.losses.empty() && uniform(g) < pool.p_observed) {
      return pool
          .losses[static_cast<size_t>(uniform(g) * static_cast<double>(pool.losses.size())) % pool.losses.size()];
    }
    std::lognormal_distribution<double> plan_loss_draw(plan_loss_mu, kPlanLossSigma);
    return plan_loss_draw(g);
  };
  // For many interruptions in one draw, their total loss by the central limit theorem.
  constexpr long kExactLossDraws = 256;

  // One draw: the whole run ahead. kMixture is the forecast: each process picks a regime
  // by its weight, and an excess over the plan that is a crisis (crisis_probability) is
  // fixed after a time drawn from its age (below), from which the failures and losses are
  // the plan's. kRecent and kPlan are the two futures: the recent regime for the rest of
  // the run, or the plan's from now on.
  enum class Mode { kMixture, kRecent, kPlan };
  struct Outcome {
    double total = 0, loss = 0;
    bool recovered = false;  // the crisis was fixed before the finish (kMixture)
  };
  const double consumed = snap.failure_budget_consumed_seconds;
  // A change shifts each loss (never below a tenth of what it was).
  auto shifted = [&](double l) { return std::max(0.1 * l, l + prior.change.loss_shift_seconds); };
  auto draw = [&](int i, Mode mode) {
    auto stream = [&](uint64_t stage) { return SplitMix64(base + static_cast<uint64_t>(i) * 16 + stage); };
    SplitMix64 throughput_rng = stream(0), regime_rng = stream(1), rate_rng = stream(2), count_rng = stream(3),
               loss_rng = stream(4), overhead_rng = stream(5), crisis_rng = stream(6), slowdown_rng = stream(7);
    std::normal_distribution<double> normal(0, 1);
    std::uniform_real_distribution<double> uniform(0, 1);
    Outcome out;
    const double rate = center * std::exp(rate_sigma * normal(throughput_rng));
    double compute = 0;
    const bool trend_regime = uniform(regime_rng) < trend.weight;
    if (sim.slowdown_factor > 1 && rate > 0 && !trend_regime) {
      // The slowdown persists for `persist` productive seconds ahead, then the run's own pace.
      // In the trend regime's draws the slowdown is a drift's latest step (a run degrading
      // steadily, which no one fixes), and the trend goes on instead.
      const double u = uniform(slowdown_rng);
      const double persist = uniform(slowdown_rng) < sim.slowdown_permanent_probability
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
    const double running = compute * (1 + ckpt_ratio);
    const bool recent_failures = uniform(regime_rng) < proc.p_failures;
    const bool recent_losses = uniform(regime_rng) < proc.p_losses;
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
    if (mode == Mode::kMixture && !prior.change.failure_rate_ahead && uniform(crisis_rng) < proc.crisis_probability) {
      const double u = uniform(crisis_rng);
      before = std::min(running, proc.crisis_scale_seconds * u / std::max(1e-12, 1 - u));
      out.recovered = before < running;
    }
    auto losses_over = [&](const RateRegime& regime, const LossPool& from, double seconds, bool bursty) {
      std::gamma_distribution<double> gamma(regime.alpha, 1.0 / std::max(regime.beta, 1.0));
      const double lambda = prior.change.failure_rate_ahead ? *prior.change.failure_rate_ahead
                                                            : gamma(rate_rng) * prior.change.failure_scale;
      double expected = std::max(0.0, lambda * seconds);
      if (bursty && proc.failure_dispersion > 1 && expected > 0) {
        // Bursty failures: the count ahead is negative binomial, variance = dispersion x mean.
        std::gamma_distribution<double> burst(expected / (proc.failure_dispersion - 1), proc.failure_dispersion - 1);
        expected = burst(rate_rng);
      }
      std::poisson_distribution<long> count(expected);
      const long n = count(count_rng);
      double loss = 0;
      if (n <= kExactLossDraws) {
        for (long k = 0; k < n; ++k) loss += shifted(draw_loss(from, loss_rng));
      } else {
        const double nd = static_cast<double>(n);
        loss = std::max(0.0, nd * shifted(from.mean) + std::sqrt(nd * from.var) * normal(loss_rng));
      }
      return loss;
    };
    double loss = losses_over(fr, pool, before, mode != Mode::kPlan);
    if (running > before) loss += losses_over(proc.plan_failures, proc.plan_losses, running - before, false);
    if (in_incident) {
      const double whole = draw_loss(pool, regime_rng);
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
    const int n = std::max(1, draws / 2);
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
    futures[1].reason = absl::StrFormat(
        "the excess is a crisis rather than the fleet's level with probability %.0f%% (at %.1fx the plan's cost; a "
        "plan taken as right within 2x at one sigma, a crisis as likely as not), and fixed before the finish in %.0f%% "
        "of the draws: it has lasted %.1f running days%s, and what has lasted that long lasts as long again with even "
        "odds (Gott 1993); after the fix, the plan's incident every %.1f h",
        100 * proc.crisis_probability, proc.excess_ratio, 100 * sim.recovery_weight, proc.crisis_age_seconds / 86400,
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
  return f;
}

Forecast ComputeForecast(const RunState& state, const ForecastPrior& prior, absl::Time now,
                         const ForecastOptions& options) {
  return Combine(ForecastNow(state, prior, now), Simulate(state, prior, now, options));
}

}  // namespace flightplan::forecast
