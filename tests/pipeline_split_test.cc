// Pipeline splits as Megatron-LM makes and checks them (planner/pipeline_split), and the
// MoE findings, on the layouts NVIDIA runs (issue 38). The split cases are Megatron-LM's own
// unit tests at d98e8a64: tests/unit_tests/transformer/test_transformer_block.py
// (TestPipelineParallelTransformerBlock, which splits it refuses) and
// tests/unit_tests/transformer/test_cuda_graphs.py (the first and last layer of each chunk).
#include "planner/pipeline_split.h"

#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "gtest/gtest.h"
#include "planner/formulas.h"
#include "planner/plan_engine.h"

namespace flightplan::planner {
namespace {

SplitSpec Spec(uint32_t layers, uint32_t pp, std::optional<uint32_t> v = std::nullopt, bool e = false, bool l = false,
               std::optional<uint32_t> first = std::nullopt, std::optional<uint32_t> last = std::nullopt,
               std::string layout = "") {
  return {layers, pp, v, e, l, first, last, std::move(layout)};
}

// test_cuda_graphs.py gives each chunk's first and last layer (1-based, chunk order vpp x pp):
// the chunk's layers are last - first + 1.
std::vector<uint32_t> Chunks(const std::vector<uint32_t>& first, const std::vector<uint32_t>& last) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < first.size(); ++i) out.push_back(last[i] - first[i] + 1);
  return out;
}

TEST(PipelineSplit, MegatronsChunksForEachKindOfSplit) {
  // (14, 4, None, True, True): [1, 4, 8, 12], [3, 7, 11, 14].
  EXPECT_EQ(SplitPipeline(Spec(14, 4, std::nullopt, true, true)).chunk_layers, Chunks({1, 4, 8, 12}, {3, 7, 11, 14}));
  // (14, 4, 2, True, True): [1, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 14].
  EXPECT_EQ(SplitPipeline(Spec(14, 4, 2, true, true)).chunk_layers,
            Chunks({1, 2, 4, 6, 8, 10, 12, 14}, {1, 3, 5, 7, 9, 11, 13, 14}));
  // (12, 4, None, first 2, last 2): [1, 3, 7, 11], [2, 6, 10, 12].
  EXPECT_EQ(SplitPipeline(Spec(12, 4, std::nullopt, false, false, 2, 2)).chunk_layers,
            Chunks({1, 3, 7, 11}, {2, 6, 10, 12}));
  // (12, 4, 2, first 2, last 2): [1, 2, 4, 6, 7, 8, 10, 12], [1, 3, 5, 6, 7, 9, 11, 12].
  EXPECT_EQ(SplitPipeline(Spec(12, 4, 2, false, false, 2, 2)).chunk_layers,
            Chunks({1, 2, 4, 6, 7, 8, 10, 12}, {1, 3, 5, 6, 7, 9, 11, 12}));
  // The same 14 layers as a layout (the test's list of lists, written as a string).
  const PipelineSplit layout = SplitPipeline(Spec(14, 4, std::nullopt, false, false, {}, {}, "Et|(tt|)*6,tL"));
  EXPECT_EQ(layout.error, "");
  EXPECT_EQ(layout.virtual_stages, 2u);
  EXPECT_EQ(layout.chunk_layers, Chunks({1, 2, 4, 6, 8, 10, 12, 14}, {1, 3, 5, 7, 9, 11, 13, 14}));
  // The even default: 8 layers, pp 2, vp 2.
  EXPECT_EQ(SplitPipeline(Spec(8, 2, 2)).chunk_layers, Chunks({1, 3, 5, 7}, {2, 4, 6, 8}));
  EXPECT_FALSE(SplitPipeline(Spec(8, 2, 2)).given);
}

