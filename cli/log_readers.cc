// The log tailer's format readers: what Megatron-LM, torchtitan, DeepSpeed and NeMo 2 print,
// each pattern with the program's file and versions (LogEvents::Feed* of log_events.h; the
// core, launches, crashes, saves and iterations, is log_events.cc).
#include <algorithm>
#include <cstdint>
#include <regex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/crash_lines.h"
#include "cli/log_events.h"
#include "cli/log_events_internal.h"

namespace flightplan::cli {
namespace {

using log_internal::Double;  // NOLINT
using log_internal::Int;     // NOLINT

// Megatron-LM (megatron/training/training.py training_log; checkpointing.py; arguments.py
// _print_args; core/timers.py).
const std::regex kMegatronIteration(R"(\biteration\s+(\d+)\s*/\s*\d+\s*\|)");
const std::regex kConsumedTokens(R"(consumed tokens:\s*(\d+))");  // Megatron-DeepSpeed
const std::regex kConsumedSamples(R"(consumed samples:\s*(\d+))");
const std::regex kElapsedMs(R"(elapsed time per iteration \(ms\):\s*([\d.]+))");
const std::regex kMegatronSaving(R"(\bsaving checkpoint at iteration\s+(\d+))");
const std::regex kMegatronScheduled(R"(\bscheduled an async checkpoint save at iteration\s+(\d+))");
const std::regex kMegatronSaved(R"(\bsuccessfully saved (?:local )?checkpoint (?:at|from) iteration\s+(\d+))");
const std::regex kMegatronLoaded(R"(\bsuccessfully loaded checkpoint from .* at iteration\s+(\d+))");
// --timing-log-option minmax (the default) prints "(min, max)", max prints the max alone.
const std::regex kMegatronSaveTimer(
    R"(^\s*save-checkpoint(?:-non-persistent)?\s+\.*:\s*(?:\(([\d.]+),\s*([\d.]+)\)|([\d.]+))\s*$)");
const std::regex kMegatronBatch(R"(global batch size:\s*(\d+))");
const std::regex kMegatronExit(R"(^\[(exiting program [^\]]*)\] datetime:)");
// Its evaluation (megatron/training/training.py evaluate_and_print_results, core_v0.19.0:
// string = f" validation loss at {prefix} | " between two rows of dashes), printed when
// evaluate() returns, right after the report of the iteration it follows.
constexpr char kMegatronValidation[] = " validation loss at ";
// The compute timers in Timers.log's "(min, max) time across ranks (ms):" block
// (megatron/core/timers.py _get_global_min_max_time_string, "    {name....}: ({min:.2f},
// {max:.2f})"; the names are megatron/training/training.py's, logged at --timing-log-level 1).
const std::regex kMegatronRankTimer(
    R"(^\s*(forward-backward|forward-compute|backward-compute)\s+\.*:\s*\(([\d.]+),\s*([\d.]+)\)\s*$)");
const std::regex kMegatronArg(R"(^\s{2}(seq_length|global_batch_size|rampup_batch_size) \.+ (.*?)\s*$)");

// torchtitan (torchtitan/components/metrics.py MetricsProcessor.log; train.py / trainer.py
// Trainer; components/checkpoint.py and components/checkpointer/dcp.py).
const std::regex kTitanStep(R"((?:^|[^a-z])step:\s*(\d+)\s+loss:)");
const std::regex kTitanBatch(R"(global batch size (\d+), .*\bsequence length (\d+))");
const std::regex kTitanTokensPerStep(R"(\b(\d+) tokens per train step)");
const std::regex kTitanStarts(R"(Training starts at step (\d+))");
const std::regex kTitanLoading(R"(Loading the checkpoint from \S*?step-(\d+))");
const std::regex kTitanSaving(R"(- (?:Saving|Staging) the checkpoint[ .])");
const std::regex kTitanSaved(R"(Finished (?:saving|staging) the checkpoint.*?in\s*([\d.]+) seconds)");
const std::regex kTitanLastSave(R"(Saving a full checkpoint at last step, step (\d+))");
const std::regex kTitanLastSaved(R"(Last step checkpoint completed in ([\d.]+)s)");

// DeepSpeed (deepspeed/runtime/engine.py _report_progress and save_checkpoint;
// runtime/checkpoint_engine/torch_checkpoint_engine.py; runtime/config.py print; __init__.py),
// through deepspeed/utils/logging.py's "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:
// %(funcName)s] %(message)s" and log_dist's "[Rank N] ", v0.7.0 to v0.16.4.
const std::regex kDsInfo(R"(\bDeepSpeed info: version=)");
const std::regex kDsProgress(R"(\bstep=(\d+), skipped=(\d+), lr=)");
const std::regex kDsBatch(R"(\btrain_batch_size \.+ (\d+)\s*$)");
const std::regex kDsSaving(R"(\[Torch\] Checkpoint (\S+) is about to be saved!)");
const std::regex kDsSaved(R"(\[Torch\] Checkpoint (\S+) is ready now!)");
const std::regex kDsLoading(R"(\[Torch\] Loading checkpoint from \S*?global_step(\d+)/)");
const std::regex kDsTagStep(R"(^global_step(\d+)$)");

// NeMo 2 (nemo/lightning/pytorch/callbacks/progress_printer.py ProgressPrinter, a bare print;
// callbacks/model_checkpoint.py through nemo/utils/formatters/base.py's "[NeMo %(levelname)1.1s
// %(asctime)s %(module)s:%(lineno)d] "; Lightning's checkpoint_connector.py), v2.0.0 to v2.4.0.
const std::regex kNemoStep(R"(\bTraining epoch \d+, iteration \d+/\d+ \|)");
const std::regex kNemoGlobalStep(R"(\| global_step: (\d+)\b)");
const std::regex kNemoConsumed(R"(\| consumed_samples: (\d+)\b)");
const std::regex kNemoBatch(R"(\| global_batch_size: (\d+)\b)");
const std::regex kNemoSaved(R"(\bAsync checkpoint save for step (\d+) \(.*\) finalized successfully\.)");
const std::regex kNemoRestoring(R"(\bRestoring states from the checkpoint path at \S*?-step=(\d+)-)");
// Its validation loop (ProgressPrinter.on_validation_batch_end, v2.0.0 to v2.4.0): every
// log_interval validation batches, print(self.validation_description + f": iteration
// {int(n)}/{self.total_validation_steps}"), the description "Validation", or "Sanity
// checking Validation" before training starts; the total may be inf.
const std::regex kNemoValidation(R"((Sanity checking )?Validation: iteration (\d+)/(\d+|inf)\b)");
// nvidia-resiliency-ext's StragglerDetectionCallback, as NeMo 2's recipe sets it
// (nemo/collections/llm/recipes/callbacks/common.py straggler_det_callback), through the
// NeMo logger, whose formatter indents a message's later lines four spaces: "GPU relative
// performance:" then " Worst performing k/N ranks:" / " Best performing k/N ranks:" and
// "  Rank={r} Node={node} Score={s:.2f}" (src/nvidia_resiliency_ext/ptl_resiliency/
// straggler_det_callback.py _format_gpu_scores and line 154, v0.2.0 to v0.5.0).
const std::regex kStragglerScore(R"(^\s*Rank=(\d+) Node=\S+ Score=([\d.]+)\s*$)");
const std::regex kStragglerRanks(R"(^\s*(Worst|Best) performing \d+/\d+ ranks:\s*$)");
// Megatron's per-rank timers, --timing-log-option all (megatron/core/timers.py
// _get_all_ranks_time_string, core_v0.16.0 to core_v0.19.0): "times across ranks (ms):", then
// per timer "\n  {name}:" and per rank "\n     rank {rank:2d}: {time:.2f}".
const std::regex kMegatronRanksTimer(R"(^  (forward-backward|forward-compute|backward-compute):\s*$)");
const std::regex kMegatronRankTime(R"(^\s+rank\s+(\d+): ([\d.]+)\s*$)");
// DeepSpeed's runner (deepspeed/launcher/multinode_runner.py PDSHRunner.get_cmd, v0.7.0 to
// v0.16.4): "Running on the following workers: %s" with the hosts joined by ',' in the
// hostfile's order, the order of the nodes' ranks.
const std::regex kDsWorkers(R"(Running on the following workers: (\S+))");

}  // namespace

bool LogEvents::FeedMegatron(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at,
                             absl::Status& status) {
  std::smatch m;
  // The line's own time, when it is known: its timestamp, or when a live log was read.
  const std::optional<absl::Time> line_time = stamp ? stamp : o_.backfill ? std::nullopt : std::optional(at);

  // The arguments dump (_print_args): "  seq_length ...................................... 4096".
  if (absl::StrContains(line, " ....") && std::regex_search(line, m, kMegatronArg)) {
    const std::string name = m[1].str(), value = m[2].str();
    if (name == "rampup_batch_size") {
      ramp_up_ = value != "None";
      return true;
    }
    int64_t v = 0;
    if (value == "None") return true;
    if (!absl::SimpleAtoi(value, &v) || v <= 0) {
      Unused(line, absl::StrCat(name, " is not a positive integer"));
      return true;
    }
    if (name == "seq_length") {
      if (log_seq_len_ != v) {  // each launch dumps its arguments: say it once
        if (o_.seq_len > 0 && o_.seq_len != v) {
          notices_.push_back(absl::StrCat("line ", lines_, ": the log's seq_length is ", v, ", --seq-len says ",
                                          o_.seq_len, "; counting with --seq-len"));
        } else if (o_.seq_len == 0 && o_.plan_seq_len > 0 && o_.plan_seq_len != v) {
          notices_.push_back(absl::StrCat("line ", lines_, ": the log's seq_length is ", v, ", the run's plan says ",
                                          o_.plan_seq_len, "; counting with the log's"));
        }
      }
      log_seq_len_ = v;
      Release();
    }
    return true;
  }

  // A launch's first times (print_datetime before the checkpoint loads): when it began.
  if (stamp && (absl::StartsWith(line, "[after megatron is initialized]") ||
                absl::StartsWith(line, "[after in-process setup") || absl::StartsWith(line, "[after in-job setup"))) {
    if (!launch_time_) launch_time_ = stamp;
    return true;
  }

  // An orderly exit (--exit-interval, --exit-duration-in-mins, the SIGTERM handler): the
  // job checkpointed and stopped on purpose.
  if (absl::StartsWith(line, "[exiting program") && std::regex_search(line, m, kMegatronExit)) {
    if (!active_) {
      Unused(line, "an exit before the log showed a launch");
      return true;
    }
    crash_.reset();        // an orderly exit: whatever was printed before did not kill it
    FlushPendingSave(at);  // the exit's own save, when no timer followed it
    v1::Event e = Base(at);
    e.set_attempt(attempt_);
    e.mutable_interruption()->set_cause("exit");
    e.mutable_interruption()->set_planned(true);
    e.mutable_interruption()->set_detail(m[1].str());
    Emit(std::move(e));
    active_ = false;
    return true;
  }

  // An evaluation: a span from the report it follows to this line. The line prints no time of
  // its own: a log followed live dates its end when it is read; a backfill, from the next
  // report's stamp less its iterations' time (Iteration).
  if (absl::StartsWith(line, kMegatronValidation)) {
    if (active_ && last_step_time_) {
      if (!o_.backfill && line_time && *line_time > *last_step_time_) {
        EvalSpan(*last_step_time_, *line_time);
      } else if (o_.backfill) {
        eval_from_ = last_step_time_;
      }
    }
    return true;
  }

  if (absl::StrContains(line, "checkpoint")) {
    // A restore: a new attempt, from the checkpoint it loaded.
    if (std::regex_search(line, m, kMegatronLoaded)) {
      const std::optional<int64_t> step = Int(m, 1);
      if (!step) {
        Unused(line, "the iteration is out of range");
      } else {
        Start(at, *step);
      }
      return true;
    }
    if (std::regex_search(line, m, kMegatronSaving)) {
      save_started_ = line_time;
      return true;
    }
    // A save done; an asynchronous one is counted when scheduled (training waits only for
    // that, and the state it saves is fixed then), its "successfully saved" line comes later.
    const bool scheduled = std::regex_search(line, m, kMegatronScheduled);
    if (scheduled || std::regex_search(line, m, kMegatronSaved)) {
      const std::optional<int64_t> step = Int(m, 1);
      if (!step) {
        Unused(line, "the iteration is out of range");
        return true;
      }
      if (!scheduled && async_scheduled_.erase(*step) > 0) return true;  // finalized
      if (!active_) {
        Unused(line, "a save before the log showed a launch (or after its exit)");
        return true;
      }
      if (scheduled) async_scheduled_.insert(*step);
      if (save_started_ && line_time) {
        Save(*line_time, *step, absl::ToDoubleSeconds(*line_time - *save_started_));
      } else {
        pending_save_ = *step;  // dated by the save timer or the gap around it
        saved_.insert(*step);
      }
      save_started_.reset();
      return true;
    }
  }

  // A compute timer across ranks: the slowest rank's time over the fastest's is a
  // straggler's signature. The block follows an iteration line; its spread goes with the
  // next iteration's report (it covers the interval before it).
  if (absl::StrContains(line, "times across ranks (ms):") && !absl::StrContains(line, "(min, max)")) {
    ranks_timer_.clear();
    return true;
  }
  if (std::regex_search(line, m, kMegatronRanksTimer)) {
    ranks_timer_ = m[1].str();
    ranks_low_ = 0;
    return true;
  }
  if (!ranks_timer_.empty() && absl::StrContains(line, "rank") && std::regex_search(line, m, kMegatronRankTime)) {
    // Each rank's compute time (forward-backward waits for the slowest rank, so it tells
    // less), and the spread as the (min, max) block gives it.
    const double t = Double(m, 2);
    const std::optional<int64_t> rank = Int(m, 1);
    if (rank && *rank <= INT32_MAX) {
      (ranks_timer_ == "forward-backward" ? rank_wait_ : rank_compute_)[static_cast<int32_t>(*rank)] += t;
    }
    if (ranks_timer_ != "forward-backward") {
      if (t > 0) ranks_low_ = ranks_low_ > 0 ? std::min(ranks_low_, t) : t;
      if (ranks_low_ > 0 && t >= ranks_low_) rank_spread_ = std::max(rank_spread_, std::min(100.0, t / ranks_low_ - 1));
    }
    return true;
  }
  if (!ranks_timer_.empty()) ranks_timer_.clear();  // the block has ended
  if (absl::StrContains(line, "-compute") || absl::StrContains(line, "forward-backward")) {
    if (std::regex_search(line, m, kMegatronRankTimer)) {
      const double low = Double(m, 2), high = Double(m, 3);
      if (low > 0 && high >= low) rank_spread_ = std::max(rank_spread_, std::min(100.0, high / low - 1));
      return true;
    }
  }

  // The save timer, "    save-checkpoint ....: (min, max)" in ms across ranks: the slowest
  // rank's time is what training waited.
  if (absl::StrContains(line, "save-checkpoint") && std::regex_search(line, m, kMegatronSaveTimer)) {
    const double blocking = (m[2].matched ? Double(m, 2) : Double(m, 3)) / 1000.0;
    if (pending_save_ && o_.backfill && eval_from_) {
      pending_save_blocking_ = blocking;  // after the evaluation: both dated at the next iteration
      return true;
    }
    if (pending_save_) {
      const absl::Time end = !o_.backfill ? at : last_step_time_ ? *last_step_time_ + absl::Seconds(blocking) : at;
      Save(end, *pending_save_, blocking);
      pending_save_.reset();
    }
    return true;
  }

  // Iterations.
  if (!absl::StrContains(line, "iteration") || !std::regex_search(line, m, kMegatronIteration)) return false;
  const std::optional<int64_t> step = Int(m, 1);
  if (!step) {
    Unused(line, "the iteration is out of range");
    return true;
  }
  std::optional<int64_t> tokens;
  std::string missing;
  const int64_t seq_len = o_.seq_len > 0 ? o_.seq_len : log_seq_len_ > 0 ? log_seq_len_ : o_.plan_seq_len;
  const int64_t per_step = o_.tokens_per_step > 0 ? o_.tokens_per_step : o_.plan_tokens_per_step;
  if (std::regex_search(line, m, kConsumedTokens)) {
    tokens = Int(m, 1);
  } else if (std::regex_search(line, m, kConsumedSamples)) {
    const std::optional<int64_t> samples = Int(m, 1);
    if (samples && seq_len > 0) {
      tokens = *samples * seq_len;
    } else if (per_step > 0 && !ramp_up_) {
      tokens = *step * per_step;
    } else if (per_step > 0) {
      missing =
          "the log ramps its batch up (rampup_batch_size), so steps x --tokens-per-step would overcount: "
          "pass --seq-len";
    } else {
      missing =
          "it counts samples, not tokens, and neither the log (no seq_length in its arguments dump), "
          "--seq-len, --plan nor the run's plan gives the sequence length: pass --seq-len";
    }
  } else if (per_step > 0 && !ramp_up_) {
    tokens = *step * per_step;
  } else {
    missing = "it shows neither consumed samples nor consumed tokens: pass --tokens-per-step";
  }
  // The tokens of one iteration at the batch this line shows (for a save between logged
  // iterations).
  int64_t step_tokens = 0;
  if (std::regex_search(line, m, kMegatronBatch) && seq_len > 0) step_tokens = Int(m, 1).value_or(0) * seq_len;
  double elapsed_ms = 0;
  if (std::regex_search(line, m, kElapsedMs)) elapsed_ms = Double(m, 1);
  if (!tokens) {
    const std::string why = absl::StrCat("iteration ", *step, ": ", missing);
    TokensUnknown(line, why, status);
    return true;
  }
  status = Iteration(at, *step, *tokens, elapsed_ms, step_tokens);
  return true;
}

bool LogEvents::FeedTorchtitan(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at,
                               absl::Status& status) {
  std::smatch m;
  // The last-step save (v0.2.2) prints no end: the next line with a time ends it.
  if (titan_last_save_ && stamp && !absl::StrContains(line, "Last step checkpoint completed")) {
    if (absl::StrContains(line, "- Starting job: ") || absl::StrContains(line, "Trainer is initialized with ")) {
      // The next launch, not the end of the save: the job died saving.
      notices_.push_back(absl::StrCat("line ", lines_, ": the last-step save of step ", *titan_last_save_,
                                      " did not finish before the next launch; not counted"));
    } else {
      Save(*stamp, *titan_last_save_, titan_save_started_ ? absl::ToDoubleSeconds(*stamp - *titan_save_started_) : 0);
    }
    titan_last_save_.reset();
    titan_save_started_.reset();
  }
  if (absl::StrContains(line, "validate step:")) return true;  // evaluation, not training
  // A launch's first lines (v0.2.2 "Starting job: ...", then the trainer's batch line):
  // when it began, before the checkpoint loads.
  if (absl::StrContains(line, "- Starting job: ") || absl::StrContains(line, "Trainer is initialized with ")) {
    if (!launch_time_) launch_time_ = at;
    if (absl::StrContains(line, "- Starting job: ")) return true;
  }

  bool known = false;
  // The batch: "... global batch size 64, gradient accumulation steps 1, sequence length 8192"
  // (v0.2.2; earlier on the "Training starts" line) or "524288 tokens per train step" (main).
  int64_t per_step = 0;
  if (std::regex_search(line, m, kTitanBatch)) {
    const std::optional<int64_t> batch = Int(m, 1), seq = Int(m, 2);
    if (batch && seq) per_step = *batch * *seq;
  } else if (std::regex_search(line, m, kTitanTokensPerStep)) {
    per_step = Int(m, 1).value_or(0);
  }
  if (per_step > 0) {
    known = true;
    if (log_tokens_per_step_ != per_step) {  // each launch prints it: say it once
      if (o_.tokens_per_step > 0 && o_.tokens_per_step != per_step) {
        notices_.push_back(absl::StrCat("line ", lines_, ": the log's batch is ", per_step,
                                        " tokens per step, --tokens-per-step says ", o_.tokens_per_step,
                                        "; counting with --tokens-per-step"));
      } else if (o_.tokens_per_step == 0 && o_.plan_tokens_per_step > 0 && o_.plan_tokens_per_step != per_step) {
        notices_.push_back(absl::StrCat("line ", lines_, ": the log's batch is ", per_step,
                                        " tokens per step, the run's plan says ", o_.plan_tokens_per_step,
                                        "; counting with the log's"));
      }
    }
    log_tokens_per_step_ = per_step;
    Release();
  }

  // A launch: "Training starts at step N" follows the load of step N-1 (or a fresh start).
  if (std::regex_search(line, m, kTitanStarts)) {
    const std::optional<int64_t> first = Int(m, 1);
    if (!first || *first < 1) {
      Unused(line, "the step is out of range");
      return true;
    }
    if (titan_loaded_ && *titan_loaded_ != *first - 1) {
      notices_.push_back(absl::StrCat("line ", lines_, ": loaded the checkpoint of step ", *titan_loaded_,
                                      " but starts at step ", *first));
    }
    titan_loaded_.reset();
    Start(at, *first - 1);
    return true;
  }
  if (known) return true;
  if (std::regex_search(line, m, kTitanLoading)) {
    titan_loaded_ = Int(m, 1);
    return true;
  }

  // Checkpoint saves. The step saved is the latest step logged (the save follows it).
  if (std::regex_search(line, m, kTitanSaving)) {
    titan_save_started_ = at;
    return true;
  }
  if (std::regex_search(line, m, kTitanLastSave)) {
    const std::optional<int64_t> step = Int(m, 1);
    if (!step || !active_) {
      Unused(line, !step ? "the step is out of range" : "a save before the log showed a launch");
      return true;
    }
    titan_last_save_ = *step;
    return true;
  }
  if (std::regex_search(line, m, kTitanLastSaved) && titan_last_save_) {
    Save(at, *titan_last_save_, Double(m, 1));
    titan_last_save_.reset();
    titan_save_started_.reset();
    return true;
  }
  if (std::regex_search(line, m, kTitanSaved)) {
    titan_save_started_.reset();
    if (!active_ || last_step_ < 0) {
      Unused(line, "a save before the log showed a step");
      return true;
    }
    Save(at, last_step_, Double(m, 1));
    return true;
  }

  // Steps.
  if (!std::regex_search(line, m, kTitanStep)) return false;
  const std::optional<int64_t> step = Int(m, 1);
  if (!step) {
    Unused(line, "the step is out of range");
    return true;
  }
  const int64_t per = o_.tokens_per_step > 0     ? o_.tokens_per_step
                      : log_tokens_per_step_ > 0 ? log_tokens_per_step_
                                                 : o_.plan_tokens_per_step;
  if (per <= 0) {
    const std::string why =
        absl::StrCat("step ", *step,
                     ": tokens per step unknown: the log did not print its batch (torchtitan prints it "
                     "once, when a job starts) and neither --tokens-per-step, --plan nor the run's plan gives it: pass "
                     "--tokens-per-step");
    TokensUnknown(line, why, status);
    return true;
  }
  status = Iteration(at, *step, *step * per, 0, per);
  return true;
}

bool LogEvents::FeedDeepSpeed(const std::string& line, const std::optional<absl::Time>&, absl::Time at,
                              absl::Status& status) {
  std::smatch m;
  // A launch: DeepSpeed's version line, or the engine's step=0 report at its init (before
  // the checkpoint loads); it begins with its first step.
  if (std::regex_search(line, m, kDsWorkers)) {
    std::vector<std::string> nodes;
    for (absl::string_view h : absl::StrSplit(m[1].str(), ',')) {
      if (const std::string host = ShortHost(std::string(h)); !host.empty()) nodes.push_back(host);
    }
    pending_nodes_ = std::move(nodes);
    return true;
  }
  if (std::regex_search(line, m, kDsInfo)) {
    launch_pending_ = true;
    pending_restored_ = 0;
    launch_time_ = at;
    return true;
  }
  if (std::regex_search(line, m, kDsBatch)) {
    ds_batch_ = Int(m, 1).value_or(0);
    if (TokensPerStep(ds_batch_) > 0) Release();  // countable only with the sequence length too
    return true;
  }
  if (std::regex_search(line, m, kDsLoading)) {
    pending_restored_ = Int(m, 1).value_or(0);  // every rank and file says the same
    return true;
  }
  if (std::regex_search(line, m, kDsSaving)) {
    ds_save_started_ = at;
    return true;
  }
  if (std::regex_search(line, m, kDsSaved)) {
    const std::string tag = m[1].str();
    std::smatch t;
    const std::optional<int64_t> step = std::regex_search(tag, t, kDsTagStep)
                                            ? Int(t, 1)
                                            : (last_step_ >= 0 ? std::optional(last_step_) : std::nullopt);
    if (!step || !active_) {
      Unused(line, !active_ ? "a save before the log showed a launch" : "a save tag without its step");
    } else {
      Save(at, *step, ds_save_started_ ? absl::ToDoubleSeconds(at - *ds_save_started_) : 0);
    }
    ds_save_started_.reset();
    return true;
  }
  if (!std::regex_search(line, m, kDsProgress)) return false;
  const std::optional<int64_t> step = Int(m, 1);
  if (!step) {
    Unused(line, "the step is out of range");
    return true;
  }
  if (*step == 0) {  // the engine's init: a launch
    if (!launch_pending_) {
      launch_pending_ = true;
      pending_restored_ = 0;
      launch_time_ = at;
    }
    return true;
  }
  const int64_t per = TokensPerStep(ds_batch_);
  if (per <= 0) {
    const std::string why = absl::StrCat(
        "step ", *step,
        ": tokens per step unknown: DeepSpeed prints its train_batch_size (in the configuration it dumps at start) "
        "but not the sequence length: pass --seq-len, --tokens-per-step or --plan");
    TokensUnknown(line, why, status);
    return true;
  }
  StartPending(at);
  status = Iteration(at, *step, *step * per, 0, per);
  return true;
}

bool LogEvents::FeedNemo(const std::string& line, const std::optional<absl::Time>&, absl::Time at,
                         absl::Status& status) {
  std::smatch m;
  // The straggler report's relative scores: each rank's performance against the best's, so
  // the highest printed over the lowest, minus 1, is the spread across ranks (the lowest and
  // highest are always printed). Its individual scores (each rank against its own best) are
  // not, and are read past.
  if (absl::StrContains(line, "GPU relative performance:")) {
    straggler_block_ = StragglerBlock::kRelative;
    block_low_ = block_high_ = 0;
    return true;
  }
  if (absl::StrContains(line, "GPU individual performance:")) {
    straggler_block_ = StragglerBlock::kIndividual;
    return true;
  }
  if (straggler_block_ != StragglerBlock::kNone) {
    if (std::regex_search(line, m, kStragglerRanks)) {
      worst_ranks_ = straggler_block_ == StragglerBlock::kRelative && m[1].str() == "Worst";
      return true;
    }
    if (std::regex_search(line, m, kStragglerScore)) {
      const double score = Double(m, 2);
      // The worst relative score names the slowest rank.
      if (const std::optional<int64_t> rank = Int(m, 1);
          worst_ranks_ && rank && *rank <= INT32_MAX && (slowest_rank_ < 0 || score < slowest_value_)) {
        slowest_rank_ = static_cast<int32_t>(*rank);
        slowest_value_ = score;
      }
      if (straggler_block_ == StragglerBlock::kRelative && score > 0) {
        block_low_ = block_low_ > 0 ? std::min(block_low_, score) : score;
        block_high_ = std::max(block_high_, score);
        rank_spread_ = std::max(rank_spread_, std::min(100.0, block_high_ / block_low_ - 1));
      }
      return true;
    }
    straggler_block_ = StragglerBlock::kNone;
    worst_ranks_ = false;
  }
  // The report's own first line (the message begins with a newline) and its timing line.
  if (absl::StrContains(line, " straggler_det_callback:")) return true;
  // A relaunch restores "...-step=K-..." (Lightning's 0-based step: K+1 steps done).
  if (std::regex_search(line, m, kNemoRestoring)) {
    const std::optional<int64_t> k = Int(m, 1);
    if (!launch_pending_) launch_time_ = at;
    launch_pending_ = true;
    pending_restored_ = k ? *k + 1 : 0;
    return true;
  }
  if (absl::StrContains(line, "Restored all states from the checkpoint")) return true;
  // Async saves are durable when finalized: "for step N" counts the steps done.
  if (std::regex_search(line, m, kNemoSaved)) {
    const std::optional<int64_t> step = Int(m, 1);
    if (!step || !active_) {
      Unused(line, !active_ ? "a save before the log showed a launch" : "the step is out of range");
    } else {
      Save(at, *step, 0);  // training waited only for the save to be scheduled
    }
    return true;
  }
  // The validation loop, followed live: a span from the training line it follows to its last
  // batch's line (or to its last line seen, when the next training line comes first). A
  // backfill cannot date its lines (NeMo prints no time) and counts it as training.
  if (absl::StrContains(line, "Validation: iteration") && std::regex_search(line, m, kNemoValidation)) {
    if (m[1].matched || !active_ || !last_step_time_ || o_.backfill) return true;  // the sanity check: startup
    if (!nemo_eval_open_) {
      v1::Event start = Base(*last_step_time_);
      start.set_attempt(attempt_);
      start.mutable_span_started()->set_kind("eval");
      Emit(std::move(start));
      nemo_eval_open_ = true;
    }
    nemo_eval_last_ = std::max(at, *last_step_time_);
    if (m[2].str() == m[3].str()) CloseNemoEval();  // its last batch
    return true;
  }
  if (!std::regex_search(line, m, kNemoStep)) return false;
  CloseNemoEval();
  std::smatch g;
  if (!std::regex_search(line, g, kNemoGlobalStep)) {
    Unused(line, "a training line without global_step");
    return true;
  }
  const std::optional<int64_t> index = Int(g, 1);
  if (!index) {
    Unused(line, "the step is out of range");
    return true;
  }
  const int64_t step = *index + 1;  // global_step is the 0-based index of this step
  std::smatch b, c;
  const int64_t batch = std::regex_search(line, b, kNemoBatch) ? Int(b, 1).value_or(0) : 0;
  const int64_t per = TokensPerStep(batch);
  const int64_t seq = o_.seq_len > 0 ? o_.seq_len : o_.plan_seq_len;
  const std::optional<int64_t> consumed =
      std::regex_search(line, c, kNemoConsumed) ? Int(c, 1) : std::optional<int64_t>();
  if (per <= 0) {
    const std::string why =
        absl::StrCat("step ", step,
                     ": tokens per step unknown: NeMo prints the global batch size but not the sequence length: pass "
                     "--seq-len, --tokens-per-step or --plan");
    TokensUnknown(line, why, status);
    return true;
  }
  StartPending(at);
  // The samples NeMo counted (absent on a launch's first step), else the steps times the
  // batch; in tokens with the sequence length (or the tokens per step given).
  const int64_t tokens = consumed && seq > 0 && o_.tokens_per_step == 0 ? *consumed * seq : step * per;
  status = Iteration(at, step, tokens, 0, per);
  return true;
}

}  // namespace flightplan::cli
