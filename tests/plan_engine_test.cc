// The plan engine on a hand-worked plan, on each finding, on published runs written as
// plans, on the deadline search, and on the shipped examples.
#include "planner/plan_engine.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "gtest/gtest.h"
#include "planner/formulas.h"

namespace flightplan::planner {
namespace {

absl::Time Start() { return absl::FromUnixSeconds(1799020800); }  // 2027-01-04T00:00:00Z

// A small plan whose every figure is worked out by hand below. Sound: no finding at all.
PlanSpec HandPlan() {
  PlanSpec p;
  p.name = "hand";
  p.start_time = Start();
  p.model.params = 1e9;
  p.model.seq_len = 1000;
  p.model.vocab_size = 50000;
  p.data.tokens = 5'529'600'000'000;  // 6.4e6 tokens/s x 10 days
  p.data.dataset_tokens = 11'059'200'000'000;
  p.data.token_dtype = "uint16";
  p.hardware.gpu = "test-gpu";
  p.hardware.peak_flops = 1.2e15;
  p.hardware.hbm_bytes = 80e9;
  p.hardware.gpu_watts = 500;
  p.hardware.gpus_per_node = 8;
  p.hardware.node_other_watts = 1000;
  p.hardware.cluster_other_watts_per_node = 500;
  p.fleet.gpus = 64;
  p.fleet.spare_nodes = 3;  // covers the P99 of the nodes in repair (below)
  p.fleet.pue = 1.25;
  p.layout.tp = 1;
  p.layout.pp = 1;
  p.layout.dp = 64;
  p.layout.micro_batch = 2;
  p.layout.grad_accum = 4;
  p.layout.zero_stage = 1;
  p.efficiency.mfu = 0.5;
  p.checkpoint.interval_seconds = 3600;
  p.checkpoint.write_bytes_per_second = 1.4e9;
  p.checkpoint.read_bytes_per_second = 2.8e9;
  p.checkpoint.storage_domain = "remote";
  p.failures.node_mtbf_hours = 720;
  p.failures.detect_seconds = 100;
  p.failures.restart_seconds = 500;
  p.failures.budget_quantile = 0.9;
  p.availability.maintenance_fraction = 0.1;
  p.contingency_fraction = 0.05;
  return p;
}

std::set<std::string> Codes(const PlanReport& r) {
  std::set<std::string> codes;
  for (const Finding& f : r.findings) codes.insert(f.code);
  return codes;
}

TEST(PlanEngine, HandWorkedPlan) {
  const PlanReport r = ComputePlan(HandPlan());
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().code << ": " << r.findings.front().message;

  // Batch: 2 x 4 x 64 = 512 sequences of 1,000 tokens; 5.5296e12 / 512,000 = 10.8e6 steps.
  EXPECT_EQ(r.batch.sequences_per_step, 512u);
  EXPECT_EQ(r.batch.tokens_per_step, 512000u);
  EXPECT_EQ(r.batch.steps, 10'800'000u);
  EXPECT_EQ(r.batch.last_step_tokens, 512000u);

  // Compute: 6 x 1e9 per token (no shape: no attention term); 64 x 1.2e15 x 0.5 = 3.84e16
  // FLOP/s; 6.4e6 tokens/s; 864,000 s = 10 days; 64 x 240 h = 15,360 GPU-hours.
  EXPECT_DOUBLE_EQ(r.compute.flops_per_token, 6e9);
  EXPECT_DOUBLE_EQ(r.compute.total_flops, 6e9 * 5.5296e12);
  EXPECT_DOUBLE_EQ(r.compute.cluster_flops_per_second, 3.84e16);
  EXPECT_DOUBLE_EQ(r.compute.tokens_per_second, 6.4e6);
  EXPECT_NEAR(r.compute.active_gpu_hours, 15360, 1e-6);

  // Memory: ZeRO-1 over dp 64: (2 + 4) x 1e9 + 12 x 1e9 / 64 = 6.1875e9 bytes. No shape:
  // no activations; the reserve is 10% of 80 GB.
  EXPECT_DOUBLE_EQ(r.memory.weights, 2e9);
  EXPECT_DOUBLE_EQ(r.memory.grads, 4e9);
  EXPECT_DOUBLE_EQ(r.memory.optimizer, 12e9 / 64);
  EXPECT_DOUBLE_EQ(r.memory.state_bytes_per_gpu, 6.1875e9);
  EXPECT_EQ(r.memory.activations, 0);
  EXPECT_DOUBLE_EQ(r.memory.reserve, 8e9);
  EXPECT_DOUBLE_EQ(r.memory.total_bytes, 14.1875e9);
  EXPECT_EQ(r.memory.stage, "only");
  EXPECT_TRUE(r.memory.fits);

  // Checkpoint: 1e9 x (2 + 12) = 14e9 bytes; 10 s to write. A restore reads the 2e9 bytes
  // of weights in each of 64 replicas and the ZeRO-sharded 12e9 of optimizer state once:
  // 140e9 bytes, 50 s at 2.8e9. The plan's 3,600 s interval; ceil(864,000 / 3,600) = 240
  // saves x 10 s = 2,400 s.
  EXPECT_DOUBLE_EQ(r.checkpoint.size_bytes, 14e9);
  EXPECT_DOUBLE_EQ(r.checkpoint.write_seconds, 10);
  EXPECT_DOUBLE_EQ(r.checkpoint.restore_read_bytes, 140e9);
  EXPECT_DOUBLE_EQ(r.checkpoint.read_seconds, 50);
  EXPECT_DOUBLE_EQ(r.checkpoint.interval_seconds, 3600);
  EXPECT_EQ(r.checkpoint.count, 240u);
  EXPECT_DOUBLE_EQ(r.checkpoint.overhead_seconds, 2400);
  // Young: sqrt(2 x 10 x 324,000) = 2,545.6 s.
  EXPECT_NEAR(r.checkpoint.young_interval_seconds, 2545.58, 0.01);

  // Failures: 8 nodes at 720 h: job MTBF 90 h = 324,000 s. Running time includes the
  // half-interval redone after each interruption: n = 866,400 / (324,000 - 1,800) = 2.689.
  // Loss each: 100 + 500 + 50 + 1,800 = 2,450 s. The count is negative binomial with the
  // default rate CV 0.5: r = 1/0.25 = 4, p = 4 / (4 + 2.689) = 0.598; P(0) = p^4 = 0.1279
  // and P(k) = P(k-1) x (k + 3)/k x (1 - p), so P(<=5) = 0.8984 and P(<=6) = 0.9437: the
  // P90 budget is 6 x 2,450 = 14,700 s (a Poisson count would stop at 5).
  EXPECT_DOUBLE_EQ(r.failures.job_mtbf_seconds, 324000);
  EXPECT_NEAR(r.failures.expected_interruptions, 866400.0 / 322200.0, 1e-9);
  EXPECT_DOUBLE_EQ(r.failures.loss_per_interruption_seconds, 2450);
  EXPECT_NEAR(r.failures.expected_loss_seconds, 2450 * 866400.0 / 322200.0, 1e-6);
  EXPECT_EQ(r.failures.budget_interruptions, 6u);
  EXPECT_DOUBLE_EQ(r.failures.budget_seconds, 14700);
  // Spares: 8 nodes x 48 h of repair / 720 h = 0.533 out at once; Poisson P99 is 3.
  EXPECT_NEAR(r.failures.nodes_in_repair, 8 * 48.0 / 720, 1e-12);
  EXPECT_EQ(r.failures.nodes_in_repair_p99, 3u);

  // Schedule: busy = 864,000 + 2,400 + 14,700 = 881,100 s; maintenance at 10% of the
  // calendar adds 881,100 x 0.1 / 0.9; contingency 5% of both.
  const double busy = 881100;
  const double maintenance = busy * 0.1 / 0.9;
  const double contingency = 0.05 * (busy + maintenance);
  EXPECT_DOUBLE_EQ(r.schedule.active_compute_seconds, 864000);
  EXPECT_DOUBLE_EQ(r.schedule.checkpoint_seconds, 2400);
  EXPECT_DOUBLE_EQ(r.schedule.failure_budget_seconds, 14700);
  EXPECT_NEAR(r.schedule.availability_seconds, maintenance, 1e-6);
  EXPECT_NEAR(r.schedule.contingency_seconds, contingency, 1e-6);
  const double total = busy + maintenance + contingency;
  EXPECT_NEAR(r.schedule.total_seconds, total, 1e-6);
  EXPECT_EQ(absl::ToUnixSeconds(r.schedule.finish_time), absl::ToUnixSeconds(Start() + absl::Seconds(total)));
  // Expected goodput: 864,000 / ((864,000 + 2,400 + expected loss) / 0.9).
  const double expected_busy = 866400 + 2450 * 866400.0 / 322200.0;
  EXPECT_NEAR(r.schedule.expected_goodput, 864000 / (expected_busy / 0.9), 1e-9);

  // Power: 64 x 500 W = 32 kW of GPUs; 8 nodes x (1,000 + 500) W = 12 kW other; PUE 1.25.
  // Energy at the average draw: 76% of the GPUs' and nodes' 40 kW, plus the cluster's 4 kW
  // at its rating, x 1.25 = 43 kW.
  EXPECT_DOUBLE_EQ(r.power.gpu_watts, 32000);
  EXPECT_DOUBLE_EQ(r.power.other_it_watts, 12000);
  EXPECT_DOUBLE_EQ(r.power.it_watts, 44000);
  EXPECT_DOUBLE_EQ(r.power.facility_watts, 55000);
  EXPECT_DOUBLE_EQ(r.power.average_facility_watts, 43000);
  // While down the fleet draws the default 35% of its 44 kW IT rating, x 1.25 = 19.25 kW.
  // Down is availability and the share of each interruption's 2,450 s that is detect,
  // restart and restore (650 s); the redone 1,800 s, compute, saves and contingency run.
  const double idle = 0.35 * 44000 * 1.25;
  const double budget_joules = 14700 * (650.0 / 2450 * idle + 1800.0 / 2450 * 43000);
  const double joules = 43000 * (864000 + 2400 + contingency) + budget_joules + idle * maintenance;
  EXPECT_DOUBLE_EQ(r.cost.idle_facility_watts, idle);
  EXPECT_NEAR(r.cost.failure_budget.energy_mwh, budget_joules / 3.6e9, 1e-9);
  EXPECT_NEAR(r.power.energy_mwh, joules / 3.6e9, 1e-9);
  EXPECT_NEAR(r.cost.total.energy_mwh, r.power.energy_mwh, 1e-12);
  // GPU-hours: the 64 job GPUs and the 3 spare nodes' 24, reserved for the whole schedule.
  EXPECT_DOUBLE_EQ(r.cost.reserved_gpus, 88);
  EXPECT_NEAR(r.cost.total.gpu_hours, 88 * total / 3600, 1e-6);
  EXPECT_NEAR(r.cost.active_compute.gpu_hours, 88 * 864000 / 3600.0, 1e-9);
  EXPECT_EQ(r.cost.total.dollars, 0);  // no price given

  // Data: half an epoch; 11.0592e12 unique tokens x 2 bytes (uint16).
  EXPECT_DOUBLE_EQ(r.data.epochs, 0.5);
  EXPECT_DOUBLE_EQ(r.data.storage_bytes, 2 * 11.0592e12);
}

TEST(PlanEngine, CostIsGpuHoursTimesThePricePlusEnergyTimesItsPrice) {
  PlanSpec p = HandPlan();
  p.cost.gpu_hour_dollars = 2;
  p.cost.energy_dollars_per_mwh = 100;
  p.cost.idle_power_fraction = 0.5;
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.cost.idle_facility_watts, 0.5 * 44000 * 1.25);
  for (const PlanReport::CostLine* l : {&r.cost.active_compute, &r.cost.checkpoint, &r.cost.failure_budget,
                                        &r.cost.availability, &r.cost.contingency, &r.cost.total}) {
    EXPECT_NEAR(l->dollars, l->gpu_hours * 2 + l->energy_mwh * 100, 1e-6);
  }
  // Active compute by hand: 88 GPUs x 240 h x $2 + 43 kW x 240 h = 10.32 MWh x $100.
  EXPECT_NEAR(r.cost.active_compute.dollars, 88 * 240 * 2 + 10.32 * 100, 1e-6);
  EXPECT_NEAR(r.cost.total.dollars,
              r.cost.active_compute.dollars + r.cost.checkpoint.dollars + r.cost.failure_budget.dollars +
                  r.cost.availability.dollars + r.cost.contingency.dollars,
              1e-6);
  p.cost.gpu_hour_dollars = -1;
  const PlanReport bad = ComputePlan(p);
  ASSERT_NE(bad.Find("INVALID_VALUE"), nullptr);
  EXPECT_EQ(bad.Find("INVALID_VALUE")->message, "cost.gpu_hour_dollars -1 is invalid: must be >= 0.");
}

TEST(PlanEngine, DalyIntervalIsChosenWhenTheIntervalIsZero) {
  PlanSpec p = HandPlan();
  p.checkpoint.interval_seconds = 0;
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.checkpoint.interval_seconds, DalyIntervalSeconds(10, 324000));
  EXPECT_DOUBLE_EQ(r.checkpoint.daly_interval_seconds, r.checkpoint.interval_seconds);
  EXPECT_EQ(r.checkpoint.count, static_cast<uint64_t>(std::ceil(864000 / r.checkpoint.interval_seconds)));
}

