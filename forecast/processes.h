// The forecaster's estimates of the run ahead, from its evidence and the plan
// (processes.cc): the failure process (interruption rate, loss per incident), planned
// overhead, and the throughput's drift. The Monte Carlo (forecaster.cc) draws from them.
// Not the interface: that is forecast/forecaster.h.
#ifndef FLIGHTPLAN_FORECAST_PROCESSES_H_
#define FLIGHTPLAN_FORECAST_PROCESSES_H_

#include <deque>
#include <functional>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"
#include "forecast/crisis_history.h"
#include "forecast/forecaster.h"

namespace flightplan::forecast::forecaster_internal {

// An excess is read as a possible crisis, and the two futures shown, when the recent
// failure cost is this far above the plan's.
constexpr double kFarRatio = 2;

// A pool of losses per incident to bootstrap from, mixed with the plan's log-normal.
struct LossPool {
  std::vector<double> losses;
  double p_observed = 0;     // share of draws from the pool
  double mean = 0, var = 0;  // of the mixture, for many incidents at once
};

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
  // Running seconds per wall second over the crisis's span: the law for the end of a bad
  // period (bad_period.h) is on the wall clock, the draws on the running one.
  double crisis_running_share = 1;
  absl::Time crisis_since = absl::InfinitePast();  // where its age starts
  CrisisHistory crises;                            // the run's crises, a day at a time
  double recent_seconds = 0;                       // the recent window's span
};

[[nodiscard]] Processes EstimateProcesses(const RunState& s, const RunSnapshot& snap, const EvidenceSample& now,
                                          const ForecastPrior& prior, const ForecastOptions& options, absl::Time as_of);

// Throughput that drifts (a slow decline as a cluster ages, a data mix that gets heavier):
// log tokens per productive second over kTrendChunks equal spans of productive time,
// three models compared by BIC: constant, one step (the recent rate already follows a
// step), and a linear trend. `weight` is the trend's posterior weight, with a prior of
// `change_prior` split between the step and the trend.
// With a plan in phases, each span's rate is read against the plan's for the tokens it
// covers (`plan_seconds(from, to)`: the plan's compute seconds for them, empty without
// phases), so that a batch ramp or a longer sequence is not read as a drift.
constexpr int kTrendChunks = 16;
struct ThroughputTrend {
  double slope = 0;  // d log(rate) / d productive second
  double weight = 0;
  // How well the run's own rate so far has predicted its rate later (below); unknown
  // (false) before there are kTrendChunks spans to read it from.
  bool drift_known = false;
  double drift_variance_per_horizon = 0;
};
[[nodiscard]] ThroughputTrend EstimateTrend(const std::deque<EvidenceSample>& evidence, const EvidenceSample& now,
                                            double change_prior,
                                            const std::function<double(double, double)>& plan_seconds = {});

// Compute seconds to produce `tokens` from `rate` on, with log(rate) moving by `slope`
// per compute second, the move capped at a factor of 2 either way.
[[nodiscard]] double ComputeWithTrend(double tokens, double rate, double slope);

}  // namespace flightplan::forecast::forecaster_internal

#endif  // FLIGHTPLAN_FORECAST_PROCESSES_H_
