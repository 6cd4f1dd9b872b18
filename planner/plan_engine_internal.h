// The plan engine's inside, shared by the files it is split into (plan_engine.cc: the run
// through the steps, the findings, phases and the deadline search; plan_inputs.cc: each
// input checked and defaulted, the fleet, batch and shape; plan_figures.cc: compute, memory,
// checkpoints and failures, schedule, power, cost and data). Not for other folders:
// planner/plan_engine.h is the interface.
#ifndef FLIGHTPLAN_PLANNER_PLAN_ENGINE_INTERNAL_H_
#define FLIGHTPLAN_PLANNER_PLAN_ENGINE_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/formulas.h"
#include "planner/pipeline_split.h"
#include "planner/plan_engine.h"

namespace flightplan::planner::engine_internal {

// Defaults of optional plan fields (documented in plan.proto).
constexpr uint32_t kDefaultGpusPerNode = 8;
constexpr double kDefaultPue = 1.2;  // BLOOM's Jean Zay reported 1.2 (docs/reference-figures.md, power)
constexpr double kDefaultBudgetQuantile = 0.9;
constexpr double kDefaultContingency = 0.05;
// Device-to-host copy per GPU for an async snapshot: PCIe Gen4 x16 carries ~25 GB/s in
// practice (32 GB/s raw per direction, PCI-SIG 4.0 spec); Gen5 doubles it. Conservative.
constexpr double kDefaultSnapshotBytesPerSecond = 25e9;
// Above this MFU a plan is optimistic: the best published large runs reach 46-55%
// (PaLM 46.2%, Chowdhery et al. 2022; MegaScale 55.2%, Jiang et al. 2024).
constexpr double kOptimisticMfu = 0.65;
// Below this share of HBM left for activations a plan is tight.
constexpr double kActivationHeadroom = 0.2;
// A transformer's shape gives its parameters as about 12·L·h² + V·h (attention 4h², an
// MLP of 8h², the embedding; Kaplan et al. 2020, section 2.1, with the embedding added): within
// ~6% for Llama 3 70B and 405B with grouped-query attention and SwiGLU. Off by more than
// this factor, the shape or `params` is a typo (hidden 81,920 for 8,192 on a 70B: 92x).
constexpr double kShapeParamsFactor = 4;
// Below this expected goodput a plan wastes a quarter of its fleet-time: Meta reports
// effective training time above 90% for Llama 3 405B (Dubey et al. 2024); 75% is far
// below what large runs achieve.
constexpr double kLowGoodput = 0.75;
// Checkpoint writes may keep the storage busy at most this share of the run: it also
// serves the data loader, restores and the cluster's other jobs, and a save that is still
// writing when the next one starts queues behind it. A judgment, not a published figure;
// the interval chosen for asynchronous saves respects it.
constexpr double kMaxStorageDutyCycle = 0.25;
// Published fleets' failure rates differ from any assumption by ~3x: OPT-175B cycled over
// 100 hosts in ~2 months on 124 nodes (~13 per 1,000 node-days; Zhang et al. 2022, "OPT",
// sec. 2.5), Llama 3 405B saw 419 unexpected interruptions in 54 days on 2,048 nodes (3.8
// per 1,000 node-days; Dubey et al. 2024, sec. 3.3.4). A Gamma rate with CV 0.5 spans 0.44x
// to 1.67x of its mean from P10 to P90, a ratio of 3.8.
constexpr double kDefaultRateSpread = 0.5;
// Spares cover the nodes in repair at once with this probability.
constexpr double kSpareQuantile = 0.99;
// An 8x H100 node training at full load draws 76% of its 10.2 kW rating on average
// (Newkirk et al. 2025, "Empirically-Calibrated H100 Node Power Models for Reducing
// Uncertainty in AI Training Energy Estimation", arXiv 2506.14551); the same share
// applies to the GPU boards and the node's other parts here.
constexpr double kDefaultAveragePowerFraction = 0.76;
// Share of the IT rating drawn while the job is down (restarts, repairs, maintenance):
// idle GPUs draw 10-15% of their rating, the nodes' CPUs, fans and network much of
// theirs. A judgment, not a published figure; give cost.idle_power_fraction.
constexpr double kDefaultIdlePowerFraction = 0.35;
// HBM the framework holds beyond tensors: the CUDA context (~0.5 GB), NCCL's buffers and
// the caching allocator's fragmentation. A judgment; give hardware.reserved_bytes.
constexpr double kDefaultReservedFraction = 0.10;
// Context parallelism below this many tokens per rank is mostly communication: Llama 3's
// long-context stage ran cp 16 on 131,072-token sequences, 8,192 per rank (Dubey et al.
// 2024, "The Llama 3 Herd of Models"). The bound itself is a judgment, 8x below that.
constexpr double kMinCpChunkTokens = 1024;

// Dense BF16 peaks (docs/reference-figures.md, "Hardware"; NVIDIA H100/A100/B200 and AMD MI300X
// datasheets). A plan quoting twice these used the sparse figure.
// Dense FP8 is twice dense BF16 on Hopper and Blackwell (NVIDIA, "NVIDIA H100 Tensor Core
// GPU Architecture", 2022: H100 SXM5 BF16 989.4, FP8 1,978.9 TFLOP/s dense); A100 has no FP8.
inline bool HasFp8(const std::string& gpu) { return !absl::StartsWith(gpu, "A100"); }

inline const std::map<std::string, double>& KnownDensePeaks() {
  static const auto* peaks = new std::map<std::string, double>{
      {"A100", 312e12}, {"A100-SXM", 312e12}, {"A100-80GB", 312e12}, {"H100", 989e12},    {"H100-SXM", 989e12},
      {"H200", 989e12}, {"H200-SXM", 989e12}, {"B200", 2250e12},     {"MI300X", 1307e12},
  };
  return *peaks;
}

// What a phase's efficiency gives replaces the plan's: a figure (any of mfu, hfu, busy_mfu,
// busy_hfu) replaces the plan's figure whole, each convention it sets its own. True when it
// gave a figure.
inline bool OverlayEfficiency(PlanSpec::Efficiency& into, const PlanSpec::Efficiency& from) {
  const bool figure = from.mfu > 0 || from.hfu || from.busy_mfu || from.busy_hfu;
  if (figure) {
    into.mfu = from.mfu;
    into.hfu = from.hfu;
    into.busy_mfu = from.busy_mfu;
    into.busy_hfu = from.busy_hfu;
  }
  if (!from.recompute.empty()) into.recompute = from.recompute;
  if (!from.matmul_precision.empty()) into.matmul_precision = from.matmul_precision;
  if (from.causal_attention) into.causal_attention = from.causal_attention;
  if (from.count_attention) into.count_attention = from.count_attention;
  return figure;
}

// Numbers in messages: integers as integers below 1e7, the rest in e-notation without '+'.
inline std::string Num(double v) {
  if (std::fabs(v) < 1e7 && v == std::floor(v)) return absl::StrFormat("%.0f", v);
  std::string s = absl::StrFormat("%.4g", v);
  if (auto p = s.find("e+"); p != std::string::npos) s.erase(p + 1, 1);
  return s;
}

inline double Div(double a, double b) { return b == 0 ? 0 : a / b; }

inline int DomainRank(const std::string& d) {
  if (d == "gpu") return 0;
  if (d == "node") return 1;
  if (d == "rack") return 2;
  if (d == "cluster") return 3;
  if (d == "remote") return 4;
  return -1;
}

class Engine {
 public:
  // `figure_bubble`: the bubble of the layout an end-to-end figure was measured in, when
  // that is not this plan's own (a phase that changes the layout and keeps the plan's).
  explicit Engine(const PlanSpec& p, const PlanSpec::Phase::Ramp* ramp = nullptr,
                  std::optional<double> figure_bubble = std::nullopt)
      : p_(p), ramp_(ramp), figure_bubble_(figure_bubble) {
    r_.name = p.name;
  }