TEST(PlanEngine, AsyncCheckpointBlocksOnlyForTheSnapshot) {
  PlanSpec p = HandPlan();
  p.checkpoint.async = true;
  p.checkpoint.snapshot_bytes_per_second = 1e9;
  const PlanReport r = ComputePlan(p);
  // Each GPU copies its weights (2 x 1e9) and its ZeRO-1 optimizer shard (12 x 1e9 / 64):
  // 2.1875e9 bytes at 1e9 B/s.
  EXPECT_DOUBLE_EQ(r.checkpoint.blocking_seconds, 2.1875);
  EXPECT_DOUBLE_EQ(r.checkpoint.overhead_seconds, 240 * 2.1875);
  EXPECT_DOUBLE_EQ(r.checkpoint.write_seconds, 10);  // the write itself still takes 10 s
}

TEST(PlanEngine, AsyncLossIncludesTheWriteInFlight) {
  PlanSpec p = HandPlan();
  p.checkpoint.async = true;
  // detect 100 + restart 500 + restore 50 + half of 3,600 + the 10 s write not yet durable.
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.failures.loss_per_interruption_seconds, 2460);
  // The interruption count redoes the same work: n = running / (job MTBF - (1,800 + 10)).
  const double running = r.schedule.active_compute_seconds + r.checkpoint.overhead_seconds;
  EXPECT_NEAR(r.failures.expected_interruptions, running / (r.failures.job_mtbf_seconds - 1810), 1e-9);
}