TEST(PipelineSplit, WhatMegatronRefusesIsRefusedWhatItRunsRuns) {
  struct Case {
    SplitSpec spec;
    bool refused;
  };
  // test_transformer_block.py's cases for the keys this planner has (the even default's
  // refusals are the engine's INTERLEAVED_LAYERS_UNEVEN, tested there).
  const std::vector<Case> cases = {
      {Spec(60, 5, std::nullopt, false, false, std::nullopt, 4), false},
      {Spec(60, 8, std::nullopt, false, false, 6, 6), false},
      {Spec(60, 6, std::nullopt, false, false, 5, std::nullopt), false},
      {Spec(101, 8, std::nullopt, false, false, 13, 13), true},
      {Spec(63, 4, std::nullopt, true, false), false},
      {Spec(63, 4, std::nullopt, false, true), false},
      {Spec(62, 4, std::nullopt, true, true), false},
      {Spec(62, 4, 2, true, true), false},
      {Spec(65, 4, std::nullopt, true, true), true},
      {Spec(61, 4, std::nullopt, false, false, 12, std::nullopt), true},
      {Spec(60, 6, std::nullopt, true, false, 5, 5), true},
  };
  for (const Case& c : cases) {
    const PipelineSplit s = SplitPipeline(c.spec);
    EXPECT_EQ(!s.error.empty(), c.refused) << c.spec.layers << " layers, pp " << c.spec.pp << ": " << s.error;
    if (s.error.empty()) {
      EXPECT_EQ(s.TotalLayers(), c.spec.layers) << c.spec.layers << " layers, pp " << c.spec.pp;
    }
  }
  // With Megatron-LM's messages.
  EXPECT_NE(SplitPipeline(Spec(101, 8, std::nullopt, false, false, 13, 13))
                .error.find("number of layers at middle stage: 75"),
            std::string::npos);
  EXPECT_NE(SplitPipeline(Spec(60, 6, std::nullopt, true, false, 5, 5)).error.find("cannot be set at the same time"),
            std::string::npos);
  EXPECT_NE(SplitPipeline(Spec(94, 8, 4, true, false)).error.find("must be divisible"), std::string::npos);
}

TEST(PipelineSplit, LayoutStringsAsMegatronParsesThem) {
  // DeepSeek-V3: 61 layers and one MTP layer. The documented PP16 x VPP2 example
  // (docs/user-guide/features/pipeline_parallel_layout.md), GB200's PP4 x VP4 and H100's
  // PP8 x VP4 (Megatron-Bridge perf recipes, 067f987d).
  const PipelineSplit doc = SplitPipeline(Spec(61, 16, std::nullopt, false, false, {}, {}, "Et*3|(tt|)*29,m|L"));
  ASSERT_EQ(doc.error, "");
  EXPECT_EQ(doc.virtual_stages, 2u);
  EXPECT_EQ(doc.chunk_layers.front(), 3u);
  EXPECT_EQ(doc.chunk_layers[30], 1u);  // the MTP layer, virtual stage 1 of rank 14
  EXPECT_EQ(doc.chunk_layers.back(), 0u);
  EXPECT_EQ(doc.loss_rank, 15u);
  const PipelineSplit gb200 = SplitPipeline(Spec(61, 4, std::nullopt, false, false, {}, {}, "Et*4|(tttt|)*14tmL"));
  ASSERT_EQ(gb200.error, "");
  EXPECT_EQ(gb200.virtual_stages, 4u);
  EXPECT_EQ(gb200.chunk_layers.size(), 16u);
  EXPECT_EQ(gb200.TotalLayers(), 62u);  // 61 and the MTP layer
  EXPECT_EQ(gb200.MaxStageLayers(), 16u);
  EXPECT_EQ(SplitPipeline(Spec(61, 4, std::nullopt, false, false, {}, {}, "Et*4|(t*4|)*14tmL")).chunk_layers,
            gb200.chunk_layers);  // GB300's spelling of the same
  EXPECT_EQ(SplitPipeline(Spec(61, 8, std::nullopt, false, false, {}, {}, "Et|(tt|)*30mL")).error, "");
  // Refusals, each with Megatron-LM's words.
  auto refusal = [](uint32_t layers, uint32_t pp, const std::string& layout) {
    return SplitPipeline(Spec(layers, pp, std::nullopt, false, false, {}, {}, layout)).error;
  };
  EXPECT_NE(refusal(4, 4, "Et|tL").find("must be divisible by pipeline_model_parallel_size"), std::string::npos);
  EXPECT_NE(refusal(2, 2, "tE|tL").find("The first layer must be embedding"), std::string::npos);
  EXPECT_NE(refusal(2, 2, "Et|Lt").find("The last layer must be loss"), std::string::npos);
  EXPECT_NE(refusal(2, 2, "Ex|tL").find("Invalid layer character: x"), std::string::npos);
  EXPECT_NE(refusal(5, 2, "Et|ttL").find("Number of decoder layers 3 must match num_layers 5"), std::string::npos);
  EXPECT_NE(refusal(3, 2, "Etm|ttL").find("decoder layers must be placed before MTP layers"), std::string::npos);
  EXPECT_NE(SplitPipeline(Spec(4, 2, 3, false, false, {}, {}, "Et|t|t|tL")).error.find("conflicts"), std::string::npos);
  EXPECT_NE(SplitPipeline(Spec(4, 2, std::nullopt, true, false, {}, {}, "Et|t|t|tL")).error.find("cannot be set"),
            std::string::npos);
}

