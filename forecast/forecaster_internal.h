// What the forecaster's files share: the priors' strengths, the Monte Carlo's generator and
// small helpers (forecaster.cc: the simulation; processes.cc: the estimates it draws from;
// prior.cc: the plan as the prior, the plan's line, cost and the status's flags; now.cc: the
// cheap part of a forecast, at any read).
// Not the interface: that is forecast/forecaster.h.
#ifndef FLIGHTPLAN_FORECAST_FORECASTER_INTERNAL_H_
#define FLIGHTPLAN_FORECAST_FORECASTER_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"

namespace flightplan::forecast::forecaster_internal {

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
// Once the run has shown how steady it is (kFutures): what its own history cannot show.
constexpr double kUnforeseenRateSigma = 0.03;

inline double Div(double a, double b) { return b > 0 ? a / b : 0; }

// A small, fast generator (SplitMix64, Steele, Lea and Flood 2014, as in Vigna's
// xoshiro reference code) for the Monte Carlo: one per stage of each draw, seeded cheaply.
class SplitMix64 {
 public:
  using result_type = uint64_t;
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  result_type operator()() { return Mix(state_ += 0x9E3779B97F4A7C15ULL); }

 private:
  uint64_t state_;
};

// A uniform double in [0, 1) from the generator's top 53 bits. The standard distributions'
// std::generate_canonical gives the same value but computes log2 of the engine's range in
// long double on every call: it was 41% of a simulation's time (perf, issue 41).
inline double Uniform01(SplitMix64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

// A standard normal by Marsaglia's polar method (as libstdc++'s normal_distribution), the
// second value of each pair kept for the next call: one per generator, so that a stage's
// stream of numbers stays its own.
class StandardNormal {
 public:
  double operator()(SplitMix64& g) {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double x, y, r2;
    do {
      x = 2 * Uniform01(g) - 1;
      y = 2 * Uniform01(g) - 1;
      r2 = x * x + y * y;
    } while (r2 > 1 || r2 == 0);
    const double m = std::sqrt(-2 * std::log(r2) / r2);
    spare_ = x * m;
    has_spare_ = true;
    return y * m;
  }

 private:
  double spare_ = 0;
  bool has_spare_ = false;
};

// A Gamma(shape, 1) variate by Marsaglia and Tsang's method (ACM TOMS 26:363, 2000), from
// the generator's own uniforms and normals; a shape below 1 by boosting it (their §5).
inline double DrawGamma(double shape, SplitMix64& g, StandardNormal& normal) {
  if (!(shape > 0)) return 0;
  if (shape < 1) {
    const double u = Uniform01(g);
    return DrawGamma(shape + 1, g, normal) * std::pow(u > 0 ? u : 0x1.0p-53, 1 / shape);
  }
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double x = normal(g);
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = Uniform01(g);
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

// A Poisson variate of mean `mean`: by multiplying uniforms below a mean of 10, else by
// Hormann's transformed rejection PTRS (Insurance: Mathematics and Economics 12:39, 1993),
// as NumPy draws it. The standard one set up its table (lgamma, logs) on every call.
inline long DrawPoisson(double mean, SplitMix64& g) {
  if (!(mean > 0)) return 0;
  mean = std::min(mean, 1e12);  // beyond any run's incidents; keeps the count a long
  if (mean < 10) {
    const double limit = std::exp(-mean);
    long k = 0;
    for (double p = Uniform01(g); p > limit; p *= Uniform01(g)) ++k;
    return k;
  }
  const double slam = std::sqrt(mean), loglam = std::log(mean);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = Uniform01(g) - 0.5, v = Uniform01(g), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<long>(k);
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (v > 0 &&
        std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <= -mean + k * loglam - std::lgamma(k + 1)) {
      return static_cast<long>(k);
    }
  }
}

inline double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

inline double Incidents(const RunState& s) { return s.incidents + (s.incident_open ? 1 : 0); }

inline absl::Time AtOffset(absl::Time t, double seconds) {
  if (!std::isfinite(seconds)) return absl::InfiniteFuture();
  return t + absl::Seconds(seconds);
}

// Budget consumed at `t`, from the samples (linear between them; 0 before the run).
inline double ConsumedAt(const RunState& s, absl::Time t, double consumed_now, absl::Time now) {
  if (t >= now) return consumed_now;
  if (s.budget_samples.empty() || t <= s.first_time) return 0;
  // The samples are in time order: the first after t by bisection (a scrape of 1,000 runs
  // reads four windows of each).
  const auto next = std::upper_bound(s.budget_samples.begin(), s.budget_samples.end(), t,
                                     [](absl::Time v, const BudgetSample& b) { return v < b.time; });
  if (next == s.budget_samples.begin()) return 0;
  const BudgetSample* before = &*std::prev(next);
  const BudgetSample* after = next == s.budget_samples.end() ? nullptr : &*next;
  const double c1 = before->consumed_seconds;
  const double c2 = after ? after->consumed_seconds : consumed_now;
  const absl::Time t2 = after ? after->time.time() : now;
  const double span = absl::ToDoubleSeconds(t2 - before->time);
  if (span <= 0) return c1;
  return c1 + (c2 - c1) * absl::ToDoubleSeconds(t - before->time) / span;
}

// The lineage's tokens per wall second over the last hour (0 before an hour has passed).
inline double LastHourWallRate(const RunState& s, absl::Time now) {
  const absl::Time from = now - absl::Hours(1);
  if (s.wall_tokens.empty() || s.wall_tokens.front().time > from) return 0;
  int64_t then = s.wall_tokens.front().tokens;
  for (const TokenSample& t : s.wall_tokens) {
    if (t.time <= from) then = t.tokens;
  }
  return std::max(0.0, static_cast<double>(s.tokens - then) / 3600.0);
}

}  // namespace flightplan::forecast::forecaster_internal

#endif  // FLIGHTPLAN_FORECAST_FORECASTER_INTERNAL_H_