  // A plan in phases: each phase is a plan of its own (the parent's fields with the phase's
  // replacing them, its tokens, no deadline, maintenance or contingency), and this report
  // sums them; the schedule's maintenance, contingency, failure budget and deadline are
  // the whole run's.
  PlanReport RunPhased();

  PlanReport Run();

 private:
  // Checks on the finished figures, then the findings in order: errors first.
  void Finish();

  // The phases' reports summed into this one (all but the schedule, power and data).
  void Combine(const std::vector<PlanReport>& parts);

 private:
  void Error(std::string code, std::string message);
  void Warn(std::string code, std::string message);
  void Invalid(const std::string& field, double value, const std::string& rule);
  void Missing(const std::string& field, const std::string& why);

  // Never a negative size or a NaN in a report: a figure that broken inputs make so is 0,
  // and an error finding (raised where the input was checked) says why.
  void Sanitize();

  // Applies defaults and checks each input on its own.
  void Resolve();

  void Fleet();

  void Batch();

  void Shape();

  void Compute();

  // Memory per GPU on the heaviest pipeline stage. The state is split by part under the
  // ZeRO stage; activations follow Korthikanti et al. 2022 (ActivationBytesPerLayer) for the
  // micro-batches 1F1B keeps in flight; the first stage also holds the input embedding, the
  // last the output layer and the logits (untied embeddings: each end holds one V x h).
  // A batch ramp-up (Megatron-LM's --rampup-batch-size): the batch grows from `from` to the
  // phase's in steps of `step` sequences, each size training an equal share of the tokens
  // with the grad_accum it needs, so the bubble is larger while the batch is small.
  void Ramp();

