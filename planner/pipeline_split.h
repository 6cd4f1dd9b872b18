// How a model's layers are placed on pipeline stages, as Megatron-LM places them: evenly
// (the default), with the embedding and the loss counted as layers
// (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split), with
// their own counts on the first and last stages (--decoder-first-pipeline-num-layers,
// --decoder-last-pipeline-num-layers), or stage by stage (--pipeline-model-parallel-layout,
// "Et*3|(tt|)*29,m|L"). Each is checked as Megatron-LM checks it, with its message, so a
// layout NVIDIA runs passes and one Megatron-LM refuses is an error finding.
//
// Megatron-LM at d98e8a64 (2026-08; the same rules at tag core_v0.19.0):
//   megatron/training/arguments.py validate_args;
//   megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__;
//   megatron/core/transformer/transformer_block.py get_num_layers_to_build;
//   megatron/core/transformer/pipeline_parallel_layer_layout.py PipelineParallelLayerLayout.
//
// Pure functions, no I/O.
#ifndef FLIGHTPLAN_PLANNER_PIPELINE_SPLIT_H_
#define FLIGHTPLAN_PLANNER_PIPELINE_SPLIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flightplan::planner {

struct SplitSpec {
  uint32_t layers = 0;  // model.layers: transformer (decoder) layers
  uint32_t pp = 1;
  std::optional<uint32_t> virtual_stages;  // layout.virtual_stages as given
  bool account_for_embedding = false, account_for_loss = false;
  std::optional<uint32_t> first_stage_layers, last_stage_layers;
  std::string layout;  // layout.pipeline_model_parallel_layout, "" = none
};

struct PipelineSplit {
  uint32_t pp = 1, virtual_stages = 1;
  // The plan gave a split of its own (any key above); false: the even default.
  bool given = false;
  // Layers of each model chunk, Megatron-LM's order: chunk i = vpp_rank * pp + pp_rank. A
  // layer is a transformer layer or a multi-token-prediction layer ('m' in a layout),
  // each one layer's work. Empty when the split cannot be made (error set).
  std::vector<uint32_t> chunk_layers;
  // The pipeline ranks holding the input embedding and the loss (the output layer).
  uint32_t embedding_rank = 0, loss_rank = 0;
  std::string error;  // why Megatron-LM refuses the split, with its message; "" = valid

  // Layers on pipeline rank `rank`, over its virtual stages.
  [[nodiscard]] uint32_t StageLayers(uint32_t rank) const;
  [[nodiscard]] uint32_t MaxStageLayers() const;
  [[nodiscard]] uint32_t MaxChunkLayers() const;
  [[nodiscard]] uint32_t TotalLayers() const;
};

// The split of `spec`, or its error. Without any key of its own, the even split Megatron-LM
// makes (each chunk layers / (pp x v)); when that does not divide, the chunks differ by at
// most one layer (the planner's warning, LAYERS_NOT_DIVISIBLE_BY_PP, says so) and `given`
// is false.
[[nodiscard]] PipelineSplit SplitPipeline(const SplitSpec& spec);

// The share of each step the pipeline stands idle, from the split: the slowest stage sets
// the pace of the m micro-batches and the fullest chunk that of the fill and the drain,
//   1 - m·(L/pp) / (m·max_stage + (pp - 1)·max_chunk),
// which is (pp-1)/(v·m + pp-1) for an even split (Narayanan et al. 2021, sec. 2.2). L
// counts the layers' work; the embedding's and the loss's own time are in the efficiency
// figure, as for the even split.
[[nodiscard]] double SplitBubbleFraction(const PipelineSplit& split, uint64_t microbatches);

}  // namespace flightplan::planner

#endif  // FLIGHTPLAN_PLANNER_PIPELINE_SPLIT_H_
