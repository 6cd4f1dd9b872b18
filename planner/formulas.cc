#include "planner/formulas.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace flightplan::planner {

double DenseFlopsPerToken(double active_params) { return 6.0 * active_params; }

uint64_t SaturatingCount(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(v);
}

double AttentionFlopsPerToken(uint32_t layers, uint64_t width, uint32_t seq_len) {
  return 12.0 * static_cast<double>(layers) * static_cast<double>(width) * static_cast<double>(seq_len);
}

double AttentionFlopsPerToken(uint32_t layers, uint64_t width, uint32_t seq_len, AttentionConvention convention) {
  switch (convention) {
    case AttentionConvention::kFull:
      return AttentionFlopsPerToken(layers, width, seq_len);
    case AttentionConvention::kCausal:
      return AttentionFlopsPerToken(layers, width, seq_len) / 2;
    case AttentionConvention::kNone:
      return 0;
  }
  return 0;
}

double PipelineBubbleFraction(uint32_t pp, uint64_t microbatches, uint32_t virtual_stages) {
  if (pp <= 1 || microbatches == 0) return 0;
  const double idle = pp - 1.0;
  return idle / (std::max(1u, virtual_stages) * static_cast<double>(microbatches) + idle);
}

double ActivationBytesPerLayer(double seq_len, double micro_batch, double hidden, double heads, double tp, double cp,
                               Recompute mode, ActivationKinds kinds) {
  if (tp <= 0 || cp <= 0 || hidden <= 0) return 0;
  const double s = seq_len / cp;  // this rank's share of the sequence
  const double sbh = s * micro_batch * hidden;
  const double per_sbh = 34 - (kinds.dropout ? 0 : 2) - (kinds.fp8_matmul_inputs ? 7 : 0);
  switch (mode) {
    case Recompute::kFull:
      return 2 * sbh / tp;
    case Recompute::kSelective:
      return per_sbh * sbh / tp;
    case Recompute::kNone:
      // 5·a·s²·b: the softmax output (2) and the dropout's mask (1) and output (2) of the
      // local queries against all seq_len keys; 2 without dropout.
      return (per_sbh * sbh + (kinds.dropout ? 5 : 2) * heads * s * seq_len * micro_batch) / tp;
  }
  return 0;
}

double ImpliedMfu(double flops_per_token, double tokens_per_second, double gpus, double peak_flops) {
  if (gpus <= 0 || peak_flops <= 0) return 0;
  return flops_per_token * tokens_per_second / (gpus * peak_flops);
}

StepCount CountSteps(uint64_t tokens, uint64_t tokens_per_step) {
  StepCount out;
  if (tokens_per_step == 0 || tokens == 0) return out;
  out.steps = tokens / tokens_per_step + (tokens % tokens_per_step != 0 ? 1 : 0);
  out.last_step_tokens = tokens - (out.steps - 1) * tokens_per_step;
  return out;
}

double ZeroStateBytes(double params_per_shard, double dp, int zero_stage, const StateBytesPerParam& bytes) {
  const double shards = std::max(dp, 1.0);
  const double w = bytes.weight * params_per_shard;
  const double g = bytes.grad * params_per_shard;
  const double o = bytes.optimizer * params_per_shard;
  switch (zero_stage) {
    case 0:
      return w + g + o;
    case 1:
      return w + g + o / shards;
    case 2:
      return w + (g + o) / shards;
    default:
      return (w + g + o) / shards;
  }
}

double YoungIntervalSeconds(double checkpoint_seconds, double mtbf_seconds) {
  return std::sqrt(2.0 * checkpoint_seconds * mtbf_seconds);
}

double DalyIntervalSeconds(double checkpoint_seconds, double mtbf_seconds) {
  const double delta = checkpoint_seconds;
  const double m = mtbf_seconds;
  if (delta >= 2.0 * m) return m;
  const double r = delta / (2.0 * m);
  return std::sqrt(2.0 * delta * m) * (1.0 + std::sqrt(r) / 3.0 + r / 9.0) - delta;
}

double JobMtbfSeconds(double node_mtbf_seconds, double nodes) {
  if (nodes <= 0) return node_mtbf_seconds;
  return node_mtbf_seconds / nodes;
}

double NodeMtbfFromRateSeconds(double failures_per_1000_node_days) {
  return 1000.0 * 86400.0 / failures_per_1000_node_days;
}