TEST(PlanEngine, HeadDimSetsTheAttentionWidth) {
  // PaLM 540B: 118 layers, 48 heads of 256 (H x Q = 12,288, not the 18,432 hidden),
  // seq 2048: 12 x 118 x 12,288 x 2,048 attention FLOPs per token (Chowdhery et al. 2022,
  // app. B).
  PlanSpec p = HandPlan();
  p.model.layers = 118;
  p.model.hidden = 18432;
  p.model.heads = 48;
  p.model.head_dim = 256;
  p.model.seq_len = 2048;
  p.efficiency.causal_attention = false;  // PaLM counts the whole score matrix
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.compute.attention_flops_per_token, 12.0 * 118 * 12288 * 2048);
  EXPECT_DOUBLE_EQ(r.compute.dense_total_flops, 6e9 * 5.5296e12);
  EXPECT_EQ(r.compute.attention_convention, "full");
  // The default counts what a causal kernel computes: half.
  p.efficiency.causal_attention.reset();
  EXPECT_DOUBLE_EQ(ComputePlan(p).compute.attention_flops_per_token, 6.0 * 118 * 12288 * 2048);
  p.efficiency.count_attention = false;
  EXPECT_EQ(ComputePlan(p).compute.attention_flops_per_token, 0);
}

TEST(PlanEngine, FailureRateAlternativeEqualsMtbf) {
  PlanSpec by_rate = HandPlan();
  by_rate.failures.node_mtbf_hours.reset();
  by_rate.failures.failures_per_1000_node_days = 1000.0 / 30.0;  // 720 h MTBF
  EXPECT_NEAR(ComputePlan(by_rate).failures.job_mtbf_seconds, 324000, 1e-6);
  EXPECT_TRUE(ComputePlan(by_rate).findings.empty());
}

TEST(PlanEngine, MaintenanceHoursAreAFixedLine) {
  PlanSpec p = HandPlan();
  p.availability.maintenance_fraction.reset();
  p.availability.maintenance_hours = 48;
  EXPECT_DOUBLE_EQ(ComputePlan(p).schedule.availability_seconds, 48 * 3600.0);
}

TEST(PlanEngine, MoeStateShardsExpertsOverEp) {
  // 400e9 params, 50e9 active, so 350e9 in experts, ep 8 inside dp 64, ZeRO-1.
  // Dense: 6 x 50e9 + 12 x 50e9 / 64 = 309.375e9. Experts: 350e9 / 8 = 43.75e9 per rank,
  // shared by 64 / 8 = 8 replicas: 6 x 43.75e9 + 12 x 43.75e9 / 8 = 328.125e9.
  PlanSpec p = HandPlan();
  p.model.params = 400e9;
  p.model.active_params = 50e9;
  p.layout.ep = 8;
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.memory.state_bytes_per_gpu, 309.375e9 + 328.125e9);
  EXPECT_DOUBLE_EQ(r.compute.flops_per_token, 6 * 50e9);  // active, not total
  EXPECT_DOUBLE_EQ(r.checkpoint.size_bytes, 400e9 * 14);  // all of them
}

struct FindingCase {
  const char* name;
  std::function<void(PlanSpec&)> breaks;
  std::set<std::string> codes;
  Severity severity;
};

void PrintTo(const FindingCase& c, std::ostream* os) { *os << c.name; }

class Findings : public ::testing::TestWithParam<FindingCase> {};

TEST_P(Findings, EachBreakRaisesExactlyItsFinding) {
  const FindingCase& c = GetParam();
  PlanSpec p = HandPlan();
  c.breaks(p);
  const PlanReport r = ComputePlan(p);
  EXPECT_EQ(Codes(r), c.codes);
  for (const Finding& f : r.findings) {
    EXPECT_FALSE(f.message.empty());
    if (c.codes.size() == 1) {
      EXPECT_EQ(f.severity, c.severity) << f.code;
    }
  }
  EXPECT_EQ(r.HasError(), c.severity == Severity::kError);
}