TEST(PipelineSplit, TheBubbleFollowsTheFullestStage) {
  // Even: the formula (pp-1)/(v·m + pp-1).
  for (uint32_t v : {1u, 2u, 4u}) {
    EXPECT_NEAR(SplitBubbleFraction(SplitPipeline(Spec(64, 4, v)), 16), PipelineBubbleFraction(4, 16, v), 1e-12);
  }
  // Qwen3-235B-A22B's 94 layers with the embedding and the loss counted, pp 8 x vp 4: chunks
  // of 3, the first and last 2; ranks 0 and 7 hold 11 layers, the others 12. With m = 128
  // micro-batches: 1 - 128·94/8 / (128·12 + 7·3).
  const PipelineSplit q = SplitPipeline(Spec(94, 8, 4, true, true));
  ASSERT_EQ(q.error, "");
  EXPECT_EQ(q.StageLayers(0), 11u);
  EXPECT_EQ(q.StageLayers(3), 12u);
  EXPECT_EQ(q.StageLayers(7), 11u);
  EXPECT_NEAR(SplitBubbleFraction(q, 128), 1 - 128.0 * 94 / 8 / (128.0 * 12 + 7 * 3), 1e-12);
}

PlanSpec Flagship() {
  absl::StatusOr<v1::Plan> proto = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  EXPECT_TRUE(proto.ok()) << proto.status();
  return proto.ok() ? convert::PlanFromProto(*proto) : PlanSpec{};
}

// Qwen3-235B-A22B on 256 H100s (Megatron-Bridge docs/performance-summary-archive.md, 26.04.01:
// FP8, GBS 8192, MBS 1, seq 4096, TP 2, PP 8, VP 4, EP 32: 1,712 tokens/s/GPU, 253 model
// TFLOP/s/GPU), both account flags from its base recipe (qwen3 recipes, 067f987d); the shape
// from Megatron-Bridge's Qwen3MoEModelProvider235B_A22B (8c6c6534): 94 layers, hidden
// 4,096, 64 heads, 4 KV groups of 128 channels, vocabulary 151,936, 128 experts, untied.
PlanSpec Qwen3_235B() {
  PlanSpec p = Flagship();
  p.name = "qwen3-235b-a22b-h100";
  p.deadline.reset();
  p.model = {};
  p.model.params = 235e9;
  p.model.active_params = 22e9;
  p.model.layers = 94;
  p.model.hidden = 4096;
  p.model.heads = 64;
  p.model.kv_heads = 4;
  p.model.head_dim = 128;
  p.model.seq_len = 4096;
  p.model.vocab_size = 151936;
  p.model.tied_embeddings = false;
  p.model.num_experts = 128;
  p.data.tokens = 1'000'000'000'000;
  p.data.dataset_tokens.reset();
  p.fleet.gpus = 256;
  p.fleet.spare_nodes = 2;
  p.layout = {};
  p.layout.tp = 2;
  p.layout.pp = 8;
  p.layout.dp = 16;
  p.layout.virtual_stages = 4;
  p.layout.ep = 32;
  p.layout.expert_tp = 1;
  p.layout.micro_batch = 1;
  p.layout.grad_accum = 512;  // 8,192 / 16
  p.layout.zero_stage = 1;
  p.layout.account_for_embedding = true;
  p.layout.account_for_loss = true;
  p.efficiency = {};
  p.efficiency.mfu = 253e12 / 989e12;  // the model TFLOP/s over H100's dense BF16 peak
  return p;
}