namespace {
double LogPoissonPmf(double mean, double k) { return -mean + k * std::log(mean) - std::lgamma(k + 1.0); }
}  // namespace

double PoissonCdf(double mean, uint64_t k) {
  if (mean <= 0) return 1.0;
  double sum = 0;
  for (uint64_t i = 0; i <= k; ++i) sum += std::exp(LogPoissonPmf(mean, static_cast<double>(i)));
  return std::min(sum, 1.0);
}

double NormalQuantile(double p) {
  // Acklam's algorithm (P. J. Acklam, "An algorithm for computing the inverse normal
  // cumulative distribution function", 2003), then one Halley step on erfc.
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

uint64_t NegativeBinomialQuantile(double mean, double cv, double q) {
  if (!std::isfinite(mean) || !(q > 0) || !(q < 1) || mean <= 0) return 0;
  // A spread this small is a Poisson count (and r = 1/cv² would swamp the arithmetic).
  if (!(cv > 0) || !std::isfinite(cv) || cv * cv * mean < 1e-9) return PoissonQuantile(mean, q);
  // r = 1/cv², success probability p = r / (r + mean); P(k) = C(k+r-1, k) p^r (1-p)^k.
  const double r = 1.0 / (cv * cv);
  const double log_p = -std::log1p(mean / r), log_1p = std::log(mean) - std::log(r + mean);
  const double sd = std::sqrt(mean + cv * cv * mean * mean);
  if (mean + 6 * sd <= 2e5) {
    // The exact sum, the pmf by its recurrence P(k) = P(k-1) (k + r - 1)/k (1 - p) in logs
    // (P(0) = p^r underflows for a small spread). It stops at the quantile, within a few
    // sd of the mean; the bound (under 2e6 terms) is a guard.
    const double limit = mean + 60 * sd + 60;
    double log_pmf = r * log_p, sum = 0;
    for (uint64_t k = 0; static_cast<double>(k) <= limit; ++k) {
      if (k > 0) log_pmf += std::log((static_cast<double>(k) + r - 1) / static_cast<double>(k)) + log_1p;
      sum += std::exp(log_pmf);
      if (sum >= q) return k;
    }
    return SaturatingCount(limit);
  }
  // Counts in the hundreds of thousands (plans that fail every few minutes): a Gamma with
  // the count's mean and variance (shape k = mean² / variance), its quantile by Wilson and
  // Hilferty (1931), mean·(1 - 1/9k + z·sqrt(1/9k))³, within 0.2% of the exact count for a
  // spread up to 0.5. Where that breaks down (a spread so wide the cube's base is not
  // positive), the normal approximation mean + z·sd, which errs high.
  const double z = NormalQuantile(q);
  const double c = sd * sd / (9.0 * mean * mean);  // 1 / 9k
  const double base = 1 - c + z * std::sqrt(c);
  if (base > 0.1) return SaturatingCount(std::ceil(mean * base * base * base));
  return SaturatingCount(std::ceil(std::max(0.0, mean + z * sd)));
}

uint64_t PoissonQuantile(double mean, double q) {
  if (!std::isfinite(mean) || !(q > 0) || !(q < 1) || mean <= 0) return 0;
  if (mean > 1e6) {
    // Cornish-Fisher expansion of the Poisson quantile (skewness 1/sqrt(mean)); exact sums
    // lose precision in lgamma at such means, and the error here is far below one count.
    const double z = NormalQuantile(q);
    return SaturatingCount(std::ceil(mean + z * std::sqrt(mean) + (z * z - 1) / 6.0 - 0.5));
  }
  // Terms far below the mean are below double's resolution; past mean + 40 sd the tail is
  // below 1e-300, so the loop always ends there.
  // Below mean - 12 sd the mass is under 1e-30, so the sum starts there; past mean + 40 sd
  // the tail is below 1e-300, so the loop always ends there. ~50 sd of terms in all.
  const double sd = std::sqrt(mean);
  const uint64_t first = mean > 144.0 ? static_cast<uint64_t>(mean - 12.0 * sd) : 0;
  const uint64_t limit = static_cast<uint64_t>(mean + 40.0 * sd + 40.0);
  double sum = 0;
  for (uint64_t k = first; k <= limit; ++k) {
    sum += std::exp(LogPoissonPmf(mean, static_cast<double>(k)));
    if (sum >= q) return k;
  }
  return limit;
}

}  // namespace flightplan::planner