const FindingCase kFindingCases[] = {
    {"LayoutProduct", [](PlanSpec& p) { p.layout.dp = 32; }, {"LAYOUT_GPU_MISMATCH"}, Severity::kError},
    {"PartialNode",
     [](PlanSpec& p) {
       p.fleet.gpus = 60;
       p.layout.dp = 60;
     },
     {"PARTIAL_NODE"},
     Severity::kError},
    {"BatchDoesNotClose",
     [](PlanSpec& p) { p.layout.global_batch_tokens = 500000; },
     {"BATCH_MISMATCH"},
     Severity::kError},
    {"HeadsVsTp",
     [](PlanSpec& p) {
       p.layout.tp = 8;
       p.layout.dp = 8;
       p.model.heads = 12;
       p.model.kv_heads = 8;
     },
     {"HEADS_NOT_DIVISIBLE_BY_TP"},
     Severity::kError},
    {"KvHeadsVsTp",
     [](PlanSpec& p) {
       p.layout.tp = 8;
       p.layout.dp = 8;
       p.model.heads = 16;
       p.model.kv_heads = 6;
     },
     {"KV_HEADS_NOT_DIVISIBLE_BY_TP"},
     Severity::kError},
    {"MultiQueryOnTp4",  // StarCoder: one KV head, tp 4
     [](PlanSpec& p) {
       p.layout.tp = 4;
       p.layout.dp = 16;
       p.model.heads = 16;
       p.model.kv_heads = 1;
     },
     {"KV_HEADS_REPLICATED"},
     Severity::kWarning},
    {"TpAcrossNodes",
     [](PlanSpec& p) {
       p.layout.tp = 16;
       p.layout.dp = 4;
     },
     {"TP_SPANS_NODES"},
     Severity::kWarning},
    {"LowGoodput",
     [](PlanSpec& p) {
       p.failures.node_mtbf_hours = 4;       // a job MTBF of 30 minutes on 8 nodes
       p.failures.spare_repair_hours = 0.1;  // (swapped at once: spares are not the point here)
       p.checkpoint.interval_seconds = 0;
     },
     {"LOW_GOODPUT"},
     Severity::kWarning},
    {"LayersVsPp",
     [](PlanSpec& p) {
       p.layout.pp = 8;
       p.layout.dp = 8;
       p.efficiency.mfu =
           0.15;  // 7/11 of each step idle: 41% while busy (an implausible busy figure is another finding)
       p.model.layers = 12;
     },
     {"LAYERS_NOT_DIVISIBLE_BY_PP"},
     Severity::kWarning},
    {"VocabVsDtype", [](PlanSpec& p) { p.model.vocab_size = 128256; }, {"TOKEN_DTYPE_OVERFLOW"}, Severity::kError},
    {"StateVsHbm", [](PlanSpec& p) { p.hardware.hbm_bytes = 5e9; }, {"STATE_EXCEEDS_HBM"}, Severity::kError},
    {"StateNearHbm", [](PlanSpec& p) { p.hardware.hbm_bytes = 7e9; }, {"STATE_NEAR_HBM"}, Severity::kWarning},
    {"CheckpointOnTheFailingNode",
     [](PlanSpec& p) {
       p.checkpoint.storage_domain = "node";
       p.failures.failure_domain = "node";
     },
     {"CHECKPOINT_IN_FAILURE_DOMAIN"},
     Severity::kError},
    {"CheckpointInTheFailingRack",
     [](PlanSpec& p) {
       p.checkpoint.storage_domain = "rack";
       p.failures.failure_domain = "rack";
     },
     {"CHECKPOINT_IN_FAILURE_DOMAIN"},
     Severity::kError},
    {"IntervalShorterThanWrite",
     [](PlanSpec& p) { p.checkpoint.interval_seconds = 5; },
     {"CHECKPOINT_INTERVAL_TOO_SHORT", "LOW_GOODPUT"},
     Severity::kError},
    {"IntervalFarFromDaly",
     [](PlanSpec& p) { p.checkpoint.interval_seconds = 20000; },
     {"CHECKPOINT_INTERVAL_FAR_FROM_OPTIMAL"},
     Severity::kWarning},
    {"PowerOnlyGpus",
     [](PlanSpec& p) {
       p.hardware.node_other_watts = 0;
       p.hardware.cluster_other_watts_per_node = 0;
     },
     {"POWER_GPU_ONLY"},
     Severity::kWarning},
    {"NoPower", [](PlanSpec& p) { p.hardware.gpu_watts = 0; }, {"POWER_UNKNOWN"}, Severity::kWarning},
    {"DatasetTooSmall",
     [](PlanSpec& p) { p.data.dataset_tokens = 2'764'800'000'000; },
     {"DATASET_TOO_SMALL"},
     Severity::kWarning},
    {"DeadlineMissed",
     [](PlanSpec& p) { p.deadline = Start() + absl::Hours(24 * 5); },
     {"DEADLINE_MISSED"},
     Severity::kError},
    {"EpOutsideDp", [](PlanSpec& p) { p.layout.ep = 3; }, {"EP_NOT_DIVIDING_DP"}, Severity::kError},
    {"MfuZero", [](PlanSpec& p) { p.efficiency.mfu = 0; }, {"INVALID_VALUE"}, Severity::kError},
    {"MfuOptimistic", [](PlanSpec& p) { p.efficiency.mfu = 0.8; }, {"MFU_OPTIMISTIC"}, Severity::kWarning},
    {"SparsePeak",
     [](PlanSpec& p) {
       p.hardware.gpu = "H100-SXM";
       p.hardware.peak_flops = 1979e12;
     },
     {"PEAK_FLOPS_SPARSE"},
     Severity::kWarning},
    {"Fp8DensePeakIsNotSparse",
     [](PlanSpec& p) {
       p.hardware.gpu = "H100-SXM";
       p.hardware.peak_flops = 1978.9e12;  // H100 SXM dense FP8 (NVIDIA's H100 architecture whitepaper)
       p.hardware.peak_precision = "fp8";
     },
     {},
     Severity::kWarning},
    {"Fp8OnA100",
     [](PlanSpec& p) {
       p.hardware.gpu = "A100";
       p.hardware.peak_flops = 624e12;
       p.hardware.peak_precision = "fp8";
     },
     {"INVALID_VALUE"},
     Severity::kError},
    {"UnknownPrecision", [](PlanSpec& p) { p.hardware.peak_precision = "int4"; }, {"INVALID_VALUE"}, Severity::kError},
    {"UnknownMatmulPrecision",
     [](PlanSpec& p) { p.efficiency.matmul_precision = "fp4"; },
     {"INVALID_VALUE"},
     Severity::kError},
    // The interleaved schedule as Megatron-LM enforces it (arguments.py, schedules.py).
    {"InterleavedTooFewMicroBatches",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.layout.pp = 8;
       p.layout.dp = 8;
       p.layout.virtual_stages = 2;  // 4 micro-batches per step on 8 stages
       p.efficiency.mfu = 0.2;
     },
     {"INTERLEAVED_TOO_FEW_MICROBATCHES"},
     Severity::kError},
    {"InterleavedUneven",
     [](PlanSpec& p) {
       p.model.layers = 24;  // 3 per stage: 2 virtual stages do not divide them
       p.layout.pp = 8;
       p.layout.dp = 8;
       p.layout.grad_accum = 8;
       p.layout.virtual_stages = 2;
       p.efficiency.mfu = 0.2;
     },
     {"INTERLEAVED_LAYERS_UNEVEN"},
     Severity::kError},
    {"OneFOneBWithFewMicroBatchesRuns",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.layout.pp = 8;
       p.layout.dp = 8;  // 4 micro-batches on 8 stages: a large bubble, but 1F1B runs it
       p.efficiency.mfu = 0.2;
     },
     {},
     Severity::kWarning},
    {"TpInsideAnNvl72Rack",
     [](PlanSpec& p) {
       p.layout.tp = 16;
       p.layout.dp = 4;
       p.hardware.scaleup_gpus = 72;  // GB200 NVL72: one NVLink domain of 72 GPUs
     },
     {},
     Severity::kWarning},
    {"NoStart", [](PlanSpec& p) { p.start_time.reset(); }, {"MISSING_FIELD"}, Severity::kError},
    {"NoFailureModel", [](PlanSpec& p) { p.failures.node_mtbf_hours.reset(); }, {"MISSING_FIELD"}, Severity::kError},
    {"TwoFailureModels",
     [](PlanSpec& p) { p.failures.failures_per_1000_node_days = 5; },
     {"CONFLICTING_FIELDS"},
     Severity::kError},
    {"UnknownDtype", [](PlanSpec& p) { p.data.token_dtype = "int8"; }, {"INVALID_VALUE"}, Severity::kError},
    {"UnknownStorage", [](PlanSpec& p) { p.checkpoint.storage_domain = "cloud"; }, {"INVALID_VALUE"}, Severity::kError},
    {"HiddenVsHeads",
     [](PlanSpec& p) {
       p.model.hidden = 1000;
       p.model.heads = 3;
     },
     {"HIDDEN_NOT_DIVISIBLE_BY_HEADS"},
     Severity::kError},
    {"SeqLenVsCp",
     [](PlanSpec& p) {
       p.layout.cp = 2;
       p.layout.dp = 32;
       p.model.seq_len = 4098;  // 2,049 tokens per rank: not too few, just not 4 equal chunks
     },
     {"SEQ_LEN_NOT_DIVISIBLE_BY_CP"},
     Severity::kError},
    {"BytesPerTokenVsDtype",
     [](PlanSpec& p) { p.data.bytes_per_token = 1; },
     {"BYTES_PER_TOKEN_TOO_SMALL"},
     Severity::kError},
    {"CheckpointSlowerThanFailures",
     [](PlanSpec& p) {
       p.checkpoint.interval_seconds = 0;
       p.checkpoint.write_bytes_per_second = 1e4;  // 1.4e6 s per save vs a 324,000 s MTBF
     },
     {"CHECKPOINT_INTERVAL_TOO_SHORT", "CHECKPOINT_COST_EXCEEDS_MTBF", "LOW_GOODPUT"},
     Severity::kError},
    {"NonFiniteSchedule", [](PlanSpec& p) { p.efficiency.mfu = 1e-300; }, {"NON_FINITE_RESULT"}, Severity::kError},
    {"MtbfUnderHalfInterval",
     [](PlanSpec& p) { p.failures.node_mtbf_hours = 1; },
     {"JOB_MTBF_TOO_SHORT", "CHECKPOINT_INTERVAL_FAR_FROM_OPTIMAL", "LOW_GOODPUT", "SPARES_SHORT"},
     Severity::kError},
    {"ExpertsAboveParams", [](PlanSpec& p) { p.model.expert_params = 2e9; }, {"INVALID_VALUE"}, Severity::kError},
    {"ActiveBelowShared",
     [](PlanSpec& p) {
       p.model.active_params = 0.2e9;
       p.model.expert_params = 0.5e9;  // 0.5e9 outside the experts, all of it active
     },
     {"ACTIVE_BELOW_SHARED"},
     Severity::kError},
    {"ShapeVsParams",
     [](PlanSpec& p) {
       p.model.layers = 24;
       p.model.hidden = 20480;  // 12 x 24 x 20480^2 = 1.2e11 for a 1e9 model: a typo
       p.model.heads = 16;
     },
     {"SHAPE_PARAMS_MISMATCH"},
     Severity::kError},
    {"CpChunkTooSmall",
     [](PlanSpec& p) {
       p.layout.cp = 4;
       p.layout.dp = 16;  // 1,000 tokens / 4 = 250 per rank
     },
     {"CP_CHUNK_TOO_SMALL"},
     Severity::kWarning},
    {"MfuAndHfu", [](PlanSpec& p) { p.efficiency.hfu = 0.4; }, {"CONFLICTING_FIELDS"}, Severity::kError},
    {"HfuAboveOne",
     [](PlanSpec& p) {
       p.efficiency.mfu = 0;
       p.efficiency.hfu = 1.4;
     },
     {"INVALID_VALUE"},
     Severity::kError},
    {"UnknownRecompute", [](PlanSpec& p) { p.efficiency.recompute = "partial"; }, {"INVALID_VALUE"}, Severity::kError},
    {"ZeroVirtualStages", [](PlanSpec& p) { p.layout.virtual_stages = 0; }, {"INVALID_VALUE"}, Severity::kError},
    {"ZeroExpertTp", [](PlanSpec& p) { p.layout.expert_tp = 0; }, {"INVALID_VALUE"}, Severity::kError},
    {"NegativeRateCv", [](PlanSpec& p) { p.failures.rate_spread = -0.5; }, {"INVALID_VALUE"}, Severity::kError},
    {"NegativeJobRate",
     [](PlanSpec& p) { p.failures.job_interruptions_per_day = -1; },
     {"INVALID_VALUE"},
     Severity::kError},
    {"NegativeRepair", [](PlanSpec& p) { p.failures.spare_repair_hours = -2; }, {"INVALID_VALUE"}, Severity::kError},
    {"ZeroSlowdownFix", [](PlanSpec& p) { p.failures.slowdown_fix_hours = 0; }, {"INVALID_VALUE"}, Severity::kError},
    {"NanSlowdownFix", [](PlanSpec& p) { p.failures.slowdown_fix_hours = NAN; }, {"INVALID_VALUE"}, Severity::kError},
    {"ZeroCrisisFix", [](PlanSpec& p) { p.failures.crisis_fix_days = 0; }, {"INVALID_VALUE"}, Severity::kError},
    {"InfiniteCrisisFix",
     [](PlanSpec& p) { p.failures.crisis_fix_days = INFINITY; },
     {"INVALID_VALUE"},
     Severity::kError},
    {"PowerFractionAboveOne",
     [](PlanSpec& p) { p.hardware.average_power_fraction = 1.5; },
     {"INVALID_VALUE"},
     Severity::kError},
    {"NegativeReserve", [](PlanSpec& p) { p.hardware.reserved_bytes = -1e9; }, {"INVALID_VALUE"}, Severity::kError},
    {"BubbleLarge",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.layout.pp = 8;
       p.layout.dp = 8;  // 4 micro-batches per step on 8 stages: 7/11 idle
       p.efficiency.mfu = 0;
       p.efficiency.busy_mfu = 0.5;  // charged on the figure while busy
     },
     {"PIPELINE_BUBBLE_LARGE"},
     Severity::kWarning},
    {"BusyEfficiencyImpossible",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.layout.pp = 8;
       p.layout.dp = 8;  // 7/11 idle: 50% end to end is 137.5% while busy
     },
     {"BUSY_EFFICIENCY_IMPOSSIBLE"},
     Severity::kError},
    {"BusyEfficiencyOptimistic",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.layout.pp = 8;
       p.layout.dp = 8;
       p.efficiency.mfu = 0.3;  // 82.5% while busy
     },
     {"BUSY_EFFICIENCY_OPTIMISTIC"},
     Severity::kWarning},
    {"BusyMfuAndMfu", [](PlanSpec& p) { p.efficiency.busy_mfu = 0.4; }, {"CONFLICTING_FIELDS"}, Severity::kError},
    {"BusyMfuAboveOne",
     [](PlanSpec& p) {
       p.efficiency.mfu = 0;
       p.efficiency.busy_mfu = 1.2;
     },
     {"INVALID_VALUE"},
     Severity::kError},
    {"ActivationsExceedHbm",
     [](PlanSpec& p) {
       p.model.layers = 16;
       p.model.hidden = 2048;
       p.model.heads = 16;
       p.model.seq_len = 16000;
       p.efficiency.recompute = "none";  // 2 x (34 + 5 x 16 x 16000 / 2048) x 16000 x 2048 bytes a layer
     },
     {"MEMORY_EXCEEDS_HBM"},
     Severity::kError},
};

