// The plan engine (plan_engine_internal.h): the figures, in the order Run computes them:
// compute, the batch ramp, memory, checkpoints and failures, schedule, power, cost and
// energy, data.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/formulas.h"
#include "planner/plan_engine_internal.h"

namespace flightplan::planner::engine_internal {

void Engine::Compute() {
  auto& c = r_.compute;
  const auto& m = p_.model;
  // Attention width: heads x head_dim when both are given (PaLM's H x Q), else hidden.
  attention_width_ = (m.heads && m.head_dim) ? uint64_t{m.heads} * m.head_dim : m.hidden;
  const bool shape = m.layers && m.seq_len && attention_width_ > 0;
  c.attention_convention = shape ? attention_name_ : "none (no shape given)";
  c.recompute = recompute_name_;
  c.attention_flops_per_token = shape ? AttentionFlopsPerToken(m.layers, attention_width_, m.seq_len, attention_) : 0;
  // Untied embeddings: the input one is a lookup, which Megatron-LM's count leaves out.
  const bool untied = m.tied_embeddings.has_value() && !*m.tied_embeddings;
  const double dense = DenseFlopsPerToken(active_ - (untied ? embedding_params_ : 0));
  c.flops_per_token = dense + c.attention_flops_per_token;
  // What the GPUs execute besides: the forward pass again where activations were dropped.
  // Full recomputation redoes every layer's forward (2 FLOPs per parameter, all but the
  // output layer, and a third of attention's training FLOPs); selective redoes
  // attention's forward only. Narayanan et al. 2021, appendix: 96·B·s·l·h² with full
  // recomputation against 72 without, the logit layer (V/(16lh)) not recomputed.
  double recomputed = 0;
  if (recompute_ == Recompute::kFull) {
    recomputed = 2 * std::max(0.0, active_ - embedding_params_) + c.attention_flops_per_token / 3;
  } else if (recompute_ == Recompute::kSelective) {
    recomputed = c.attention_flops_per_token / 3;
  }
  c.hardware_flops_per_token = c.flops_per_token + recomputed;
  const double hardware_over_model = Div(c.hardware_flops_per_token, c.flops_per_token);
  // The plan's figure as MFU: end to end (mfu, hfu: the bubble is in it), or while the
  // pipeline is busy (busy_mfu, busy_hfu: the bubble is charged on top).
  const auto& e = p_.efficiency;
  const bool busy = e.busy_mfu || e.busy_hfu;
  const double stated_mfu = e.hfu        ? Div(*e.hfu, hardware_over_model)
                            : e.busy_hfu ? Div(*e.busy_hfu, hardware_over_model)
                            : e.busy_mfu ? *e.busy_mfu
                                         : e.mfu;
  if (vstages_ > 1 && pp_ > 1 && ga_ < pp_) {
    // schedules.py: "The number of contiguous micro-batches in a virtual pipeline stage
    // should range in [PP, M]" (the group is pp micro-batches by default): a ValueError.
    Error("INTERLEAVED_TOO_FEW_MICROBATCHES",
          absl::StrCat(ga_, " micro-batches per step on layout.pp ", pp_,
                       " stages: Megatron-LM's interleaved schedule needs at least as many micro-batches as "
                       "stages, and refuses to run (more grad_accum, or the 1f1b schedule)."));
  }
  c.bubble_fraction = Bubble(ga_);
  const double figure_bubble = figure_bubble_.value_or(c.bubble_fraction);
  c.bubble_in_efficiency = !busy;
  c.busy_mfu = busy ? stated_mfu : Div(stated_mfu, 1 - figure_bubble);
  c.busy_hfu = c.busy_mfu * hardware_over_model;
  c.mfu = c.busy_mfu * (1 - c.bubble_fraction);
  c.hfu = c.mfu * hardware_over_model;

  c.dense_total_flops = dense * static_cast<double>(p_.data.tokens);
  const double tokens = static_cast<double>(p_.data.tokens);
  c.total_flops = c.flops_per_token * tokens;
  const double gpus = p_.fleet.gpus;
  c.cluster_flops_per_second = gpus * p_.hardware.peak_flops * c.mfu;
  c.tokens_per_second = Div(c.cluster_flops_per_second, c.flops_per_token);
  active_seconds_ = Div(tokens, c.tokens_per_second);
  c.active_gpu_hours = gpus * active_seconds_ / 3600.0;

  const std::string figure = e.hfu        ? absl::StrCat("efficiency.hfu ", Num(*e.hfu))
                             : e.busy_hfu ? absl::StrCat("efficiency.busy_hfu ", Num(*e.busy_hfu))
                             : e.busy_mfu ? absl::StrCat("efficiency.busy_mfu ", Num(*e.busy_mfu))
                                          : absl::StrCat("efficiency.mfu ", Num(e.mfu));
  if (c.mfu > kOptimisticMfu && c.mfu <= 1) {
    Warn("MFU_OPTIMISTIC",
         absl::StrCat(figure, (e.hfu || busy) ? absl::StrCat(" is MFU ", Num(c.mfu), " end to end") : "",
                      ", above what published large runs reach (46-55%)."));
  } else if (!busy && figure_bubble > 0 && stated_mfu > 0 && stated_mfu <= 1) {
    // An end-to-end figure and the bubble imply what the GPUs do between the bubbles:
    // above the peak (counting the recomputed forward) it cannot be; above what
    // published runs reach end to end (kOptimisticMfu) it is unlikely.
    const std::string implied = absl::StrCat(
        figure, " end to end, with the pipeline idle ", Num(std::round(figure_bubble * 1000) / 10),
        figure_bubble_
            ? std::string("% of each step in the plan's layout")
            : absl::StrCat("% of each step (pp ", pp_, ", ", ga_, " micro-batches per step",
                           vstages_ > 1 ? absl::StrCat(", ", vstages_, " virtual stages") : std::string(), ")"),
        ", implies ", Num(std::round(c.busy_mfu * 1000) / 10), "% MFU (", Num(std::round(c.busy_hfu * 1000) / 10),
        "% HFU) while the pipeline is busy");
    if (c.busy_hfu > 1) {
      Error("BUSY_EFFICIENCY_IMPOSSIBLE",
            absl::StrCat(implied,
                         ": more than the GPUs' peak. More micro-batches per step or an interleaved "
                         "schedule shrink the bubble; for a figure measured while busy, give "
                         "efficiency.busy_mfu."));
    } else if (c.busy_mfu > kOptimisticMfu) {
      Warn("BUSY_EFFICIENCY_OPTIMISTIC",
           absl::StrCat(implied,
                        ", above what published large runs reach (46-55%) end to end by more than "
                        "the margin an MFU figure gets (",
                        Num(kOptimisticMfu * 100), "%)."));
    }
  }
  if (shape && m.seq_len > 0 && c.attention_flops_per_token > dense) {
    Warn("ATTENTION_EXCEEDS_6N",
         absl::StrCat("attention counts ", Num(c.attention_flops_per_token), " FLOPs per token (", attention_name_,
                      " convention, seq_len ", m.seq_len, "), more than 6N = ", Num(dense),
                      ": check that efficiency.mfu was measured with the same convention."));
  }
  if (busy && c.bubble_fraction > 0.2) {
    Warn("PIPELINE_BUBBLE_LARGE",
         absl::StrCat("the pipeline stands idle ", Num(std::round(c.bubble_fraction * 1000) / 10),
                      "% of each step (pp ", pp_, ", ", ga_, " micro-batches per step",
                      vstages_ > 1 ? absl::StrCat(", ", vstages_, " virtual stages") : std::string(),
                      "): more micro-batches per step or an interleaved schedule "
                      "(layout.virtual_stages) shrink it."));
  }
  const auto known = KnownDensePeaks().find(p_.hardware.gpu);
  if (known != KnownDensePeaks().end()) {
    const bool fp8 = precision_ == "fp8";
    const double dense_peak = fp8 ? 2 * known->second : known->second;
    if (fp8 && !HasFp8(p_.hardware.gpu)) {
      Error("INVALID_VALUE", absl::StrCat("hardware.peak_precision fp8 is invalid for ", p_.hardware.gpu,
                                          ", which has no FP8 tensor cores."));
    } else if (p_.hardware.peak_flops > 1.5 * dense_peak) {
      Warn("PEAK_FLOPS_SPARSE",
           absl::StrCat("hardware.peak_flops ", Num(p_.hardware.peak_flops), " for ", p_.hardware.gpu,
                        " looks like the sparse figure; dense ", fp8 ? "FP8" : "BF16", " is ", Num(dense_peak),
                        fp8 ? "." : " (for FP8's dense peak, set hardware.peak_precision: fp8)."));
    }
  }
}

void Engine::Ramp() {
  if (ramp_ == nullptr) return;
  const uint64_t target = r_.batch.sequences_per_step;
  const uint64_t from = ramp_->from_sequences, step = ramp_->step_sequences;
  const uint64_t replica = uint64_t{dp_} * mb_;
  if (from == 0 || step == 0 || from >= target || (target - from) % step != 0 || replica == 0 || from % replica != 0 ||
      step % replica != 0) {
    Error("RAMP_INVALID",
          absl::StrCat("ramp from ", from, " sequences in steps of ", step, " to the batch of ", target,
                       " does not work: from must be above 0 and below the batch, the steps must reach it "
                       "exactly, and each size must split into whole micro-batches of ",
                       mb_, " on ", dp_, " replicas (multiples of ", replica, ")."));
    return;
  }
  const uint64_t sizes = (target - from) / step;
  if (sizes > 100000) {
    Error("RAMP_INVALID", absl::StrCat("ramp from ", from, " sequences in steps of ", step, " to the batch of ", target,
                                       " takes ", sizes, " batch sizes: more than 100,000."));
    return;
  }
  const double seq = p_.model.seq_len > 0
                         ? p_.model.seq_len
                         : Div(static_cast<double>(r_.batch.tokens_per_step), static_cast<double>(target));
  const double tokens = static_cast<double>(p_.data.tokens);
  const double share = tokens / static_cast<double>(sizes);
  const auto& c = r_.compute;
  // The plan's figure, as MFU while the pipeline is busy (an end-to-end figure is the
  // full batch's, so the smaller batches pay their larger bubble either way).
  const double busy_mfu = c.busy_mfu;
  const double peak = static_cast<double>(p_.fleet.gpus) * p_.hardware.peak_flops;
  double seconds = 0, bubble_seconds = 0, steps = 0;
  for (uint64_t k = 0; k < sizes; ++k) {
    const uint64_t batch = from + k * step;
    const double bubble = Bubble(batch / replica);
    const double mfu = busy_mfu * (1 - bubble);
    const double t = Div(share * c.flops_per_token, peak * mfu);
    seconds += t;
    bubble_seconds += t * bubble;
    steps += share / (static_cast<double>(batch) * seq);  // the batch changes mid-step count
  }
  auto& cw = r_.compute;
  active_seconds_ = seconds;
  cw.tokens_per_second = Div(tokens, seconds);
  cw.cluster_flops_per_second = cw.tokens_per_second * cw.flops_per_token;
  const double ratio = Div(cw.hfu, cw.mfu);
  cw.mfu = Div(cw.cluster_flops_per_second, peak);
  cw.hfu = cw.mfu * ratio;
  cw.bubble_fraction = Div(bubble_seconds, seconds);
  cw.busy_mfu = Div(cw.mfu, 1 - cw.bubble_fraction);
  cw.busy_hfu = cw.busy_mfu * ratio;
  cw.active_gpu_hours = p_.fleet.gpus * seconds / 3600.0;
  r_.batch.steps = SaturatingCount(std::ceil(steps - 1e-9));
}

void Engine::Memory() {
  auto& mem = r_.memory;
  mem.hbm_bytes = p_.hardware.hbm_bytes;
  if (tp_ == 0 || pp_ == 0 || dp_ == 0 || cp_ == 0 || etp_ == 0 || ep_ == 0) return;
  const auto& m = p_.model;
  const double params = std::max(0.0, p_.model.params);
  double expert = 0;
  if (p_.model.expert_params || ep_ > 1)
    expert = std::clamp(p_.model.expert_params.value_or(params - active_), 0.0, params);
  const double dense = params - expert;
  const double embed = std::min(embedding_params_, dense / 2);
  const double body = dense - 2 * embed;
  // ZeRO shards the dense state over dp x cp (Megatron-LM's distributed optimizer), and
  // an expert's over the ranks of the stage holding the same expert shard:
  // tp·dp·cp / (expert_tp·ep).
  const double shards = static_cast<double>(dp_) * cp_;
  const double expert_shards = Div(static_cast<double>(tp_) * dp_ * cp_, static_cast<double>(etp_) * ep_);
  expert_params_ = expert;
  expert_copies_ = expert_shards;
  if ((expert > 0 || ep_ > 1) &&
      std::fmod(static_cast<double>(tp_) * dp_ * cp_, static_cast<double>(etp_) * ep_) != 0) {
    Error("EP_NOT_DIVIDING_DP", absl::StrCat("layout.ep ", ep_, " x expert_tp ", etp_, " = ", uint64_t{ep_} * etp_,
                                             " does not divide tp x dp x cp = ", uint64_t{tp_} * dp_ * cp_,
                                             ": the experts cannot be spread evenly over a stage's ranks."));
  }
  const int zero = static_cast<int>(p_.layout.zero_stage);

  // ZeRO-3 gathers each layer's full weights before using it and prefetches the next:
  // two layers unsharded at once (Zhao et al. 2023, "PyTorch FSDP", sec. 3.3.2).
  if (zero == 3 && m.layers > 0) {
    mem.buffers = 2 * bytes_.weight * (body / m.layers / tp_ + expert / m.layers / (static_cast<double>(etp_) * ep_));
  }
  mem.reserve = reserved_bytes_;

  const bool shape = m.layers > 0 && m.hidden > 0 && m.seq_len > 0;
  double logits = 0;
  if (shape) {
    // Without the head count, heads of 128 dims (GPT-3, Llama): only mode none uses it.
    const double heads = m.heads ? m.heads : std::max(1.0, std::round(m.hidden / 128.0));
    const ActivationKinds kinds{m.dropout.value_or(true), matmul_fp8_};
    mem.activation_bytes_per_layer =
        ActivationBytesPerLayer(m.seq_len, mb_, m.hidden, heads, tp_, cp_, recompute_, kinds);
    // The layer being recomputed holds its activations again, as in selective mode.
    if (recompute_ == Recompute::kFull) {
      mem.recompute_working_bytes =
          ActivationBytesPerLayer(m.seq_len, mb_, m.hidden, heads, tp_, cp_, Recompute::kSelective, kinds);
    }
    // FP32 logits of one micro-batch for the loss, the vocabulary split over tp.
    logits = 4.0 * mb_ * (static_cast<double>(m.seq_len) / cp_) * m.vocab_size / tp_;
  }

  // The stages that may need the most: the first (the input embedding; 1F1B keeps min(pp, m)
  // micro-batches in flight there, and interleaving multiplies that by 1 + (pp-1)/(pp·v),
  // Korthikanti et al. 2022, sec. 4.2.3), the last (the output layer, one micro-batch in
  // flight and its logits) and, with a split of the plan's own, the fullest middle one
  // (min(pp-1, m) in flight, the same factor). Without one, each holds the largest share
  // of the layers (ceil(layers / pp)); with one, its own (pipeline_split.h).
  struct Stage {
    const char* name;
    double layers, in_flight, ends;
    bool logits;
  };
  const double interleave = vstages_ > 1 ? 1 + (pp_ - 1.0) / (pp_ * static_cast<double>(vstages_)) : 1;
  const double even = m.layers > 0 ? std::ceil(Div(m.layers, pp_)) : 0;
  std::vector<Stage> stages;
  if (pp_ == 1) {
    stages.push_back({"only", static_cast<double>(m.layers), 1, 2 * embed, true});
  } else if (!SplitGiven()) {
    stages.push_back({"first", even, std::min<double>(pp_, ga_) * interleave, embed, false});
    stages.push_back({"last", even, 1, embed, true});
  } else {
    auto ends = [&](uint32_t rank) {
      return embed * ((split_.embedding_rank == rank ? 1 : 0) + (split_.loss_rank == rank ? 1 : 0));
    };
    stages.push_back({"first", static_cast<double>(split_.StageLayers(0)), std::min<double>(pp_, ga_) * interleave,
                      ends(0), split_.loss_rank == 0});
    stages.push_back(
        {"last", static_cast<double>(split_.StageLayers(pp_ - 1)), 1, ends(pp_ - 1), split_.loss_rank == pp_ - 1});
    // Every middle rank r (1F1B keeps min(pp - r, m) micro-batches in flight there); the
    // heaviest is found below, after the state's arithmetic.
    for (uint32_t r = 1; r + 1 < pp_; ++r) {
      stages.push_back({"middle", static_cast<double>(split_.StageLayers(r)),
                        std::min<double>(pp_ - r, ga_) * interleave, ends(r), split_.loss_rank == r});
    }
  }
  struct Need {
    double weights = 0, grads = 0, optimizer = 0, activations = 0, logits = 0, total = 0;
  };
  auto need = [&](const Stage& st) {
    const double share = m.layers > 0 ? st.layers / m.layers : 1.0 / pp_;
    const double dense_per_gpu = (body * share + st.ends) / tp_;
    const double expert_per_gpu = expert * share / (static_cast<double>(etp_) * ep_);
    auto part = [&](StateBytesPerParam bytes) {
      return ZeroStateBytes(dense_per_gpu, shards, zero, bytes) +
             (expert > 0 ? ZeroStateBytes(expert_per_gpu, std::max(1.0, expert_shards), zero, bytes) : 0.0);
    };
    Need n;
    n.weights = part({bytes_.weight, 0, 0});
    n.grads = part({0, bytes_.grad, 0});
    n.optimizer = part({0, 0, bytes_.optimizer});
    n.activations = mem.activation_bytes_per_layer * st.layers * st.in_flight;
    n.logits = st.logits ? logits : 0;
    n.total = n.weights + n.grads + n.optimizer + n.activations + n.logits;
    return n;
  };
  // The heaviest; the first on a tie (the order above). The stages listed: the first, the
  // last and the heaviest middle rank.
  size_t pick = 0;
  Need chosen = need(stages[0]);
  const double common = mem.recompute_working_bytes + mem.buffers + mem.reserve;
  size_t middle = 0;
  double middle_total = -1;
  for (size_t i = 0; i < stages.size(); ++i) {
    const Need n = need(stages[i]);
    if (n.total > chosen.total) pick = i, chosen = n;
    if (i >= 2 && n.total > middle_total) middle = i, middle_total = n.total;
  }
  if (stages.size() > 1) {
    std::vector<size_t> listed = {0, 1};
    if (middle >= 2) listed.push_back(middle);
    for (size_t i : listed) {
      mem.stages.push_back({stages[i].name, static_cast<uint32_t>(stages[i].layers), need(stages[i]).total + common});
    }
  }
  const Stage& st = stages[pick];
  mem.stage = st.name;
  mem.layers_on_stage = static_cast<uint32_t>(st.layers);
  mem.weights = chosen.weights;
  mem.grads = chosen.grads;
  mem.optimizer = chosen.optimizer;
  mem.state_bytes_per_gpu = mem.weights + mem.grads + mem.optimizer;
  // What one GPU copies to host memory for an async save: its weights and optimizer state.
  snapshot_bytes_per_gpu_ = mem.weights + mem.optimizer;
  if (shape) {
    mem.microbatches_in_flight = st.in_flight;
    mem.activations = chosen.activations;
    mem.logits = chosen.logits;
  } else {
    mem.recompute_working_bytes = 0;
  }
  mem.total_bytes =
      mem.state_bytes_per_gpu + mem.activations + mem.recompute_working_bytes + mem.logits + mem.buffers + mem.reserve;
  mem.fits = mem.hbm_bytes <= 0 || mem.total_bytes <= mem.hbm_bytes;
  auto gb = [](double b) { return Num(std::round(b / 1e8) / 10); };
  if (mem.hbm_bytes > 0 && mem.state_bytes_per_gpu > mem.hbm_bytes) {
    Error("STATE_EXCEEDS_HBM",
          absl::StrCat("training state ", gb(mem.state_bytes_per_gpu), " GB per GPU (ZeRO stage ", zero, ", tp ", tp_,
                       ", pp ", pp_, ", dp ", dp_, ") exceeds hardware.hbm_bytes ", gb(mem.hbm_bytes), " GB."));
  } else if (!mem.fits) {
    Error("MEMORY_EXCEEDS_HBM",
          absl::StrCat("the ", mem.stage, " pipeline stage needs ", gb(mem.total_bytes), " GB per GPU: state ",
                       gb(mem.state_bytes_per_gpu), " + activations ", gb(mem.activations), " (",
                       Num(std::round(mem.microbatches_in_flight * 100) / 100), " micro-batches of ", mb_, " x ",
                       mem.layers_on_stage, " layers x ", gb(mem.activation_bytes_per_layer), " GB, recompute ",
                       recompute_name_, ") + recompute ", gb(mem.recompute_working_bytes), " + logits ", gb(mem.logits),
                       " + ZeRO-3 buffers ", gb(mem.buffers), " + reserve ", gb(mem.reserve),
                       " GB, over hardware.hbm_bytes ", gb(mem.hbm_bytes),
                       " GB. More recomputation, a larger tp, cp or pp, or a smaller micro_batch lowers it."));
  } else if (!shape && mem.hbm_bytes > 0 && mem.state_bytes_per_gpu > (1 - kActivationHeadroom) * mem.hbm_bytes) {
    Warn("STATE_NEAR_HBM", absl::StrCat("training state ", gb(mem.state_bytes_per_gpu), " GB per GPU leaves less than ",
                                        Num(kActivationHeadroom * 100), "% of ", gb(mem.hbm_bytes),
                                        " GB HBM for activations (not counted: the model's shape is not given)."));
  }
}

void Engine::CheckpointAndFailures() {
  auto& ck = r_.checkpoint;
  auto& fr = r_.failures;
  const auto& c = p_.checkpoint;
  ck.size_bytes = p_.model.params * (bytes_.weight + bytes_.optimizer);
  ck.write_seconds = Div(ck.size_bytes * replicas_, c.write_bytes_per_second);
  // A restore reads what every rank holds: replicated weights once per data-parallel
  // (and context-parallel) copy unless ZeRO-3 shards them, the optimizer state once
  // when ZeRO shards it. Loaders that read once and broadcast do better.
  // An expert's weights have tp·dp·cp / (expert_tp·ep) copies, not dp·cp.
  const double dense_copies = std::max(1.0, static_cast<double>(dp_) * cp_);
  const double dense = std::max(0.0, p_.model.params - expert_params_);
  auto read = [&](double params, double copies) {
    return params * (bytes_.weight * (p_.layout.zero_stage >= 3 ? 1 : copies) +
                     bytes_.optimizer * (p_.layout.zero_stage >= 1 ? 1 : copies));
  };
  ck.restore_read_bytes = read(dense, dense_copies) + read(expert_params_, std::max(1.0, expert_copies_));
  ck.read_seconds = Div(ck.restore_read_bytes, read_bps_);
  ck.blocking_seconds = c.async ? Div(snapshot_bytes_per_gpu_, snapshot_bps_) : ck.write_seconds;

  fr.node_mtbf_seconds = node_mtbf_;
  fr.job_mtbf_seconds = JobMtbfSeconds(node_mtbf_, r_.fleet.nodes);
  // Interruptions that do not scale with nodes (software, storage, the fabric) add
  // their rate.
  fr.job_interruptions_per_day = job_per_day_;
  if (job_per_day_ > 0 && fr.job_mtbf_seconds > 0) {
    fr.job_mtbf_seconds = 1.0 / (1.0 / fr.job_mtbf_seconds + job_per_day_ / 86400.0);
  }
  const double mtbf = fr.job_mtbf_seconds;
  if (mtbf > 0) {
    ck.young_interval_seconds = YoungIntervalSeconds(ck.blocking_seconds, mtbf);
    ck.daly_interval_seconds = DalyIntervalSeconds(ck.blocking_seconds, mtbf);
  }
  if (c.interval_seconds > 0) {
    ck.interval_seconds = c.interval_seconds;
    if (ck.interval_seconds < ck.write_seconds) {
      Error("CHECKPOINT_INTERVAL_TOO_SHORT",
            absl::StrCat("checkpoint.interval_seconds ", Num(ck.interval_seconds), " is shorter than the ",
                         Num(std::round(ck.write_seconds)), " s a checkpoint takes to write."));
    } else if (ck.daly_interval_seconds > 0 && (ck.interval_seconds > 2 * ck.daly_interval_seconds ||
                                                ck.interval_seconds < 0.5 * ck.daly_interval_seconds)) {
      Warn("CHECKPOINT_INTERVAL_FAR_FROM_OPTIMAL",
           absl::StrCat("checkpoint.interval_seconds ", Num(ck.interval_seconds), " is far from Daly's optimum of ",
                        Num(std::round(ck.daly_interval_seconds)), " s for a job MTBF of ", Num(std::round(mtbf)),
                        " s."));
    }
  } else {
    // An async save blocks little, so Daly's interval can be shorter than the write: keep
    // the storage's duty cycle under its bound (a synchronous save blocks for the whole
    // write, so Daly's interval already exceeds it by far).
    ck.interval_seconds = std::max(ck.daly_interval_seconds, c.async ? ck.write_seconds / kMaxStorageDutyCycle : 0.0);
    if (ck.interval_seconds > 0 && ck.interval_seconds < ck.write_seconds) {
      Error("CHECKPOINT_INTERVAL_TOO_SHORT",
            absl::StrCat("the chosen checkpoint interval of ", Num(std::round(ck.interval_seconds)),
                         " s is shorter than the ", Num(std::round(ck.write_seconds)),
                         " s a checkpoint takes to write."));
    }
  }
  if (mtbf > 0 && ck.blocking_seconds >= mtbf) {
    Error("CHECKPOINT_COST_EXCEEDS_MTBF",
          absl::StrCat("a checkpoint blocks training for ", Num(std::round(ck.blocking_seconds)),
                       " s, at least the job MTBF of ", Num(std::round(mtbf)),
                       " s: the job fails more often than it can save."));
  }
  ck.count = ck.interval_seconds > 0 ? SaturatingCount(std::ceil(active_seconds_ / ck.interval_seconds)) : 0;
  ck.overhead_seconds = static_cast<double>(ck.count) * ck.blocking_seconds;
  ck.storage_duty_cycle = Div(ck.write_seconds, ck.interval_seconds);
  ck.total_written_bytes = static_cast<double>(ck.count) * ck.size_bytes * replicas_;
  if (ck.interval_seconds >= ck.write_seconds && ck.storage_duty_cycle > kMaxStorageDutyCycle) {
    Warn("CHECKPOINT_STORAGE_BUSY",
         absl::StrCat("checkpoint writes keep the storage busy ", Num(std::round(ck.storage_duty_cycle * 100)),
                      "% of the run (", Num(std::round(ck.write_seconds)), " s of writing every ",
                      Num(std::round(ck.interval_seconds)), " s, ", Num(ck.total_written_bytes / 1e15),
                      " PB in all): above ", Num(kMaxStorageDutyCycle * 100),
                      "%, saves queue behind each other and starve the data loader."));
  }

  const int storage = DomainRank(storage_domain_);
  const int failure = DomainRank(failure_domain_);
  if (storage >= 1 && failure >= 0 && storage <= failure && replicas_ < 2) {
    Error("CHECKPOINT_IN_FAILURE_DOMAIN",
          absl::StrCat("checkpoint.storage_domain ", storage_domain_, " is inside failures.failure_domain ",
                       failure_domain_, " with ", replicas_, " replica: one ", failure_domain_,
                       " failure takes the checkpoint with it (use 2+ replicas or remote storage)."));
  }

  // Failures strike while the job runs: compute, saves, and the work redone after each
  // interruption (half an interval on average, and an async save's write, whose state is
  // not durable until written: the same redone work the loss per interruption counts).
  // With n = running / M and running = A + C + n x redo, n = (A + C) / (M - redo). The
  // deliberate work (schedule.custom_fraction) runs on the same fleet and counts in A + C.
  const double half = ck.interval_seconds / 2;
  const double redo = half + (c.async ? ck.write_seconds : 0.0);
  const double running = active_seconds_ + ck.overhead_seconds + CustomSeconds(active_seconds_);
  if (mtbf > 0) {
    if (mtbf > redo) {
      fr.expected_interruptions = running / (mtbf - redo);
    } else {
      fr.expected_interruptions = running / mtbf;
      Error("JOB_MTBF_TOO_SHORT", absl::StrCat("job MTBF ", Num(std::round(mtbf)), " s (", r_.fleet.nodes,
                                               " nodes) is under half the checkpoint interval of ",
                                               Num(std::round(ck.interval_seconds)), " s: the run cannot progress."));
    }
  }
  // An async save is durable only once written: on average the newest durable state is
  // half an interval plus a write old.
  fr.loss_per_interruption_seconds = detect_ + restart_ + ck.read_seconds + redo;
  fr.expected_loss_seconds = fr.expected_interruptions * fr.loss_per_interruption_seconds;
  if (quantile_ > 0 && quantile_ < 1) {
    fr.budget_interruptions = NegativeBinomialQuantile(fr.expected_interruptions, rate_spread_, quantile_);
  }
  fr.rate_spread = rate_spread_;
  // Spares: failed nodes are out for repair_hours; by Little's law nodes / MTBF x repair
  // are out at once on average, and the job restarts at full size only while the spares
  // cover them.
  if (node_mtbf_ > 0) {
    fr.nodes_in_repair = r_.fleet.nodes * repair_hours_ * 3600.0 / node_mtbf_;
    fr.nodes_in_repair_p99 = PoissonQuantile(fr.nodes_in_repair, kSpareQuantile);
    if (fr.nodes_in_repair_p99 > p_.fleet.spare_nodes) {
      Warn("SPARES_SHORT",
           absl::StrCat("fleet.spare_nodes ", p_.fleet.spare_nodes, " do not cover the nodes out for repair: ",
                        Num(std::round(fr.nodes_in_repair * 10) / 10), " on average, up to ", fr.nodes_in_repair_p99,
                        " (P99) at a node MTBF of ", Num(std::round(node_mtbf_ / 3600)), " h and ", Num(repair_hours_),
                        " h of repair (failures.spare_repair_hours); short of spares, a restart waits for a repair "
                        "or the job shrinks."));
    }
  }
  fr.budget_seconds = static_cast<double>(fr.budget_interruptions) * fr.loss_per_interruption_seconds;
}

double Engine::Maintenance(double busy) const {
  if (maintenance_hours_ > 0) return maintenance_hours_ * 3600.0;
  if (maintenance_fraction_ <= 0 || maintenance_fraction_ >= 1) return 0;
  return busy * maintenance_fraction_ / (1 - maintenance_fraction_);
}

void Engine::Schedule() {
  auto& s = r_.schedule;
  s.active_compute_seconds = active_seconds_;
  s.checkpoint_seconds = r_.checkpoint.overhead_seconds;
  s.failure_budget_seconds = r_.failures.budget_seconds;
  s.custom_seconds = CustomSeconds(s.active_compute_seconds);
  const double busy = s.active_compute_seconds + s.checkpoint_seconds + s.custom_seconds + s.failure_budget_seconds;
  s.availability_seconds = Maintenance(busy);
  if (contingency_ >= 0 && contingency_ < 1) s.contingency_seconds = contingency_ * (busy + s.availability_seconds);
  s.total_seconds = busy + s.availability_seconds + s.contingency_seconds;
  s.start_time = p_.start_time.value_or(absl::UnixEpoch());
  s.finish_time = s.start_time + absl::Seconds(s.total_seconds);
  s.deadline = p_.deadline;
  if (p_.deadline) {
    s.deadline_slack_seconds = absl::ToDoubleSeconds(*p_.deadline - s.finish_time);
    if (s.deadline_slack_seconds < 0) {
      Error("DEADLINE_MISSED",
            absl::StrCat("the schedule finishes ",
                         absl::FormatTime("%Y-%m-%d %H:%M UTC", s.finish_time, absl::UTCTimeZone()), ", ",
                         Num(std::round(-s.deadline_slack_seconds / 86400 * 10) / 10), " days after the deadline ",
                         absl::FormatTime("%Y-%m-%d %H:%M UTC", *p_.deadline, absl::UTCTimeZone()),
                         " (flightplan plan --deadline finds the fleet that meets it)."));
    }
  }
  // The P50 schedule: the median interruption count (of the same negative binomial the
  // budget's quantile comes from) times the loss of each.
  const double mu = r_.failures.expected_interruptions;
  const double median_loss = mu > 0 ? static_cast<double>(NegativeBinomialQuantile(mu, rate_spread_, 0.5)) *
                                          r_.failures.loss_per_interruption_seconds
                                    : 0;
  const double p50_busy = s.active_compute_seconds + s.checkpoint_seconds + s.custom_seconds + median_loss;
  s.expected_seconds = p50_busy + Maintenance(p50_busy);
  s.expected_finish_time = s.start_time + absl::Seconds(s.expected_seconds);
  const double expected_busy =
      s.active_compute_seconds + s.checkpoint_seconds + s.custom_seconds + r_.failures.expected_loss_seconds;
  s.expected_goodput = Div(s.active_compute_seconds, expected_busy + Maintenance(expected_busy));
  if (s.expected_goodput > 0 && s.expected_goodput < kLowGoodput) {
    Warn("LOW_GOODPUT",
         absl::StrCat("expected goodput ", Num(std::round(s.expected_goodput * 1000) / 10),
                      "%: of the time the fleet is held, only that share trains (",
                      Num(std::round(r_.failures.expected_interruptions)), " interruptions expected at a job MTBF of ",
                      Num(std::round(r_.failures.job_mtbf_seconds)),
                      " s); more reliable nodes, spares that replace failed ones, or cheaper restarts pay here."));
  }
}

void Engine::Power() {
  auto& w = r_.power;
  const double nodes = r_.fleet.nodes;
  w.gpu_watts = static_cast<double>(p_.fleet.gpus) * p_.hardware.gpu_watts;
  w.node_other_watts = nodes * p_.hardware.node_other_watts;
  w.cluster_other_watts = nodes * p_.hardware.cluster_other_watts_per_node;
  w.other_it_watts = w.node_other_watts + w.cluster_other_watts;
  w.it_watts = w.gpu_watts + w.other_it_watts;
  w.facility_watts = w.it_watts * pue_;
  // Energy at the average draw while training, not the rating (see
  // kDefaultAveragePowerFraction); the cluster's share runs at its rating throughout.
  w.average_power_fraction = average_power_fraction_;
  w.average_facility_watts =
      (average_power_fraction_ * (w.gpu_watts + w.node_other_watts) + w.cluster_other_watts) * pue_;
  CostAndEnergy(p_.fleet.gpus + static_cast<double>(p_.fleet.spare_nodes) * gpus_per_node_, w.average_facility_watts,
                idle_power_fraction_ * w.it_watts * pue_);
  if (p_.hardware.gpu_watts <= 0) {
    Warn("POWER_UNKNOWN", "hardware.gpu_watts is 0: no power or energy estimate.");
  } else if (w.other_it_watts <= 0) {
    Warn("POWER_GPU_ONLY", absl::StrCat("power counts only the GPUs (", Num(w.gpu_watts / 1e6),
                                        " MW): hardware.node_other_watts and cluster_other_watts_per_node are 0, "
                                        "but CPUs, NICs, fans and switches draw ~45% of a DGX H100's 10.2 kW."));
  }
}

void Engine::CostAndEnergy(double reserved_gpus, double training, double idle) {
  auto& c = r_.cost;
  const auto& s = r_.schedule;
  const double loss = r_.failures.loss_per_interruption_seconds;
  const double down_share =
      loss > 0 ? std::clamp((detect_ + restart_ + r_.checkpoint.read_seconds) / loss, 0.0, 1.0) : 0.0;
  c.reserved_gpus = reserved_gpus;
  c.training_facility_watts = training;
  c.idle_facility_watts = idle;
  auto line = [&](PlanReport::CostLine& out, double seconds, double joules) {
    out.seconds = seconds;
    out.gpu_hours = reserved_gpus * seconds / 3600.0;
    out.energy_mwh = joules / 3.6e9;
    out.dollars = out.gpu_hours * p_.cost.gpu_hour_dollars + out.energy_mwh * p_.cost.energy_dollars_per_mwh;
  };
  line(c.active_compute, s.active_compute_seconds, training * s.active_compute_seconds);
  line(c.checkpoint, s.checkpoint_seconds, training * s.checkpoint_seconds);
  line(c.custom, s.custom_seconds, training * s.custom_seconds);
  line(c.failure_budget, s.failure_budget_seconds,
       s.failure_budget_seconds * (down_share * idle + (1 - down_share) * training));
  line(c.availability, s.availability_seconds, idle * s.availability_seconds);
  line(c.contingency, s.contingency_seconds, training * s.contingency_seconds);
  PlanReport::CostLine& t = c.total;
  t = {};
  for (const PlanReport::CostLine* l :
       {&c.active_compute, &c.checkpoint, &c.custom, &c.failure_budget, &c.availability, &c.contingency}) {
    t.seconds += l->seconds;
    t.gpu_hours += l->gpu_hours;
    t.energy_mwh += l->energy_mwh;
    t.dollars += l->dollars;
  }
  r_.power.energy_mwh = t.energy_mwh;
}

void Engine::Data() {
  auto& d = r_.data;
  const double tokens = static_cast<double>(p_.data.tokens);
  d.epochs = Div(tokens, dataset_tokens_);
  d.storage_bytes = dataset_tokens_ * bytes_per_token_;
  if (p_.data.dataset_tokens && *p_.data.dataset_tokens == 0) {
    Invalid("data.dataset_tokens", 0, "must be > 0");
  } else if (d.epochs > 1) {
    Warn("DATASET_TOO_SMALL", absl::StrCat("data.tokens ", Num(tokens), " need ", Num(std::round(d.epochs * 100) / 100),
                                           " epochs over data.dataset_tokens ", Num(dataset_tokens_), "."));
  }
}

}  // namespace flightplan::planner::engine_internal