TEST(PublishedMoE, Qwen3_235B_OnH100SplitsAsNvidiaRanIt) {
  const PlanSpec p = Qwen3_235B();
  const PlanReport r = ComputePlan(p);
  for (const Finding& f : r.findings) EXPECT_NE(f.severity, Severity::kError) << f.code << ": " << f.message;
  EXPECT_EQ(r.Find("INTERLEAVED_LAYERS_UNEVEN"), nullptr);
  // The real split's bubble: ranks of 11 and 12 layers, 512 micro-batches.
  EXPECT_NEAR(r.compute.bubble_fraction, 1 - 512.0 * 94 / 8 / (512.0 * 12 + 7 * 3), 1e-12);
  // The memory of each end from the real split: 11 layers on the first and last stages, 12
  // in the middle.
  ASSERT_EQ(r.memory.stages.size(), 3u);
  EXPECT_EQ(r.memory.stages[0].stage, "first");
  EXPECT_EQ(r.memory.stages[0].layers, 11u);
  EXPECT_EQ(r.memory.stages[1].stage, "last");
  EXPECT_EQ(r.memory.stages[1].layers, 11u);
  EXPECT_EQ(r.memory.stages[2].stage, "middle");
  EXPECT_EQ(r.memory.stages[2].layers, 12u);
  // EP 32 over 8-GPU nodes: four nodes to an all-to-all.
  const Finding* ep = r.Find("EP_SPANS_NODES");
  ASSERT_NE(ep, nullptr);
  EXPECT_NE(ep->message.find("layout.ep 32 spans 4 scale-up domains of 8 GPUs"), std::string::npos) << ep->message;
  // Without the flags, Megatron-LM refuses 94 layers on 8 x 4 stages, and so does the plan.
  PlanSpec even = p;
  even.layout.account_for_embedding.reset();
  even.layout.account_for_loss.reset();
  EXPECT_NE(ComputePlan(even).Find("INTERLEAVED_LAYERS_UNEVEN"), nullptr);
  // The GB200 row (26.08: TP 1, PP 8, VP 3) splits 96 slots 4 to a chunk.
  PlanSpec gb200 = p;
  gb200.layout.virtual_stages = 3;
  EXPECT_EQ(ComputePlan(gb200).Find("PIPELINE_SPLIT_INVALID"), nullptr);
  // Counting only the embedding leaves 95: Megatron-LM refuses, naming the rule.
  PlanSpec one = p;
  one.layout.account_for_loss.reset();
  const PlanReport one_report = ComputePlan(one);
  const Finding* refused = one_report.Find("PIPELINE_SPLIT_INVALID");
  ASSERT_NE(refused, nullptr);
  EXPECT_NE(refused->message.find("layout.account_for_embedding_in_pipeline_split with model.layers 94"),
            std::string::npos)
      << refused->message;
}

