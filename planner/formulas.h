// Scalar formulas of the plan engine, each a pure function with its source.
//
// Thread-safe: no state. No I/O, no clock. Units are in the parameter names.
#ifndef FLIGHTPLAN_PLANNER_FORMULAS_H_
#define FLIGHTPLAN_PLANNER_FORMULAS_H_

#include <cstdint>

namespace flightplan::planner {

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

// The attention FLOPs per token under a counting convention: `full` counts the whole s x s
// score matrix (AttentionFlopsPerToken, PaLM's 12·L·H·Q·T, Narayanan et al. 2021's s/6h
// term); `causal` half of it, as causal kernels compute and as Megatron-LM counts today
// (megatron/training/training.py, num_floating_point_operations: seq_length / hidden_size
// / 2, "only half of the attention matrix is non-zero"); `none` leaves attention out (6N
// only, as LLaMA's and PaLM's 45.7% MFU are stated).
enum class AttentionConvention { kCausal, kFull, kNone };
[[nodiscard]] double AttentionFlopsPerToken(uint32_t layers, uint64_t width, uint32_t seq_len,
                                            AttentionConvention convention);

// Share of a step a pipeline stands idle under 1F1B: (pp - 1) / (v·m + pp - 1) with m
// micro-batches per step and v model chunks per stage (v > 1: the interleaved schedule).
// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
// Using Megatron-LM", sec. 2.2.1 (bubble time over ideal time (p-1)/m) and 2.2.2 (divided
// by v). 0 when pp <= 1.
[[nodiscard]] double PipelineBubbleFraction(uint32_t pp, uint64_t microbatches, uint32_t virtual_stages);

// Activation bytes one transformer layer stores for the backward pass, per micro-batch of
// `micro_batch` sequences of `seq_len` tokens (16-bit activations). Korthikanti et al.
// 2022, "Reducing Activation Recomputation in Large Transformer Models", sec. 4 and table
// 2, with sequence parallelism whenever tp > 1 (so every term divides by tp):
//   none:      s·b·h·(34 + 5·a·s/h) / t  (the a·s² score, softmax and dropout tensors stored)
//   selective: s·b·h·34 / t              (the attention core recomputed: what FlashAttention's
//                                          backward does, Dao et al. 2022 sec. 3.1)
//   full:      2·s·b·h / t               (only each layer's input kept: table 2's 2·s·b·h,
//                                          sharded over tp by sequence parallelism)
// Context parallelism splits the sequence: s is seq_len / cp (the scores of the local
// queries against every key in mode none). The 34 is for a GPT layer (4h MLP, dropout):
// attention 11 (its input 2, Q and K 4, V 2, the projection's input 2, a dropout mask 1),
// MLP 19 (input 2, the activation's input 8, the second matmul's input 8, a mask 1), the
// two layer norms' inputs 4. Without dropout the two masks go (32), and the as² dropout
// mask and output (2·a·s/h is left of the 5). With FP8 matmul inputs (Transformer Engine
// keeps the FP8 copy of each matmul's input for the backward pass: 1 byte, not 2) the
// inputs of the QKV, projection, first and second MLP matmuls take 1 + 1 + 1 + 4 instead
// of 2 + 2 + 2 + 8: 7 less.
enum class Recompute { kNone, kSelective, kFull };
struct ActivationKinds {
  bool dropout = true;
  bool fp8_matmul_inputs = false;
};
[[nodiscard]] double ActivationBytesPerLayer(double seq_len, double micro_batch, double hidden, double heads, double tp,
                                             double cp, Recompute mode, ActivationKinds kinds = {});

// Model FLOPs utilisation implied by an observed throughput: achieved model FLOP/s over
// peak. PaLM 540B: 6 x 540.35e9 x 238.3e3 / (6144 x 275e12) = 45.7% (Chowdhery et al.
// 2022, sec. 4.1).
[[nodiscard]] double ImpliedMfu(double flops_per_token, double tokens_per_second, double gpus, double peak_flops);

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

// The standard normal's quantile: z with P(Z <= z) = p (Acklam's rational approximation
// and one Halley step, about 1e-15 relative; -inf and +inf at 0 and 1).
[[nodiscard]] double NormalQuantile(double p);

// Smallest k with P(X <= k) >= q for X ~ Poisson(mean). Summed in log space, so a mean in
// the thousands does not underflow. q in (0, 1).
[[nodiscard]] uint64_t PoissonQuantile(double mean, double q);

// Smallest k with P(X <= k) >= q for X ~ Poisson(L), L ~ Gamma with mean `mean` and
// coefficient of variation `cv`: the negative binomial with variance mean + (cv·mean)²
// (Greenwood and Yule 1920). The count of a process whose rate is itself uncertain. cv 0
// is the Poisson quantile.
[[nodiscard]] uint64_t NegativeBinomialQuantile(double mean, double cv, double q);

// P(X <= k) for X ~ Poisson(mean).
[[nodiscard]] double PoissonCdf(double mean, uint64_t k);

}  // namespace flightplan::planner

#endif  // FLIGHTPLAN_PLANNER_FORMULAS_H_
