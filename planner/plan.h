// The plan of a run (its assumptions) and the report the plan engine computes from it.
//
// Plain value types mirroring proto/flightplan/v1/plan.proto, so that forecast/ needs no
// protobuf; convert/plan_convert.h maps between the two. Optional inputs are std::optional:
// the engine, not the parser, owns the defaults. Fields and units: see plan.proto.
#ifndef FLIGHTPLAN_PLANNER_PLAN_H_
#define FLIGHTPLAN_PLANNER_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace flightplan::planner {

// Defaults of failures.detect_seconds and failures.restart_seconds (plan.proto): the
// planner's and the tracker's (the outage a relaunch is allowed before a page).
inline constexpr double kDefaultDetectSeconds = 120;
// Meta reports 5-20 minutes of restart overhead in large clusters (Kokolis et al. 2024).
inline constexpr double kDefaultRestartSeconds = 600;
// Default of failures.spare_repair_hours: a failed node out for triage, a part swap and
// burn-in: days, not hours. A judgment, not a published figure; give the fleet's own.
inline constexpr double kDefaultRepairHours = 48;

struct PlanSpec {
  std::string name;
  std::optional<absl::Time> start_time;
  std::optional<absl::Time> deadline;

  struct Model {
    double params = 0;
    std::optional<double> active_params;
    std::optional<double> expert_params;
    uint32_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, seq_len = 0, vocab_size = 0, head_dim = 0;
    std::optional<bool> tied_embeddings;  // false: 6 x (N - V x h), Megatron-LM's count
    std::optional<bool> dropout;          // default true: the activations keep its masks
    std::optional<uint32_t> num_experts;  // MoE: routed experts per MoE layer (ep divides it)
  } model;
  struct Data {
    uint64_t tokens = 0;
    std::optional<uint64_t> dataset_tokens;
    std::string token_dtype;  // "" = uint32
    std::optional<double> bytes_per_token;
  } data;
  struct Hardware {
    std::string gpu;
    double peak_flops = 0, hbm_bytes = 0, gpu_watts = 0;
    std::optional<uint32_t> gpus_per_node;
    double node_other_watts = 0, cluster_other_watts_per_node = 0;
    std::optional<double> average_power_fraction;  // of gpu + node watts while training
    std::optional<double> reserved_bytes;          // HBM the framework holds (see plan.proto)
    std::string peak_precision;                    // "" = bf16 | fp8
    std::optional<uint32_t> scaleup_gpus;          // NVLink domain; default gpus_per_node
  } hardware;
  struct Fleet {
    uint32_t gpus = 0, spare_nodes = 0;
    std::optional<double> pue;
  } fleet;
  struct Layout {
    std::optional<uint32_t> tp, pp, dp, cp, ep, micro_batch, grad_accum;
    std::optional<uint32_t> virtual_stages;  // interleaved 1F1B: model chunks per stage
    std::string pipeline_schedule;           // "" | 1f1b | interleaved (with virtual_stages)
    std::optional<uint32_t> expert_tp;       // tensor parallelism inside an expert
    uint32_t zero_stage = 0;
    std::optional<uint64_t> global_batch_tokens;
    // Megatron-LM's uneven pipeline splits (planner/pipeline_split.h; plan.proto).
    std::optional<bool> account_for_embedding, account_for_loss;
    std::optional<uint32_t> first_stage_layers, last_stage_layers;
    std::string pipeline_layout;  // --pipeline-model-parallel-layout, "" = none
  } layout;
  struct Efficiency {
    double mfu = 0;             // model FLOPs utilisation end to end; or give hfu
    std::optional<double> hfu;  // hardware FLOPs utilisation end to end (counts recomputation)
    // Bottom-up: the efficiency while the pipeline is busy; the bubble is charged on top.
    std::optional<double> busy_mfu, busy_hfu;
    std::string matmul_precision;  // "" = hardware.peak_precision | bf16 | fp8 (activation bytes)
    std::string recompute;         // "" = selective | none | full
    // What the figure's attention FLOPs count (see plan.proto): causal (default) or the full
    // score matrix; or no attention at all (count_attention false: 6N only).
    std::optional<bool> causal_attention, count_attention;
  } efficiency;
  struct State {
    std::optional<double> weight_bytes, grad_bytes, optimizer_bytes;
  } state;
  struct Checkpoint {
    double interval_seconds = 0, write_bytes_per_second = 0;
    std::optional<double> read_bytes_per_second;
    bool async = false;
    std::optional<double> snapshot_bytes_per_second;
    std::string storage_domain;  // "" = remote
    std::optional<uint32_t> replicas;
  } checkpoint;
  struct Failures {
    std::optional<double> node_mtbf_hours, failures_per_1000_node_days, detect_seconds, restart_seconds;
    std::string failure_domain;  // "" = node
    std::optional<double> budget_quantile;
    std::optional<double> rate_spread;                // spread of the true rate
    std::optional<double> job_interruptions_per_day;  // not scaling with nodes
    std::optional<double> spare_repair_hours;         // a failed node's time out
    std::optional<double> slowdown_fix_hours;         // a slowdown's time to be found and fixed
    std::optional<double> crisis_fix_days;            // a crisis of failures' time to be fixed
  } failures;
  struct Availability {
    std::optional<double> maintenance_fraction, maintenance_hours;
  } availability;
  std::optional<double> contingency_fraction;
  struct Schedule {
    std::optional<double> custom_fraction;  // of active compute plus custom work
  } schedule;
  struct Cost {
    double gpu_hour_dollars = 0;                // one GPU-hour of the reserved fleet, all-in
    double energy_dollars_per_mwh = 0;          // extra, when the GPU-hour price excludes power
    std::optional<double> idle_power_fraction;  // of the IT load while the job is down
  } cost;