// DeepSeek-V3 on 256 GB200s with EP 64 (Megatron-Bridge docs/performance-summary.md, 26.08:
// MXFP8, GBS 4096, MBS 1, seq 4096, TP 1, PP 4, VP 4, EP 64: 4,912 tokens/s/GPU, 1,276 model
// TFLOP/s/GPU) and the layout its recipe sets, "Et*4|(tttt|)*14tmL"; the shape from
// DeepSeekV3ModelProvider: 61 layers, hidden 7,168, 256 experts.
PlanSpec DeepSeekV3(bool nvl72) {
  PlanSpec p = Flagship();
  p.name = "deepseek-v3";
  p.deadline.reset();
  p.model = {};
  p.model.params = 671e9;
  p.model.active_params = 37e9;
  p.model.layers = 61;
  p.model.hidden = 7168;
  p.model.heads = 128;
  p.model.head_dim = 128;
  p.model.seq_len = 4096;
  p.model.vocab_size = 129280;
  p.model.tied_embeddings = false;
  p.model.num_experts = 256;
  p.data.tokens = 1'000'000'000'000;
  p.data.dataset_tokens.reset();
  if (nvl72) {
    // GB200 NVL72: 72 GPUs in one NVLink domain, 4 to a compute tray; 2.5 PFLOP/s dense
    // BF16 and ~186 GB HBM3e per GPU (NVIDIA GB200 NVL72 datasheet: 180 PFLOPS, 13.4 TB).
    p.hardware.gpu = "GB200";
    p.hardware.peak_flops = 2.5e15;
    p.hardware.hbm_bytes = 186e9;
    p.hardware.gpus_per_node = 4;
    p.hardware.scaleup_gpus = 72;
  }
  p.fleet.gpus = 256;
  p.fleet.spare_nodes = 0;
  p.layout = {};
  p.layout.tp = 1;
  p.layout.pp = 4;
  p.layout.dp = 64;
  p.layout.ep = 64;
  p.layout.expert_tp = 1;
  p.layout.micro_batch = 1;
  p.layout.grad_accum = 64;  // 4,096 / 64
  p.layout.zero_stage = 2;   // Megatron's distributed optimizer shards the gradients too
  p.layout.pipeline_layout = "Et*4|(tttt|)*14tmL";
  p.efficiency = {};
  p.efficiency.mfu = 0.3;
  return p;
}

TEST(PublishedMoE, DeepSeekV3OnGb200KeepsItsAllToAllInsideTheNvl72) {
  const PlanReport r = ComputePlan(DeepSeekV3(true));
  EXPECT_EQ(r.Find("PIPELINE_SPLIT_INVALID"), nullptr);
  EXPECT_EQ(r.Find("EXPERTS_NOT_DIVISIBLE_BY_EP"), nullptr);
  EXPECT_EQ(r.Find("EP_SPANS_NODES"), nullptr);  // EP 64 inside the 72-GPU domain
  // The layout's four virtual stages are the interleaved schedule's: 64 micro-batches, pp 4,
  // ranks of 16 layers (the MTP layer with rank 3's) and chunks of at most 4.
  EXPECT_NEAR(r.compute.bubble_fraction, 1 - 64.0 * 62 / 4 / (64.0 * 16 + 3 * 4), 1e-12);
  // The same EP on 8-GPU H100 nodes crosses eight of them.
  const PlanReport h100 = ComputePlan(DeepSeekV3(false));
  const Finding* ep = h100.Find("EP_SPANS_NODES");
  ASSERT_NE(ep, nullptr);
  EXPECT_NE(ep->message.find("layout.ep 64 spans 8 scale-up domains of 8 GPUs"), std::string::npos) << ep->message;
}