TEST(PlanEngine, NewInputsNameTheirFieldAndValue) {
  const std::pair<std::function<void(PlanSpec&)>, std::string> cases[] = {
      {[](PlanSpec& p) { p.efficiency.recompute = "partial"; },
       "efficiency.recompute 'partial' is invalid: must be none, selective or full."},
      {[](PlanSpec& p) { p.failures.rate_spread = -0.5; }, "failures.rate_spread -0.5 is invalid: must be in [0, 10]."},
      {[](PlanSpec& p) { p.hardware.average_power_fraction = 1.5; },
       "hardware.average_power_fraction 1.5 is invalid: must be in (0, 1]."},
      {[](PlanSpec& p) { p.layout.virtual_stages = 0; }, "layout.virtual_stages 0 is invalid: must be >= 1."},
  };
  for (const auto& [breaks, message] : cases) {
    PlanSpec p = HandPlan();
    breaks(p);
    const PlanReport r = ComputePlan(p);
    const Finding* f = r.Find("INVALID_VALUE");
    ASSERT_NE(f, nullptr) << message;
    EXPECT_EQ(f->message, message);
  }
}

INSTANTIATE_TEST_SUITE_P(PlanEngine, Findings, ::testing::ValuesIn(kFindingCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PlanEngine, BrokenInputsNeverPrintANegativeSizeOrNaN) {
  // The cases: expert_params above params on an ep 8 layout, negative params.
  PlanSpec experts = HandPlan();
  experts.model.expert_params = 4e9;
  experts.layout.ep = 8;
  PlanSpec negative = HandPlan();
  negative.model.params = -7e10;
  for (const PlanSpec& p : {experts, negative}) {
    const PlanReport r = ComputePlan(p);
    const Finding* f = r.Find("INVALID_VALUE");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->message.find("model.expert_params 4e09") != std::string::npos ||
                f->message.find("model.params -7e10") != std::string::npos)
        << f->message;
    for (double v : {r.memory.state_bytes_per_gpu, r.checkpoint.size_bytes, r.checkpoint.interval_seconds,
                     r.checkpoint.daly_interval_seconds, r.checkpoint.write_seconds, r.failures.budget_seconds,
                     r.schedule.total_seconds, r.compute.total_flops, r.power.energy_mwh}) {
      EXPECT_TRUE(std::isfinite(v) && v >= 0) << v;
    }
    EXPECT_FALSE(r.memory.fits && r.memory.state_bytes_per_gpu == 0);
  }
  // A 70B model whose hidden was typed 81,920 for 8,192: the shape implies 6.45e12.
  PlanSpec typo = HandPlan();
  typo.model.params = 70e9;
  typo.model.layers = 80;
  typo.model.hidden = 81920;
  typo.model.heads = 64;
  typo.model.vocab_size = 128256;
  typo.data.token_dtype = "uint32";
  const PlanReport typo_report = ComputePlan(typo);  // Find() points into it
  const Finding* shape = typo_report.Find("SHAPE_PARAMS_MISMATCH");
  ASSERT_NE(shape, nullptr);
  EXPECT_NE(shape->message.find("imply about 12·L·h² + V·h = 6.453e12 parameters, but model.params is 7e10 (92.2x)"),
            std::string::npos)
      << shape->message;
  typo.model.hidden = 8192;  // the real Llama 3 70B shape is within the bound
  EXPECT_EQ(ComputePlan(typo).Find("SHAPE_PARAMS_MISMATCH"), nullptr);
}

