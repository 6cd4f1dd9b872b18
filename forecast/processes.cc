#include "forecast/processes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "forecast/forecaster_internal.h"

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

// A pool from the observed losses and the plan's loss per incident.
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

namespace forecaster_internal {

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

}  // namespace

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
    const bool whole = Div(older_cost, plan_cost) >= std::sqrt(p.excess_ratio);
    p.crisis_age_seconds = whole ? snap.running_seconds : recent.running;
    const double share = whole ? Div(snap.running_seconds, snap.elapsed_seconds) : Div(recent.running, recent.seconds);
    p.crisis_running_share = share > 0 ? std::clamp(share, 0.05, 1.0) : 1.0;
    p.crisis_since = whole ? absl::Time(s.first_time) : absl::Time(recent_start.time);
    // But not before a crisis the run's days show ended (crisis_history.h): an earlier
    // crisis in the older part reads as "the older part was in excess too". This one
    // began when the days turned bad after it.
    p.crises = ReadCrises(s.evidence, prior.job_mtbf_seconds, plan_loss, as_of);
    if (!p.crises.ended.empty() && p.crises.ended.back().end > p.crisis_since) {
      p.crisis_since =
          std::max(p.crises.ended.back().end,
                   p.crises.open_since == absl::InfiniteFuture() ? absl::InfinitePast() : p.crises.open_since);
      const Window since = Between(WindowStart(s, as_of, absl::ToDoubleSeconds(as_of - p.crisis_since)), now);
      p.crisis_age_seconds = since.running;
      if (since.seconds > 0) p.crisis_running_share = std::clamp(Div(since.running, since.seconds), 0.05, 1.0);
    }
    // Finding and fixing takes days to weeks, however young the crisis: a week at least.
    p.crisis_scale_seconds = std::max(p.crisis_age_seconds, kMinCrisisSeconds);
  }
  return p;
}

ThroughputTrend EstimateTrend(const std::deque<EvidenceSample>& evidence, const EvidenceSample& now,
                              double change_prior, const std::function<double(double, double)>& plan_seconds) {
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

}  // namespace forecaster_internal
}  // namespace flightplan::forecast