  void Memory();

  // The plan's own pipeline split, valid (pipeline_split.h): the bubble and the stages'
  // memory follow it. False: the even split's formulas.
  bool SplitGiven() const { return split_.given && split_.error.empty() && !split_.chunk_layers.empty(); }
  // The share of each step the pipeline stands idle with `microbatches` per step.
  double Bubble(uint64_t microbatches) const {
    return SplitGiven() ? SplitBubbleFraction(split_, microbatches)
                        : PipelineBubbleFraction(pp_, microbatches, vstages_);
  }

  void CheckpointAndFailures();

  // Calendar share lost to maintenance on top of `busy` seconds of everything else.
  double Maintenance(double busy) const;

  void Schedule();

  void Power();

  // The schedule's lines in GPU-hours, energy and dollars. The fleet is paid for throughout;
  // it draws `training` watts while the job runs (compute, saves, redone work, and the
  // contingency, which is held for running) and `idle` watts while it is down (maintenance,
  // and the failure budget's detect, restart and restore).
  void CostAndEnergy(double reserved_gpus, double training, double idle);

  void Data();

  const PlanSpec& p_;
  const PlanSpec::Phase::Ramp* ramp_;
  std::optional<double> figure_bubble_;
  PlanReport r_;

  double active_ = 0;
  uint32_t gpus_per_node_ = kDefaultGpusPerNode;
  double pue_ = kDefaultPue;
  uint32_t tp_ = 1, pp_ = 1, dp_ = 0, cp_ = 1, ep_ = 1, mb_ = 1, ga_ = 1;
  StateBytesPerParam bytes_;
  std::string dtype_;
  uint32_t dtype_bytes_ = 4;
  double bytes_per_token_ = 4, dataset_tokens_ = 0;
  double read_bps_ = 0, snapshot_bps_ = 0;
  std::string storage_domain_, failure_domain_;
  uint32_t replicas_ = 1;
  double node_mtbf_ = 0, detect_ = 0, restart_ = 0, quantile_ = kDefaultBudgetQuantile;
  double maintenance_fraction_ = 0, maintenance_hours_ = 0, contingency_ = kDefaultContingency;
  double custom_fraction_ = 0;  // schedule.custom_fraction
  // Deliberate work (evaluations, checks) on `active` seconds of compute: active x f / (1 - f).
  [[nodiscard]] double CustomSeconds(double active) const {
    return custom_fraction_ > 0 && custom_fraction_ < 1 ? active * custom_fraction_ / (1 - custom_fraction_) : 0;
  }
  double active_seconds_ = 0;
  double snapshot_bytes_per_gpu_ = 0;
  uint32_t vstages_ = 1, etp_ = 1;
  PipelineSplit split_;
  Recompute recompute_ = Recompute::kSelective;
  AttentionConvention attention_ = AttentionConvention::kCausal;
  std::string recompute_name_ = "selective", attention_name_ = "causal";
  std::string precision_ = "bf16";  // hardware.peak_precision
  bool matmul_fp8_ = false;         // efficiency.matmul_precision (default: the peak's)
  double average_power_fraction_ = kDefaultAveragePowerFraction, reserved_bytes_ = 0;
  double idle_power_fraction_ = kDefaultIdlePowerFraction;
  double rate_spread_ = kDefaultRateSpread, job_per_day_ = 0, repair_hours_ = kDefaultRepairHours;
  double embedding_params_ = 0;
  double expert_params_ = 0,
         expert_copies_ = 1;  // set by Memory()  // one V x h matrix (the input embedding or the output layer)
  uint64_t attention_width_ = 0;
};

}  // namespace flightplan::planner::engine_internal

#endif  // FLIGHTPLAN_PLANNER_PLAN_ENGINE_INTERNAL_H_