// Llama 3 405B's pre-training (Dubey et al. 2024, "The Llama 3 Herd of Models", sec. 3.3.2
// and table 4): 126 layers on pp 16, 8,192-token sequences on 16,384 H100s as tp 8 x pp 16 x
// dp 128; "we reduce one Transformer layer each from the first and the last stages" for the
// embedding's and the loss's memory and compute: 7 layers on each end, 8 on the 14 between
// (Megatron-LM's --decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 7).
TEST(PublishedDense, Llama3_405BTakesALayerOffEachEnd) {
  PlanSpec p = Flagship();
  p.name = "llama3-405b";
  p.deadline.reset();
  p.model.params = 405e9;
  p.model.layers = 126;
  p.model.hidden = 16384;
  p.model.heads = 128;
  p.model.kv_heads = 8;
  p.model.seq_len = 8192;
  p.model.vocab_size = 128256;
  p.data.tokens = 15'600'000'000'000;
  p.data.dataset_tokens.reset();
  p.fleet.gpus = 16384;
  p.layout = {};
  p.layout.tp = 8;
  p.layout.pp = 16;
  p.layout.dp = 128;
  p.layout.micro_batch = 1;
  p.layout.grad_accum = 16;  // 2,048 sequences of 8,192: the 16M tokens of table 4
  p.layout.zero_stage = 1;
  p.efficiency = {};
  // Table 4's 41% MFU is end to end under Meta's own interleaved schedule, which these keys
  // cannot state with virtual stages (Megatron-LM wants each stage's layers, 7 and 8,
  // divisible by them); at pp 16 and 16 micro-batches without interleaving it would need
  // more than the peak while busy. The split is what is checked here: 41% while busy.
  p.efficiency.busy_mfu = 0.41;
  // The paper does not state its recomputation; selective does not fit a middle stage's 15
  // micro-batches in flight in 80 GB, so this plan recomputes in full.
  p.efficiency.recompute = "full";
  // The even default: ceil(126 / 16) = 8 layers on the fullest stage, and a warning.
  const PlanReport even = ComputePlan(p);
  EXPECT_NE(even.Find("LAYERS_NOT_DIVISIBLE_BY_PP"), nullptr);
  // The paper's split: the warning gone, the ends' memory from 7 layers, a middle stage's 8.
  p.layout.first_stage_layers = 7;
  p.layout.last_stage_layers = 7;
  const PlanReport r = ComputePlan(p);
  for (const Finding& f : r.findings) EXPECT_NE(f.severity, Severity::kError) << f.code << ": " << f.message;
  EXPECT_EQ(r.Find("LAYERS_NOT_DIVISIBLE_BY_PP"), nullptr);
  EXPECT_EQ(r.Find("PIPELINE_SPLIT_INVALID"), nullptr);
  ASSERT_EQ(r.memory.stages.size(), 3u);
  EXPECT_EQ(r.memory.stages[0].layers, 7u);
  EXPECT_EQ(r.memory.stages[1].layers, 7u);
  EXPECT_EQ(r.memory.stages[2].layers, 8u);
  // The fullest stage's 8 layers set the pace, where the average stage holds 126 / 16: with
  // m = 16 micro-batches, 1 - m·126/16 / (m·8 + (pp - 1)·8).
  EXPECT_NEAR(r.compute.bubble_fraction, 1 - 16.0 * 126 / 16 / (16.0 * 8 + 15 * 8), 1e-12);
  // 14 on the first stage leaves 105 layers for 14 middle stages, 7.5 each: Megatron-LM
  // refuses an uneven middle, and so does the plan.
  p.layout.first_stage_layers = 14;
  EXPECT_NE(ComputePlan(p).Find("PIPELINE_SPLIT_INVALID"), nullptr);
}

TEST(PublishedMoE, ExpertsMustSplitOverEp) {
  // Mixtral 8x7B has 8 experts (Jiang et al. 2024, "Mixtral of Experts"): ep 16 cannot hold
  // whole ones, and Megatron-LM refuses ("Number of experts should be a multiple of expert
  // model parallel_size.").
  PlanSpec p = DeepSeekV3(true);
  p.model.num_experts = 8;
  p.layout.ep = 16;
  const PlanReport uneven = ComputePlan(p);
  const Finding* f = uneven.Find("EXPERTS_NOT_DIVISIBLE_BY_EP");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("model.num_experts 8 is not divisible by layout.ep 16"), std::string::npos) << f->message;
  p.layout.ep = 8;
  EXPECT_EQ(ComputePlan(p).Find("EXPERTS_NOT_DIVISIBLE_BY_EP"), nullptr);
  // Qwen3-30B-A3B on 16 H100s with EP 16 (26.06: 8,826 tokens/s/GPU): 128 experts, 8 a rank.
  PlanSpec q = Qwen3_235B();
  q.layout.ep = 16;
  EXPECT_EQ(ComputePlan(q).Find("EXPERTS_NOT_DIVISIBLE_BY_EP"), nullptr);
}

}  // namespace
}  // namespace flightplan::planner