  // The run in phases (see plan.proto): each replaces what it gives.
  struct Phase {
    std::string name;
    uint64_t tokens = 0;
    std::optional<uint32_t> seq_len, gpus;  // the phase's model.seq_len and fleet.gpus
    Layout layout;                          // set fields replace; zero_stage when non-zero
    std::optional<Efficiency> efficiency;   // replaces the plan's when given
    struct Ramp {
      uint32_t from_sequences = 0, step_sequences = 0;
    };
    std::optional<Ramp> ramp;
    // Fields the phase sets that cannot change between phases ("model.params"): findings.
    std::vector<std::string> unchangeable;
  };
  std::vector<Phase> phases;
};

enum class Severity { kWarning, kError };

struct Finding {
  Severity severity = Severity::kError;
  std::string code;     // stable, e.g. "TOKEN_DTYPE_OVERFLOW"
  std::string message;  // a sentence naming the numbers involved
};

struct PlanReport {
  std::string name;
  std::vector<Finding> findings;
  struct Batch {
    uint64_t sequences_per_step = 0, tokens_per_step = 0, steps = 0, last_step_tokens = 0;
  } batch;
  struct Compute {
    // Model FLOPs per token (6N plus attention under the named convention), and what the
    // GPUs execute (plus the forward recomputed under the recompute mode).
    double flops_per_token = 0, attention_flops_per_token = 0, total_flops = 0, dense_total_flops = 0,
           cluster_flops_per_second = 0, tokens_per_second = 0, active_gpu_hours = 0;
    double hardware_flops_per_token = 0;
    // Both utilisations end to end (the bubble included), and the share of each step the
    // pipeline stands idle: (pp-1)/(v·m + pp-1).
    double mfu = 0, hfu = 0, bubble_fraction = 0;
    bool bubble_in_efficiency = false;  // the plan's figure already contains the bubble
    double busy_mfu = 0, busy_hfu = 0;  // while the pipeline is busy: mfu, hfu / (1 - bubble)
    std::string attention_convention, recompute;
  } compute;
  struct Memory {
    // Per GPU on the heaviest pipeline stage (`stage`: "only", "first" or "last"): the
    // training state by part, the activations of the micro-batches in flight, the logits,
    // ZeRO-3's gathered layers and the framework's reserve. total_bytes is their sum.
    double state_bytes_per_gpu = 0, hbm_bytes = 0;
    bool fits = true;
    double weights = 0, grads = 0, optimizer = 0;  // bytes
    double activation_bytes_per_layer = 0;         // one micro-batch, as stored for backward
    double activations = 0, recompute_working_bytes = 0, logits = 0, buffers = 0, reserve = 0, total_bytes = 0;
    uint32_t layers_on_stage = 0;
    double microbatches_in_flight = 0;  // fractional under the interleaved schedule
    std::string stage;
    // Each stage that may be the heaviest (first, last, the fullest middle one of a split of
    // the plan's own), its layers and total per GPU.
    struct Stage {
      std::string stage;
      uint32_t layers = 0;
      double total_bytes = 0;
    };
    std::vector<Stage> stages;
  } memory;
  struct Checkpoint {
    double size_bytes = 0, write_seconds = 0, read_seconds = 0, blocking_seconds = 0, young_interval_seconds = 0,
           daly_interval_seconds = 0, interval_seconds = 0;
    uint64_t count = 0;
    double overhead_seconds = 0;
    // The storage's side: the share of the run it spends writing checkpoints (write time
    // over the interval), and the bytes written over the run (every replica).
    double storage_duty_cycle = 0, total_written_bytes = 0;
    // A restore: every data-parallel replica reads what it holds (the weights unless ZeRO-3
    // shards them; sharded state once in all).
    double restore_read_bytes = 0;
  } checkpoint;
  struct Failures {
    double node_mtbf_seconds = 0, job_mtbf_seconds = 0, expected_interruptions = 0, loss_per_interruption_seconds = 0,
           expected_loss_seconds = 0, budget_seconds = 0;
    uint64_t budget_interruptions = 0;
    double rate_spread = 0;  // the Gamma spread of the rate behind the budget's quantile
    double job_interruptions_per_day = 0;
    // Nodes out for repair at once: expected, and the count exceeded 1% of the time.
    double nodes_in_repair = 0;
    uint64_t nodes_in_repair_p99 = 0;
  } failures;
  struct Schedule {
    double active_compute_seconds = 0, checkpoint_seconds = 0, failure_budget_seconds = 0, availability_seconds = 0,
           contingency_seconds = 0, total_seconds = 0;
    double custom_seconds = 0;  // deliberate work (schedule.custom_fraction)
    absl::Time start_time = absl::UnixEpoch();
    absl::Time finish_time = absl::UnixEpoch();
    std::optional<absl::Time> deadline;
    double deadline_slack_seconds = 0;
    double expected_goodput = 0;
    // The plan's expected (P50) schedule: compute, checkpoints, the median interruption
    // count's loss and the maintenance on them; no contingency. A run on plan finishes about
    // then. finish_time is the committed date (P90 failure budget and contingency), which the
    // deadline and its alerts keep.
    double expected_seconds = 0;
    absl::Time expected_finish_time = absl::UnixEpoch();
  } schedule;
  struct Power {
    // Peak (board power and node maxima); energy uses the average while training.
    double gpu_watts = 0, node_other_watts = 0, cluster_other_watts = 0, other_it_watts = 0, it_watts = 0,
           facility_watts = 0, energy_mwh = 0;
    double average_facility_watts = 0, average_power_fraction = 0;
  } power;
  struct Data {
    double epochs = 0, storage_bytes = 0;
  } data;
  struct Fleet {
    uint32_t gpus = 0, nodes = 0, spare_nodes = 0, dp = 0;
  } fleet;
  // Money and energy split like the schedule (see plan.proto's CostReport).
  struct CostLine {
    double seconds = 0, gpu_hours = 0, energy_mwh = 0, dollars = 0;
  };
  struct Cost {
    CostLine active_compute, checkpoint, failure_budget, availability, contingency, total;
    CostLine custom;  // listed after checkpoint; in total
    double reserved_gpus = 0, training_facility_watts = 0, idle_facility_watts = 0;
  } cost;
  // One per plan phase (see plan.proto's PhaseReport); empty without phases.
  struct Phase {
    std::string name;
    uint64_t tokens = 0, tokens_before = 0, steps = 0, tokens_per_step = 0;
    uint32_t seq_len = 0, gpus = 0;
    double tokens_per_second = 0, mfu = 0, bubble_fraction = 0, active_compute_seconds = 0, memory_bytes = 0,
           schedule_start_seconds = 0, schedule_end_seconds = 0, expected_interruptions = 0;
    bool fits = true;
  };
  std::vector<Phase> phases;

  [[nodiscard]] bool HasError() const;
  // An error in an input itself (INVALID_VALUE, MISSING_FIELD, CONFLICTING_FIELDS): the
  // figures are built on a bad value, so reports show the findings only.
  [[nodiscard]] bool InputInvalid() const;
  [[nodiscard]] const Finding* Find(const std::string& code) const;
};

// The smallest fleet that meets a deadline (see FindFleetForDeadline).
struct DeadlineFleet {
  absl::Time deadline = absl::UnixEpoch();
  bool met = false;
  uint32_t gpus = 0, nodes = 0, dp = 0;
  uint32_t micro_batch = 0, grad_accum = 0;  // per replica, as the fleet found needs them
  uint64_t tokens_per_step = 0;
  bool batch_changed = false;     // the global batch differs from the plan's (asked for)
  PlanReport::Schedule schedule;  // of the fleet found (the fastest one when none meets it)
  // The efficiency that fleet is assumed to reach: MFU end to end, its pipeline's bubble
  // and the MFU while busy (the plan's, held across fleets).
  double mfu = 0, bubble_fraction = 0, busy_mfu = 0;
  std::string explanation;
};

}  // namespace flightplan::planner

#endif  // FLIGHTPLAN_PLANNER_PLAN_H_
