// The plan engine (plan_engine_internal.h): each input checked on its own and defaulted
// (Resolve), then the fleet, the batch and the model's shape.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/formulas.h"
#include "planner/plan_engine_internal.h"

namespace flightplan::planner::engine_internal {

void Engine::Resolve() {
  const auto& m = p_.model;
  if (m.params <= 0) Invalid("model.params", m.params, "must be > 0");
  active_ = m.active_params.value_or(m.params);
  if (active_ <= 0 || active_ > m.params)
    Invalid("model.active_params", active_, "must be > 0 and at most model.params");
  if (m.expert_params) {
    if (*m.expert_params < 0 || *m.expert_params >= m.params) {
      Invalid("model.expert_params", *m.expert_params,
              absl::StrCat("must be >= 0 and below model.params ", Num(m.params),
                           " (the experts are part of the parameters)"));
    } else if (active_ < m.params - *m.expert_params) {
      // The parameters outside the experts (attention, embeddings, shared layers) are
      // used by every token.
      Error("ACTIVE_BELOW_SHARED",
            absl::StrCat("model.active_params ", Num(active_), " is below the ", Num(m.params - *m.expert_params),
                         " parameters outside the experts (model.params - model.expert_params), "
                         "which every token uses."));
    }
  }
  if (p_.data.tokens == 0) Missing("data.tokens", "the training target in tokens");
  if (p_.hardware.peak_flops <= 0)
    Invalid("hardware.peak_flops", p_.hardware.peak_flops, "must be > 0 (dense BF16 FLOP/s)");
  const auto& e = p_.efficiency;
  std::vector<std::pair<std::string, double>> figures;
  if (e.mfu != 0) figures.emplace_back("efficiency.mfu", e.mfu);
  for (auto [name, v] : {std::pair{"efficiency.hfu", &e.hfu},
                         {"efficiency.busy_mfu", &e.busy_mfu},
                         {"efficiency.busy_hfu", &e.busy_hfu}}) {
    if (*v) figures.emplace_back(name, **v);
  }
  if (figures.size() > 1) {
    std::vector<std::string> names;
    for (const auto& f : figures) names.push_back(f.first);
    Error("CONFLICTING_FIELDS",
          absl::StrCat(absl::StrJoin(names, " and "),
                       " are all set; give one: mfu or hfu end to end, or busy_mfu or busy_hfu while the "
                       "pipeline is busy (the recompute mode converts between model and hardware FLOPs)."));
  } else if (figures.empty()) {
    Invalid("efficiency.mfu", e.mfu,
            "must be in (0, 1] (or give efficiency.hfu, or busy_mfu or busy_hfu for the efficiency while the "
            "pipeline is busy)");
  } else if (!(figures[0].second > 0 && figures[0].second <= 1)) {
    Invalid(figures[0].first, figures[0].second, "must be in (0, 1]");
  }
  if (p_.hardware.peak_precision.empty() || p_.hardware.peak_precision == "bf16") {
    precision_ = "bf16";
  } else if (p_.hardware.peak_precision == "fp8") {
    precision_ = "fp8";
  } else {
    Error("INVALID_VALUE",
          absl::StrCat("hardware.peak_precision '", p_.hardware.peak_precision, "' is invalid: bf16 or fp8."));
  }
  if (e.matmul_precision.empty()) {
    matmul_fp8_ = precision_ == "fp8";
  } else if (e.matmul_precision == "fp8" || e.matmul_precision == "bf16") {
    matmul_fp8_ = e.matmul_precision == "fp8";
  } else {
    Error("INVALID_VALUE",
          absl::StrCat("efficiency.matmul_precision '", e.matmul_precision, "' is invalid: bf16 or fp8."));
  }
  if (e.recompute.empty() || e.recompute == "selective") {
    recompute_ = Recompute::kSelective;
    recompute_name_ = "selective";
  } else if (e.recompute == "full") {
    recompute_ = Recompute::kFull;
    recompute_name_ = "full";
  } else if (e.recompute == "none") {
    recompute_ = Recompute::kNone;
    recompute_name_ = "none";
  } else {
    Error("INVALID_VALUE",
          absl::StrCat("efficiency.recompute '", e.recompute, "' is invalid: must be none, selective or full."));
  }
  if (!e.count_attention.value_or(true)) {
    attention_ = AttentionConvention::kNone;
    attention_name_ = "none";
  } else if (!e.causal_attention.value_or(true)) {
    attention_ = AttentionConvention::kFull;
    attention_name_ = "full";
  } else {
    attention_ = AttentionConvention::kCausal;
    attention_name_ = "causal";
  }
  const auto& cost = p_.cost;
  if (!(cost.gpu_hour_dollars >= 0) || !std::isfinite(cost.gpu_hour_dollars))
    Invalid("cost.gpu_hour_dollars", cost.gpu_hour_dollars, "must be >= 0");
  if (!(cost.energy_dollars_per_mwh >= 0) || !std::isfinite(cost.energy_dollars_per_mwh))
    Invalid("cost.energy_dollars_per_mwh", cost.energy_dollars_per_mwh, "must be >= 0");
  idle_power_fraction_ = cost.idle_power_fraction.value_or(kDefaultIdlePowerFraction);
  if (!(idle_power_fraction_ >= 0 && idle_power_fraction_ <= 1))
    Invalid("cost.idle_power_fraction", idle_power_fraction_, "must be in [0, 1]");
  average_power_fraction_ = p_.hardware.average_power_fraction.value_or(kDefaultAveragePowerFraction);
  if (!(average_power_fraction_ > 0 && average_power_fraction_ <= 1))
    Invalid("hardware.average_power_fraction", average_power_fraction_, "must be in (0, 1]");
  reserved_bytes_ =
      p_.hardware.reserved_bytes.value_or(kDefaultReservedFraction * std::max(0.0, p_.hardware.hbm_bytes));
  if (!(reserved_bytes_ >= 0)) Invalid("hardware.reserved_bytes", reserved_bytes_, "must be >= 0");
  if (p_.fleet.gpus == 0) Missing("fleet.gpus", "the GPUs the job runs on");
  gpus_per_node_ = p_.hardware.gpus_per_node.value_or(kDefaultGpusPerNode);
  if (gpus_per_node_ == 0) Invalid("hardware.gpus_per_node", 0, "must be > 0");
  pue_ = p_.fleet.pue.value_or(kDefaultPue);
  if (pue_ < 1) Invalid("fleet.pue", pue_, "must be >= 1");
  if (!p_.start_time) Missing("start_time", "the schedule's finish counts from it");

  const auto& l = p_.layout;
  tp_ = l.tp.value_or(1);
  pp_ = l.pp.value_or(1);
  cp_ = l.cp.value_or(1);
  ep_ = l.ep.value_or(1);
  mb_ = l.micro_batch.value_or(1);
  ga_ = l.grad_accum.value_or(1);
  vstages_ = l.virtual_stages.value_or(1);
  // The plan's own split of the layers over the stages, checked as Megatron-LM checks it; a
  // layout string gives the virtual stages.
  split_ =
      SplitPipeline({p_.model.layers, pp_, l.virtual_stages, l.account_for_embedding.value_or(false),
                     l.account_for_loss.value_or(false), l.first_stage_layers, l.last_stage_layers, l.pipeline_layout});
  // A plan whose every phase sets its own pp is split in its phases (each checks its own).
  const bool phases_split = !p_.phases.empty() && std::all_of(p_.phases.begin(), p_.phases.end(),
                                                              [](const PlanSpec::Phase& ph) { return ph.layout.pp; });
  if (!split_.error.empty() && !phases_split) {
    std::vector<std::string> keys;
    if (!l.pipeline_layout.empty())
      keys.push_back(absl::StrCat("layout.pipeline_model_parallel_layout '", l.pipeline_layout, "'"));
    if (l.account_for_embedding.value_or(false)) keys.push_back("layout.account_for_embedding_in_pipeline_split");
    if (l.account_for_loss.value_or(false)) keys.push_back("layout.account_for_loss_in_pipeline_split");
    if (l.first_stage_layers)
      keys.push_back(absl::StrCat("layout.decoder_first_pipeline_num_layers ", *l.first_stage_layers));
    if (l.last_stage_layers)
      keys.push_back(absl::StrCat("layout.decoder_last_pipeline_num_layers ", *l.last_stage_layers));
    Error("PIPELINE_SPLIT_INVALID",
          absl::StrCat(absl::StrJoin(keys, " and "), " with model.layers ", p_.model.layers, " on layout.pp ", pp_,
                       vstages_ > 1 ? absl::StrCat(" x virtual_stages ", vstages_) : std::string(),
                       ": Megatron-LM refuses it (\"", split_.error, "\")."));
  } else if (!l.pipeline_layout.empty()) {
    vstages_ = split_.virtual_stages;
  }
  if (l.pipeline_schedule == "1f1b" && vstages_ > 1) {
    Error("CONFLICTING_FIELDS", absl::StrCat("layout.pipeline_schedule 1f1b with layout.virtual_stages ", vstages_,
                                             ": model chunks per stage are the interleaved schedule."));
  } else if (l.pipeline_schedule == "interleaved" && vstages_ < 2) {
    Error("MISSING_FIELD",
          "layout.virtual_stages is required: layout.pipeline_schedule interleaved needs 2 or "
          "more model chunks per stage.");
  } else if (!l.pipeline_schedule.empty() && l.pipeline_schedule != "1f1b" && l.pipeline_schedule != "interleaved") {
    Error("INVALID_VALUE", absl::StrCat("layout.pipeline_schedule '", l.pipeline_schedule,
                                        "' is invalid: must be 1f1b or interleaved."));
  }
  etp_ = l.expert_tp.value_or(tp_);
  for (auto [name, v] : {std::pair{"layout.tp", tp_},
                         {"layout.pp", pp_},
                         {"layout.cp", cp_},
                         {"layout.ep", ep_},
                         {"layout.micro_batch", mb_},
                         {"layout.grad_accum", ga_},
                         {"layout.virtual_stages", vstages_},
                         {"layout.expert_tp", etp_}}) {
    if (v == 0) Invalid(name, 0, "must be >= 1");
  }
  const uint64_t model_parallel = uint64_t{tp_} * pp_ * cp_;
  if (l.dp) {
    dp_ = *l.dp;
    if (dp_ == 0) Invalid("layout.dp", 0, "must be >= 1");
  } else if (model_parallel > 0 && p_.fleet.gpus % model_parallel == 0) {
    dp_ = static_cast<uint32_t>(p_.fleet.gpus / model_parallel);
  }
  if (l.zero_stage > 3) Invalid("layout.zero_stage", l.zero_stage, "must be 0, 1, 2 or 3");

  bytes_.weight = p_.state.weight_bytes.value_or(2);
  bytes_.grad = p_.state.grad_bytes.value_or(4);
  bytes_.optimizer = p_.state.optimizer_bytes.value_or(12);

  dtype_ = p_.data.token_dtype.empty() ? "uint32" : p_.data.token_dtype;
  if (dtype_ == "uint16") {
    dtype_bytes_ = 2;
  } else if (dtype_ == "uint32") {
    dtype_bytes_ = 4;
  } else {
    Error("INVALID_VALUE", absl::StrCat("data.token_dtype '", dtype_, "' is invalid: must be uint16 or uint32."));
    dtype_bytes_ = 4;
  }
  bytes_per_token_ = p_.data.bytes_per_token.value_or(dtype_bytes_);
  dataset_tokens_ = static_cast<double>(p_.data.dataset_tokens.value_or(p_.data.tokens));

  const auto& c = p_.checkpoint;
  if (c.write_bytes_per_second <= 0)
    Invalid("checkpoint.write_bytes_per_second", c.write_bytes_per_second, "must be > 0");
  read_bps_ = c.read_bytes_per_second.value_or(c.write_bytes_per_second);
  if (read_bps_ <= 0) Invalid("checkpoint.read_bytes_per_second", read_bps_, "must be > 0");
  snapshot_bps_ = c.snapshot_bytes_per_second.value_or(kDefaultSnapshotBytesPerSecond);
  if (snapshot_bps_ <= 0) Invalid("checkpoint.snapshot_bytes_per_second", snapshot_bps_, "must be > 0");
  if (c.interval_seconds < 0) Invalid("checkpoint.interval_seconds", c.interval_seconds, "must be >= 0 (0 = choose)");
  storage_domain_ = c.storage_domain.empty() ? "remote" : c.storage_domain;
  if (DomainRank(storage_domain_) < 1) {
    Error("INVALID_VALUE", absl::StrCat("checkpoint.storage_domain '", storage_domain_,
                                        "' is invalid: must be node, rack, cluster or remote."));
  }
  replicas_ = c.replicas.value_or(1);
  if (replicas_ == 0) Invalid("checkpoint.replicas", 0, "must be >= 1");

  const auto& f = p_.failures;
  if (f.node_mtbf_hours && f.failures_per_1000_node_days) {
    Error("CONFLICTING_FIELDS",
          "failures.node_mtbf_hours and failures.failures_per_1000_node_days are both set; "
          "give one.");
  }
  if (f.node_mtbf_hours) {
    if (*f.node_mtbf_hours <= 0) Invalid("failures.node_mtbf_hours", *f.node_mtbf_hours, "must be > 0");
    node_mtbf_ = *f.node_mtbf_hours * 3600.0;
  } else if (f.failures_per_1000_node_days) {
    const double rate = *f.failures_per_1000_node_days;
    if (rate <= 0) Invalid("failures.failures_per_1000_node_days", rate, "must be > 0");
    node_mtbf_ = rate > 0 ? NodeMtbfFromRateSeconds(rate) : 0;
  } else {
    Missing("failures.node_mtbf_hours (or failures.failures_per_1000_node_days)",
            "the failure budget and checkpoint interval follow from it");
  }
  detect_ = f.detect_seconds.value_or(kDefaultDetectSeconds);
  restart_ = f.restart_seconds.value_or(kDefaultRestartSeconds);
  if (detect_ < 0) Invalid("failures.detect_seconds", detect_, "must be >= 0");
  if (restart_ < 0) Invalid("failures.restart_seconds", restart_, "must be >= 0");
  failure_domain_ = f.failure_domain.empty() ? "node" : f.failure_domain;
  if (DomainRank(failure_domain_) < 0 || DomainRank(failure_domain_) > 2) {
    Error("INVALID_VALUE",
          absl::StrCat("failures.failure_domain '", failure_domain_, "' is invalid: must be gpu, node or rack."));
  }
  rate_spread_ = f.rate_spread.value_or(kDefaultRateSpread);
  if (!(rate_spread_ >= 0 && rate_spread_ <= 10)) Invalid("failures.rate_spread", rate_spread_, "must be in [0, 10]");
  job_per_day_ = f.job_interruptions_per_day.value_or(0);
  if (!(job_per_day_ >= 0)) Invalid("failures.job_interruptions_per_day", job_per_day_, "must be >= 0");
  repair_hours_ = f.spare_repair_hours.value_or(kDefaultRepairHours);
  if (!(repair_hours_ >= 0)) Invalid("failures.spare_repair_hours", repair_hours_, "must be >= 0");
  if (f.slowdown_fix_hours && !(*f.slowdown_fix_hours > 0 && std::isfinite(*f.slowdown_fix_hours))) {
    Invalid("failures.slowdown_fix_hours", *f.slowdown_fix_hours, "must be > 0 (or left out)");
  }
  if (f.crisis_fix_days && !(*f.crisis_fix_days > 0 && std::isfinite(*f.crisis_fix_days))) {
    Invalid("failures.crisis_fix_days", *f.crisis_fix_days, "must be > 0 (or left out)");
  }
  quantile_ = f.budget_quantile.value_or(kDefaultBudgetQuantile);
  if (quantile_ <= 0 || quantile_ >= 1) Invalid("failures.budget_quantile", quantile_, "must be in (0, 1)");

  const auto& a = p_.availability;
  if (a.maintenance_fraction && a.maintenance_hours) {
    Error("CONFLICTING_FIELDS",
          "availability.maintenance_fraction and availability.maintenance_hours are both "
          "set; give one.");
  }
  maintenance_fraction_ = a.maintenance_fraction.value_or(0);
  maintenance_hours_ = a.maintenance_hours.value_or(0);
  if (maintenance_fraction_ < 0 || maintenance_fraction_ >= 1)
    Invalid("availability.maintenance_fraction", maintenance_fraction_, "must be in [0, 1)");
  if (maintenance_hours_ < 0) Invalid("availability.maintenance_hours", maintenance_hours_, "must be >= 0");
  contingency_ = p_.contingency_fraction.value_or(kDefaultContingency);
  if (contingency_ < 0 || contingency_ >= 1) Invalid("contingency_fraction", contingency_, "must be in [0, 1)");
  custom_fraction_ = p_.schedule.custom_fraction.value_or(0);
  if (!(custom_fraction_ >= 0 && custom_fraction_ < 1)) {
    Invalid("schedule.custom_fraction", custom_fraction_, "must be in [0, 1)");
    custom_fraction_ = 0;
  }
}

void Engine::Fleet() {
  const uint32_t gpus = p_.fleet.gpus;
  r_.fleet.gpus = gpus;
  r_.fleet.spare_nodes = p_.fleet.spare_nodes;
  if (gpus_per_node_ == 0) return;
  r_.fleet.nodes = static_cast<uint32_t>((uint64_t{gpus} + gpus_per_node_ - 1) / gpus_per_node_);
  r_.fleet.dp = dp_;
  if (gpus % gpus_per_node_ != 0) {
    Error("PARTIAL_NODE", absl::StrCat("fleet.gpus ", gpus, " is not a whole number of ", gpus_per_node_,
                                       "-GPU nodes (", Num(Div(gpus, gpus_per_node_)), " nodes)."));
  }
  const uint64_t product = uint64_t{tp_} * pp_ * dp_ * cp_;
  if (product != gpus) {
    Error("LAYOUT_GPU_MISMATCH", absl::StrCat("layout tp ", tp_, " x pp ", pp_, " x dp ", dp_, " x cp ", cp_, " = ",
                                              product, " GPUs, but fleet.gpus is ", gpus, "."));
  }
}

void Engine::Batch() {
  auto& b = r_.batch;
  b.sequences_per_step = uint64_t{mb_} * ga_ * dp_;
  const uint32_t seq_len = p_.model.seq_len;
  const auto& stated = p_.layout.global_batch_tokens;
  if (seq_len > 0) {
    b.tokens_per_step = b.sequences_per_step * seq_len;
    if (stated && *stated != b.tokens_per_step) {
      Error("BATCH_MISMATCH",
            absl::StrCat("micro_batch ", mb_, " x grad_accum ", ga_, " x dp ", dp_, " x seq_len ", seq_len, " = ",
                         b.tokens_per_step, " tokens per step, but layout.global_batch_tokens is ", *stated, "."));
    }
  } else if (stated) {
    b.tokens_per_step = *stated;
  } else {
    Missing("model.seq_len (or layout.global_batch_tokens)", "the batch arithmetic needs the tokens per sequence");
  }
  if (cp_ > 1 && seq_len > 0 && seq_len % (2 * cp_) != 0) {
    Error("SEQ_LEN_NOT_DIVISIBLE_BY_CP", absl::StrCat("model.seq_len ", seq_len, " does not split into 2 x cp = ",
                                                      2 * cp_, " equal chunks for context parallelism."));
  }
  const StepCount steps = CountSteps(p_.data.tokens, b.tokens_per_step);
  b.steps = steps.steps;
  b.last_step_tokens = steps.last_step_tokens;
}

void Engine::Shape() {
  const auto& m = p_.model;
  embedding_params_ = static_cast<double>(m.vocab_size) * m.hidden;
  const uint32_t kv_heads = m.kv_heads ? m.kv_heads : m.heads;
  if (tp_ > 0 && m.heads > 0 && m.heads % tp_ != 0) {
    Error("HEADS_NOT_DIVISIBLE_BY_TP",
          absl::StrCat("model.heads ", m.heads, " is not divisible by layout.tp ", tp_, "."));
  }
  if (tp_ > 0 && kv_heads > 0 && kv_heads % tp_ != 0) {
    if (tp_ % kv_heads == 0) {
      // Fewer KV heads than tp ranks (multi-query attention on tp 4, as StarCoder
      // trained): each KV head is replicated on tp / kv_heads ranks, as Megatron-LM does.
      Warn("KV_HEADS_REPLICATED",
           absl::StrCat("model.kv_heads ", kv_heads, " on layout.tp ", tp_, ": each KV head is replicated on ",
                        tp_ / kv_heads, " tensor-parallel ranks (their weights and KV activations ",
                        "are held that many times)."));
    } else {
      Error("KV_HEADS_NOT_DIVISIBLE_BY_TP",
            absl::StrCat("model.kv_heads ", kv_heads, " is neither divisible by layout.tp ", tp_,
                         " nor a divisor of it: the heads cannot be split or replicated evenly."));
    }
  }
  const uint32_t scaleup = p_.hardware.scaleup_gpus.value_or(gpus_per_node_);
  if (tp_ > scaleup && scaleup > 0) {
    Warn("TP_SPANS_NODES",
         absl::StrCat("layout.tp ", tp_, " spans ", Num(std::ceil(Div(tp_, scaleup))), " scale-up domains of ", scaleup,
                      " GPUs", p_.hardware.scaleup_gpus ? " (hardware.scaleup_gpus)" : " (one node each)",
                      ": tensor parallelism's all-reduces per layer then cross the inter-node network instead of "
                      "NVLink, which efficiency.mfu must allow for."));
  }
  // An expert-parallel group is expert_tp x ep consecutive ranks: Megatron-Core's expert
  // grid is ordered tp-cp-ep-dp-pp with cp 1 and tp = expert_tp (megatron/core/
  // parallel_state.py initialize_model_parallel, the expert RankGenerator, d98e8a64), so an
  // EP group's ranks are expert_tp apart. Past the scale-up domain, every MoE layer's
  // all-to-all (dispatch and combine) crosses the scale-out network.
  const uint64_t ep_span = uint64_t{etp_} * ep_;
  if (ep_ > 1 && scaleup > 0 && ep_span > scaleup) {
    Warn("EP_SPANS_NODES",
         absl::StrCat("layout.ep ", ep_, etp_ > 1 ? absl::StrCat(" x expert_tp ", etp_) : std::string(), " spans ",
                      Num(std::ceil(Div(static_cast<double>(ep_span), scaleup))), " scale-up domains of ", scaleup,
                      " GPUs", p_.hardware.scaleup_gpus ? " (hardware.scaleup_gpus)" : " (one node each)",
                      ": every MoE layer's all-to-all (token dispatch and combine) then crosses the scale-out "
                      "network instead of NVLink, which efficiency.mfu must allow for (an NVL72 domain, "
                      "hardware.scaleup_gpus 72, holds ep 64)."));
  }
  if (m.num_experts) {
    if (*m.num_experts == 0) {
      Invalid("model.num_experts", 0, "must be >= 1 (or left out for a dense model)");
    } else if (ep_ > 0 && *m.num_experts % ep_ != 0) {
      // megatron/training/arguments.py validate_args (d98e8a64): "assert args.num_experts %
      // args.expert_model_parallel_size == 0"; megatron/core/transformer/moe/moe_layer.py
      // BaseMoELayer.__init__ asserts it too (num_local_experts = num_moe_experts // ep).
      Error("EXPERTS_NOT_DIVISIBLE_BY_EP",
            absl::StrCat("model.num_experts ", *m.num_experts, " is not divisible by layout.ep ", ep_,
                         ": each expert-parallel rank holds the same number of whole experts, and Megatron-LM refuses "
                         "it (\"Number of experts should be a multiple of expert model parallel_size.\")."));
    }
  }
  // The interleaved schedule as Megatron-LM enforces it (megatron/training/arguments.py
  // validate_args and megatron/core/pipeline_parallel/schedules.py, d98e8a64, 2026-08).
  // A split of the plan's own is checked with it (Resolve, pipeline_split.h).
  const bool own_split = p_.layout.account_for_embedding.value_or(false) ||
                         p_.layout.account_for_loss.value_or(false) || p_.layout.first_stage_layers ||
                         p_.layout.last_stage_layers || !p_.layout.pipeline_layout.empty();
  if (!own_split && vstages_ > 1 && pp_ > 0 && m.layers > 0 &&
      (m.layers % pp_ != 0 || (m.layers / pp_) % vstages_ != 0)) {
    Error("INTERLEAVED_LAYERS_UNEVEN",
          absl::StrCat("model.layers ", m.layers, " over layout.pp ", pp_, " and layout.virtual_stages ", vstages_,
                       ": Megatron-LM asserts that the layers divide evenly over the stages and each stage's over "
                       "its virtual stages ('number of layers per pipeline stage must be divisible number of "
                       "layers per virtual pipeline stage'). The embedding and the loss counted as layers "
                       "(layout.account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split), the "
                       "first and last stages' own counts or layout.pipeline_model_parallel_layout split it "
                       "unevenly, as NVIDIA's recipes do."));
  }
  if (!own_split && pp_ > 0 && m.layers > 0 && m.layers % pp_ != 0) {
    Warn("LAYERS_NOT_DIVISIBLE_BY_PP",
         absl::StrCat("model.layers ", m.layers, " do not split evenly over layout.pp ", pp_, " stages (",
                      Num(std::ceil(Div(m.layers, pp_))), " on the largest); the slowest stage sets the pace."));
  }
  if (m.hidden > 0 && m.heads > 0 && m.hidden % m.heads != 0) {
    Error("HIDDEN_NOT_DIVISIBLE_BY_HEADS",
          absl::StrCat("model.hidden ", m.hidden, " is not divisible by model.heads ", m.heads, "."));
  }
  if (m.layers > 0 && m.hidden > 0 && p_.model.params > 0) {
    const double h = m.hidden;
    const double implied = 12.0 * m.layers * h * h + static_cast<double>(m.vocab_size) * h;
    // A mixture of experts holds more than its shape's dense layers: compare the shape
    // with the active parameters from below and all of them from above.
    const double low = std::min(active_, p_.model.params) / kShapeParamsFactor;
    const double high = p_.model.params * kShapeParamsFactor;
    if (implied < low || implied > high) {
      Error("SHAPE_PARAMS_MISMATCH",
            absl::StrCat("model.layers ", m.layers, " x hidden ", m.hidden, " (vocab ", m.vocab_size,
                         ") imply about 12·L·h² + V·h = ", Num(implied), " parameters, but model.params is ",
                         Num(p_.model.params), " (", Num(std::round(implied / p_.model.params * 10) / 10),
                         "x): one of them is wrong."));
    }
  }
  if (cp_ > 1 && m.seq_len > 0 && static_cast<double>(m.seq_len) / cp_ < kMinCpChunkTokens) {
    Warn("CP_CHUNK_TOO_SMALL", absl::StrCat("layout.cp ", cp_, " splits model.seq_len ", m.seq_len, " into ",
                                            Num(static_cast<double>(m.seq_len) / cp_), " tokens per rank: below ",
                                            Num(kMinCpChunkTokens), " context parallelism is mostly communication."));
  }
  if (cp_ > 1 && m.seq_len > 0 && cp_ > m.seq_len) {
    Invalid("layout.cp", cp_, absl::StrCat("must not exceed model.seq_len ", m.seq_len));
  }
  const uint64_t ids = uint64_t{1} << (8 * dtype_bytes_);
  if (m.vocab_size > 0 && m.vocab_size > ids) {
    Error("TOKEN_DTYPE_OVERFLOW",
          absl::StrCat("vocab_size ", m.vocab_size, " does not fit token_dtype ", dtype_, " (max ", ids, " ids)."));
  }
  if (bytes_per_token_ < dtype_bytes_) {
    Error("BYTES_PER_TOKEN_TOO_SMALL", absl::StrCat("data.bytes_per_token ", Num(bytes_per_token_), " is smaller than ",
                                                    dtype_, "'s ", dtype_bytes_, " bytes."));
  }
}

}  // namespace flightplan::planner::engine_internal
