// Scalar formulas of the plan engine, each a pure function with its source.
//
// Thread-safe: no state. No I/O, no clock. Units are in the parameter names.
#ifndef FLIGHTPLAN_FORECAST_FORMULAS_H_
#define FLIGHTPLAN_FORECAST_FORMULAS_H_

#include <cstdint>

namespace flightplan::forecast {

// Training FLOPs per token of the dense matrix multiplies: 6 x active parameters
// (2 forward + 4 backward per parameter). Kaplan et al. 2020, "Scaling Laws for Neural
// Language Models", sec. 2.1; the same C = 6ND gives GPT-3's 3.14e23 (Brown et al. 2020,
// table D.1).
[[nodiscard]] double DenseFlopsPerToken(double active_params);

// Training FLOPs per token of self-attention's score and value products, which 6N leaves
// out: 12 x layers x hidden x seq_len (forward 2 x 2 x L x d x T, times 3 for training),
// as in PaLM (Chowdhery et al. 2022, appendix B: 6N + 12LHQT, H x Q = hidden). No
// discount for the causal mask, as in PaLM. `width` is hidden, or heads x head_dim when
// they differ. 0 when any of the three is 0.
[[nodiscard]] double AttentionFlopsPerToken(uint32_t layers, uint64_t width, uint32_t seq_len);

// Model FLOPs utilisation implied by an observed throughput: achieved model FLOP/s over
// peak. PaLM 540B: 6 x 540.35e9 x 238.3e3 / (6144 x 275e12) = 45.7% (Chowdhery et al.
// 2022, sec. 4.1).
[[nodiscard]] double ImpliedMfu(double flops_per_token, double tokens_per_second, double gpus,
                                double peak_flops);

// Optimizer steps to train `tokens` at `tokens_per_step`, rounded up, and the tokens of
// the last (possibly partial) step. tokens_per_step must be > 0.
struct StepCount {
  uint64_t steps = 0;
  uint64_t last_step_tokens = 0;
};
[[nodiscard]] StepCount CountSteps(uint64_t tokens, uint64_t tokens_per_step);

// Bytes of weights, gradients and optimizer state held by one GPU. Rajbhandari et al.
// 2020, "ZeRO", sec. 5 and figure 1: stage 1 shards optimizer state over the data-parallel
// group, stage 2 also gradients, stage 3 also weights. `params_per_shard` is the
// parameters of one tensor x pipeline (x expert) shard; `dp` the replicas sharing them.
struct StateBytesPerParam {
  double weight = 2;
  double grad = 4;
  double optimizer = 12;
};
[[nodiscard]] double ZeroStateBytes(double params_per_shard, double dp, int zero_stage,
                                    const StateBytesPerParam& bytes);

// Young (1974), "A first order approximation to the optimum checkpoint interval":
// tau = sqrt(2 delta M), delta the checkpoint cost and M the MTBF, both seconds.
[[nodiscard]] double YoungIntervalSeconds(double checkpoint_seconds, double mtbf_seconds);

// Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart
// dumps", eq. 37: tau = sqrt(2 delta M) [1 + 1/3 sqrt(delta/(2M)) + 1/9 (delta/(2M))] - delta
// for delta < 2M, else tau = M.
[[nodiscard]] double DalyIntervalSeconds(double checkpoint_seconds, double mtbf_seconds);

// Job MTBF when any of `nodes` independent nodes failing stops the job (exponential
// lifetimes: rates add). Seconds.
[[nodiscard]] double JobMtbfSeconds(double node_mtbf_seconds, double nodes);

// Node MTBF from a failure rate per 1,000 node-days: 1000 x 86400 / rate seconds.
[[nodiscard]] double NodeMtbfFromRateSeconds(double failures_per_1000_node_days);

// `v` as a count, saturating: NaN and negatives give 0, values past 2^64 give UINT64_MAX
// (a cast would be undefined behaviour; found by the plan fuzzer under UBSan).
[[nodiscard]] uint64_t SaturatingCount(double v);

// Smallest k with P(X <= k) >= q for X ~ Poisson(mean). Summed in log space, so a mean in
// the thousands does not underflow. q in (0, 1).
[[nodiscard]] uint64_t PoissonQuantile(double mean, double q);

// P(X <= k) for X ~ Poisson(mean).
[[nodiscard]] double PoissonCdf(double mean, uint64_t k);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_FORMULAS_H_
