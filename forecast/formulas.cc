#include "forecast/formulas.h"

#include <algorithm>
#include <cmath>

namespace flightplan::forecast {

double DenseFlopsPerToken(double active_params) { return 6.0 * active_params; }

double AttentionFlopsPerToken(uint32_t layers, uint32_t hidden, uint32_t seq_len) {
  return 12.0 * static_cast<double>(layers) * static_cast<double>(hidden) *
         static_cast<double>(seq_len);
}

double ImpliedMfu(double flops_per_token, double tokens_per_second, double gpus,
                  double peak_flops) {
  if (gpus <= 0 || peak_flops <= 0) return 0;
  return flops_per_token * tokens_per_second / (gpus * peak_flops);
}

StepCount CountSteps(uint64_t tokens, uint64_t tokens_per_step) {
  StepCount out;
  if (tokens_per_step == 0 || tokens == 0) return out;
  out.steps = (tokens + tokens_per_step - 1) / tokens_per_step;
  out.last_step_tokens = tokens - (out.steps - 1) * tokens_per_step;
  return out;
}

double ZeroStateBytes(double params_per_shard, double dp, int zero_stage,
                      const StateBytesPerParam& bytes) {
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
double LogPoissonPmf(double mean, double k) {
  return -mean + k * std::log(mean) - std::lgamma(k + 1.0);
}
}  // namespace

double PoissonCdf(double mean, uint64_t k) {
  if (mean <= 0) return 1.0;
  double sum = 0;
  for (uint64_t i = 0; i <= k; ++i) sum += std::exp(LogPoissonPmf(mean, static_cast<double>(i)));
  return std::min(sum, 1.0);
}

uint64_t PoissonQuantile(double mean, double q) {
  if (mean <= 0 || q <= 0) return 0;
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

}  // namespace flightplan::forecast