TEST(PlanEngine, ZeroShardsOverDataAndContextParallelRanks) {
  // Context-parallel ranks hold the same weights; the distributed optimizer shards the state
  // over dp x cp, so dp 32 x cp 2 holds what dp 64 does (ZeRO-1: 2 + 4 + 12/64 B per param).
  PlanSpec wide = HandPlan();
  PlanSpec cp = HandPlan();
  cp.layout.cp = 2;
  cp.layout.dp = 32;
  EXPECT_DOUBLE_EQ(ComputePlan(cp).memory.state_bytes_per_gpu, ComputePlan(wide).memory.state_bytes_per_gpu);
  EXPECT_DOUBLE_EQ(ComputePlan(wide).memory.state_bytes_per_gpu, 1e9 * (2 + 4 + 12.0 / 64));
}

TEST(PlanEngine, CheckpointStorageDutyCycleAndBytesWritten) {
  // HandPlan: 1e9 x 14 B = 14 GB per save, written at 1.4 GB/s = 10 s, every hour.
  PlanSpec p = HandPlan();
  PlanReport r = ComputePlan(p);
  EXPECT_NEAR(r.checkpoint.storage_duty_cycle, 10.0 / 3600, 1e-9);
  EXPECT_DOUBLE_EQ(r.checkpoint.total_written_bytes, static_cast<double>(r.checkpoint.count) * 14e9);
  EXPECT_EQ(r.Find("CHECKPOINT_STORAGE_BUSY"), nullptr);
  // Asynchronous saves block only for the host snapshot, so Daly's interval (238 s here) is
  // shorter than a slow storage's write (14 GB at 140 MB/s: 100 s) allows: the chosen
  // interval keeps the storage busy at most a quarter of the time (100 s / 400 s).
  p.checkpoint.async = true;
  p.checkpoint.interval_seconds = 0;
  p.checkpoint.write_bytes_per_second = 1.4e8;
  r = ComputePlan(p);
  EXPECT_LT(r.checkpoint.daly_interval_seconds, 400);
  EXPECT_DOUBLE_EQ(r.checkpoint.interval_seconds, 400);
  EXPECT_DOUBLE_EQ(r.checkpoint.storage_duty_cycle, 0.25);
  EXPECT_EQ(r.Find("CHECKPOINT_STORAGE_BUSY"), nullptr);
  // Asked for every 200 s: the storage writes half the time, and the report says so.
  p.checkpoint.interval_seconds = 200;
  r = ComputePlan(p);
  const Finding* busy = r.Find("CHECKPOINT_STORAGE_BUSY");
  ASSERT_NE(busy, nullptr);
  EXPECT_NE(busy->message.find("busy 50% of the run (100 s of writing every 200 s"), std::string::npos)
      << busy->message;
}

TEST(PlanEngine, ReplicasOrAnotherDomainKeepTheCheckpointSafe) {
  PlanSpec p = HandPlan();
  p.checkpoint.storage_domain = "node";
  p.checkpoint.replicas = 2;
  EXPECT_EQ(ComputePlan(p).Find("CHECKPOINT_IN_FAILURE_DOMAIN"), nullptr);
  // Two replicas double the bytes written.
  EXPECT_DOUBLE_EQ(ComputePlan(p).checkpoint.write_seconds, 20);
  p.checkpoint.replicas = 1;
  p.failures.failure_domain = "gpu";  // a GPU failure leaves the node's disk
  EXPECT_EQ(ComputePlan(p).Find("CHECKPOINT_IN_FAILURE_DOMAIN"), nullptr);
}

TEST(PlanEngine, FindingMessagesNameTheNumbers) {
  PlanSpec p = HandPlan();
  p.model.vocab_size = 128256;
  const PlanReport report = ComputePlan(p);
  const Finding* f = report.Find("TOKEN_DTYPE_OVERFLOW");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->message, "vocab_size 128256 does not fit token_dtype uint16 (max 65536 ids).");
  p = HandPlan();
  p.layout.dp = 32;
  EXPECT_EQ(ComputePlan(p).Find("LAYOUT_GPU_MISMATCH")->message,
            "layout tp 1 x pp 1 x dp 32 x cp 1 = 32 GPUs, but fleet.gpus is 64.");
}

TEST(PlanEngine, ErrorsAreListedBeforeWarnings) {
  PlanSpec p = HandPlan();
  p.hardware.node_other_watts = 0;
  p.hardware.cluster_other_watts_per_node = 0;  // warning
  p.model.vocab_size = 128256;                  // error
  const PlanReport r = ComputePlan(p);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].severity, Severity::kError);
  EXPECT_EQ(r.findings[1].severity, Severity::kWarning);
}

// --- published runs written as plans ------------------------------------------------

TEST(PublishedRuns, Llama65B) {
  // Touvron et al. 2023: 1.4e12 tokens on 2,048 A100-80GB (312e12) at 380 tokens/s/GPU:
  // ~21 days and 1,022,362 GPU-hours. No shape, so FLOPs are 6N as the paper's MFU.
  PlanSpec p = HandPlan();
  p.model.params = 65.2e9;
  p.model.seq_len = 2048;
  p.data.tokens = 1'400'000'000'000;
  p.data.dataset_tokens.reset();
  p.hardware.peak_flops = 312e12;
  p.fleet.gpus = 2048;
  p.layout.dp = 2048;
  p.efficiency.mfu = ImpliedMfu(DenseFlopsPerToken(65.2e9), 380, 1, 312e12);
  const PlanReport r = ComputePlan(p);
  EXPECT_NEAR(r.compute.active_gpu_hours, 1022362, 0.01 * 1022362);
  EXPECT_NEAR(r.compute.tokens_per_second / 2048, 380, 1e-6);
  EXPECT_NEAR(r.schedule.active_compute_seconds / 86400, 21, 0.5);
}

TEST(PublishedRuns, Gpt3TotalCompute) {
  // Brown et al. 2020, table D.1: 3.14e23 FLOPs for 174.6e9 params on 300e9 tokens.
  PlanSpec p = HandPlan();
  p.model.params = 174.6e9;
  p.data.tokens = 300'000'000'000;
  p.data.dataset_tokens.reset();
  EXPECT_NEAR(ComputePlan(p).compute.total_flops, 3.14e23, 0.01 * 3.14e23);
}

TEST(PublishedRuns, DgxH100NodePower) {
  // A DGX H100 peaks at ~10.2 kW with 8 x 700 W GPUs (docs/reference-figures.md, power): 4.6 kW other.
  PlanSpec p = HandPlan();
  p.fleet.gpus = 8;
  p.layout.dp = 8;
  p.hardware.gpu_watts = 700;
  p.hardware.node_other_watts = 4600;
  p.hardware.cluster_other_watts_per_node = 0;
  p.fleet.pue = 1.0;
  const PlanReport r = ComputePlan(p);
  EXPECT_DOUBLE_EQ(r.power.it_watts, 10200);
  EXPECT_NEAR(r.power.gpu_watts / r.power.it_watts, 0.55, 0.01);
}

// --- deadline search ------------------------------------------------------------------

// `p` on dp replicas of `replica` GPUs holding its global batch of `batch` sequences (the
// micro-batch as planned when it divides each replica's share, else the largest that does).
PlanSpec HoldingTheBatch(PlanSpec p, uint32_t dp, uint32_t replica, uint32_t batch) {
  const uint32_t share = batch / dp;
  uint32_t mb = std::min(p.layout.micro_batch.value_or(1), share);
  while (share % mb != 0) --mb;
  p.fleet.gpus = dp * replica;
  p.layout.dp = dp;
  p.layout.micro_batch = mb;
  p.layout.grad_accum = share / mb;
  return p;
}

// The largest dp below `dp` that divides `batch`.
uint32_t NextSmallerDivisor(uint32_t dp, uint32_t batch) {
  uint32_t d = dp - 1;
  while (batch % d != 0) --d;
  return d;
}

TEST(DeadlineSearch, FindsTheSmallestFleetThatHoldsTheBatchAndTheNextSmallerMisses) {
  const PlanSpec p = HandPlan();  // 2 x 4 x 64 = 512 sequences per step
  const absl::Time deadline = Start() + absl::Hours(24 * 8);
  ASSERT_GT(ComputePlan(p).schedule.finish_time, deadline);  // 64 GPUs are too few
  const DeadlineFleet fleet = FindFleetForDeadline(p, deadline);
  ASSERT_TRUE(fleet.met) << fleet.explanation;
  EXPECT_GT(fleet.gpus, 64u);
  EXPECT_EQ(fleet.gpus % 8, 0u);
  EXPECT_LE(fleet.schedule.finish_time, deadline);
  EXPECT_FALSE(fleet.batch_changed);
  EXPECT_EQ(fleet.micro_batch * fleet.grad_accum * fleet.dp, 512u);
  EXPECT_EQ(fleet.tokens_per_step, 512'000u);

  const PlanSpec at = HoldingTheBatch(p, fleet.dp, 1, 512);
  EXPECT_EQ(ComputePlan(at).batch.sequences_per_step, 512u);
  EXPECT_LE(ComputePlan(at).schedule.finish_time, deadline);
  // The next smaller fleet that holds the batch misses.
  const PlanSpec fewer = HoldingTheBatch(p, NextSmallerDivisor(fleet.dp, 512), 1, 512);
  EXPECT_GT(ComputePlan(fewer).schedule.finish_time, deadline);
  // Growing the batch instead (asked for) needs fewer GPUs, and says so.
  const DeadlineFleet grown = FindFleetForDeadline(p, deadline, 1u << 20, /*allow_batch_change=*/true);
  ASSERT_TRUE(grown.met);
  EXPECT_TRUE(grown.batch_changed);
  EXPECT_NE(grown.explanation.find("a different recipe"), std::string::npos) << grown.explanation;
}

TEST(DeadlineSearch, ReplicasOfSeveralNodes) {
  // tp 8 x pp 4: each replica is 32 GPUs = 4 nodes; the answer is a multiple of 32.
  PlanSpec p = HandPlan();
  p.layout.tp = 8;
  p.layout.pp = 4;
  p.layout.dp = 2;
  p.layout.grad_accum = 128;  // 2 x 128 x 2 = 512 sequences per step
  const DeadlineFleet fleet = FindFleetForDeadline(p, Start() + absl::Hours(24 * 8));
  ASSERT_TRUE(fleet.met) << fleet.explanation;
  EXPECT_EQ(fleet.gpus % 32, 0u);
  EXPECT_EQ(fleet.gpus, fleet.dp * 32);
  EXPECT_EQ(fleet.micro_batch * fleet.grad_accum * fleet.dp, 512u);
  const PlanSpec fewer = HoldingTheBatch(p, NextSmallerDivisor(fleet.dp, 512), 32, 512);
  EXPECT_GT(ComputePlan(fewer).schedule.finish_time, Start() + absl::Hours(24 * 8));
}

TEST(DeadlineSearch, SkipsFleetsThatBreakAnotherRule) {
  // 70B with ZeRO-3 does not fit 80 GB on a few GPUs: the answer must fit.
  PlanSpec p = HandPlan();
  p.model.params = 70e9;
  p.layout.zero_stage = 3;
  p.data.tokens = 1'000'000'000'000;
  const DeadlineFleet fleet = FindFleetForDeadline(p, Start() + absl::Hours(24 * 365));
  ASSERT_TRUE(fleet.met) << fleet.explanation;
  const PlanSpec at = HoldingTheBatch(p, fleet.dp, 1, 512);
  EXPECT_FALSE(ComputePlan(at).HasError());
  EXPECT_GT(fleet.gpus, 8u);  // 8 GPUs would need 157.5 GB each
  // With ep 8, only multiples of 8 replicas are valid.
  p = HandPlan();
  p.model.params = 8e9;
  p.model.active_params = 2e9;
  p.layout.ep = 8;
  const DeadlineFleet moe = FindFleetForDeadline(p, Start() + absl::Hours(24 * 4));
  ASSERT_TRUE(moe.met) << moe.explanation;
  EXPECT_EQ(moe.dp % 8, 0u);
}

TEST(DeadlineSearch, NeedsAStartTime) {
  PlanSpec p = HandPlan();
  p.start_time.reset();
  const DeadlineFleet fleet = FindFleetForDeadline(p, Start());
  EXPECT_FALSE(fleet.met);
  EXPECT_NE(fleet.explanation.find("no start_time"), std::string::npos);
}

TEST(DeadlineSearch, SaysPlainlyWhenNoFleetCan) {
  const DeadlineFleet soon = FindFleetForDeadline(HandPlan(), Start() + absl::Hours(1));
  EXPECT_FALSE(soon.met);
  EXPECT_GT(soon.gpus, 0u);  // the fastest fleet found
  EXPECT_NE(soon.explanation.find("no fleet"), std::string::npos) << soon.explanation;

  const DeadlineFleet before = FindFleetForDeadline(HandPlan(), Start() - absl::Hours(1));
  EXPECT_FALSE(before.met);
  EXPECT_NE(before.explanation.find("not after the start_time"), std::string::npos);
}

// --- the shipped examples ---------------------------------------------------------------

TEST(Examples, EveryExampleHasNoErrorFinding) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FLIGHTPLAN_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".yaml" && entry.path().extension() != ".json") continue;
    ++seen;
    absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(entry.path().string());
    ASSERT_TRUE(plan.ok()) << plan.status();
    const PlanReport r = ComputePlan(convert::PlanFromProto(*plan));
    EXPECT_FALSE(r.HasError()) << entry.path() << ": " << (r.findings.empty() ? "" : r.findings.front().message);
    EXPECT_GT(r.schedule.total_seconds, r.schedule.active_compute_seconds);
  }
  EXPECT_GE(seen, 2);
}

TEST(Examples, FlagshipFigures) {
  absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlanReport r = ComputePlan(convert::PlanFromProto(*plan));
  EXPECT_TRUE(r.findings.empty());
  // 6 x 70e9 + 6 x 80 x 8192 x 8192 (causal attention) per token, 10e12 tokens.
  EXPECT_DOUBLE_EQ(r.compute.flops_per_token, 6 * 70e9 + 6.0 * 80 * 8192 * 8192);
  // Interleaved 1F1B: pp 4, 16 micro-batches, 5 chunks per stage: 3 / (5 x 16 + 3) idle.
  EXPECT_DOUBLE_EQ(r.compute.bubble_fraction, 3.0 / 83);
  EXPECT_NEAR(r.compute.mfu, 0.40 * (1 - 3.0 / 83), 1e-12);
  EXPECT_TRUE(r.memory.fits);
  EXPECT_EQ(r.batch.tokens_per_step, 2048u * 8192);
  EXPECT_EQ(r.fleet.nodes, 512u);
  // 70e9 x (2 + 12) bytes = 980 GB; 9.8 s at 100 GB/s.
  EXPECT_DOUBLE_EQ(r.checkpoint.size_bytes, 980e9);
  EXPECT_DOUBLE_EQ(r.checkpoint.write_seconds, 9.8);
  // The schedule's lines add up to the total.
  const auto& s = r.schedule;
  EXPECT_NEAR(s.active_compute_seconds + s.checkpoint_seconds + s.failure_budget_seconds + s.availability_seconds +
                  s.contingency_seconds,
              s.total_seconds, 1e-6);
  EXPECT_GT(s.deadline_slack_seconds, 0);
  // Cost by hand: 4,096 GPUs and 24 spare nodes' 192 reserved for the whole schedule at
  // $2.50, power included; energy at the training draw (76% of 2.87 MW of GPUs and 2.05 MW
  // of nodes, plus 768 kW of cluster, x 1.2) while running, 35% of the 5.68 MW rating x 1.2
  // while down.
  const auto& c = r.cost;
  EXPECT_DOUBLE_EQ(c.reserved_gpus, 4288);
  EXPECT_NEAR(c.total.gpu_hours, 4288 * s.total_seconds / 3600, 1e-6);
  EXPECT_NEAR(c.total.dollars, 2.5 * c.total.gpu_hours, 1e-6);
  const double training = (0.76 * (4096 * 700.0 + 512 * 4000.0) + 512 * 1500.0) * 1.2;
  const double idle = 0.35 * (4096 * 700.0 + 512 * 5500.0) * 1.2;
  EXPECT_NEAR(c.training_facility_watts, training, 1e-6);
  EXPECT_NEAR(c.idle_facility_watts, idle, 1e-6);
  EXPECT_NEAR(c.active_compute.energy_mwh, training * s.active_compute_seconds / 3.6e9, 1e-9);
  EXPECT_NEAR(c.availability.energy_mwh, idle * s.availability_seconds / 3.6e9, 1e-9);
}

}  // namespace
}  // namespace flightplan::planner
