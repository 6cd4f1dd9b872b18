// Training logs to events: Megatron-LM (and Megatron-DeepSpeed) and torchtitan log lines
// turned into the events of docs/contract.md §4 (the `flightplan tail` converter). No I/O: lines
// in, events out; the caller reads the file and sends. Not thread-safe (one per log).
//
// The lines it reads are those the projects print, from their own source (the fixtures in
// tests/logs name file and version):
//   Megatron-LM, megatron/training/{training,checkpointing,arguments}.py, core_v0.5.0 to
//   core_v0.19.0 and main (0.20.0): the iteration line (consumed samples, global batch
//   size), print_datetime lines, `[saving|successfully saved] checkpoint at|from iteration`
//   (with or without their timestamp and `[ t i/T, p j/P ]`), async saves (counted when
//   scheduled: training waits only for that, and the state saved is fixed then), `successfully loaded checkpoint ... at
//   iteration N`, the save-checkpoint timer, the compute timers across ranks (megatron/core/timers.py's "(min,
//   max) time across ranks (ms)": the rank spread), the arguments dump (seq_length, global_batch_size,
//   rampup_batch_size) and the orderly exits (`[exiting program ...]`). torchtitan,
//   torchtitan/{train.py,trainer.py,components/metrics.py,components/checkpoint.py, components/checkpointer/dcp.py},
//   v0.2.2 and main: the step line (colours stripped), `Trainer is initialized with ...`, `Training starts at step N`,
//   the save/staging lines and the last-step save. The lines a dying job prints (PyTorch, NCCL, the driver, Slurm):
//   cli/crash_lines.h.
#ifndef FLIGHTPLAN_CLI_LOG_EVENTS_H_
#define FLIGHTPLAN_CLI_LOG_EVENTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/crash_lines.h"
#include "flightplan/v1/event.pb.h"

namespace flightplan::cli {

enum class LogFormat { kMegatron, kTorchtitan, kDeepSpeed, kNemo };

struct LogOptions {
  LogFormat format = LogFormat::kMegatron;
  std::string run;
  // Given by the user (--seq-len, --tokens-per-step, or --plan): they win over the log.
  // seq_len: tokens per sequence, for logs that count samples (Megatron). tokens_per_step:
  // tokens per optimizer step, for logs that count neither (torchtitan).
  int64_t seq_len = 0;
  int64_t tokens_per_step = 0;
  // From the run's plan in the daemon: used when neither the user nor the log gives them.
  int64_t plan_seq_len = 0;
  int64_t plan_tokens_per_step = 0;
  // Zone of timestamps printed without one.
  absl::TimeZone timezone = absl::UTCTimeZone();
  // Reading a finished log from its start: lines without a timestamp take the nearest
  // earlier timestamped line's time instead of the time they were read, and those before
  // the log's first timestamp (a per-job file whose launch lines carry none) the first
  // one that follows, within kMaxUndatedLines; never the time they were read.
  bool backfill = false;
  // Numbers a launch the log shows at `at`; `local` is the latest number this converter
  // gave. `flightplan tail` asks the daemon: the attempt launched at that very instant
  // (the same launch, tailed again), else one past the run's latest, so that per-job log
  // files and restarted tailers continue one run. Unset: the log counts from 1.
  std::function<uint32_t(absl::Time at, uint32_t local)> number_launch;
  // The scheduler's name for the launch the log shows while it is followed live (not read
  // back from the file's start): "slurm:JOB.RESTARTS", from SLURM_JOB_ID and
  // SLURM_RESTART_COUNT when the tail runs inside the job, as `flightplan slurm` names it.
  // The first such launch's job_started carries it, so the two reports are one attempt
  // (docs/contract.md §4); a later one in the same job (an elastic restart) is its own.
  std::string launch;
  // The nodes of launches followed live, in rank order (--nodes, or SLURM_JOB_NODELIST when
  // the tail runs inside the job); a launch whose log lists its nodes (DeepSpeed's runner)
  // takes those instead.
  std::vector<std::string> nodes;
  // The plan's GPUs per node (fleet.gpus / fleet.nodes): a crash that names ranks (the
  // monitored barrier) blames their nodes, rank r on the launch's nodes[r / gpus_per_node].
  uint32_t gpus_per_node = 0;
  // Following a live log mid-attempt: its iterations continue this attempt (no launch is
  // invented for the first one seen); 0 = none.
  uint32_t continue_attempt = 0;
  int64_t continue_step = -1;
};

// A line recognised but not turned into events, and why.
struct UnusedLine {
  uint64_t line = 0;
  std::string text;
  std::string why;
};

class LogEvents {
 public:
  explicit LogEvents(LogOptions options);

  // One line (without its newline), read at `read_time`; appends the events it implies.
  //
  // Until the log has shown how to count tokens (known from the options, the log's
  // arguments dump, or a first iteration line that converts), events are held back rather
  // than appended, so that a log whose tokens cannot be counted sends nothing: its first
  // iteration line returns FAILED_PRECONDITION naming what to pass, and the caller stops.
  absl::Status Feed(const std::string& line, absl::Time read_time, std::vector<v1::Event>& out);

  // The end of a finished log: appends what is still held (a log without iterations).
  void Finish(std::vector<v1::Event>& out);
  // Nothing new was read by `now`: a death the log told of (a crash line, kCrashSettle ago)
  // is sent, without waiting for the next launch (which may be in another file).
  void Idle(absl::Time now, std::vector<v1::Event>& out);
  static constexpr absl::Duration kCrashSettle = absl::Seconds(30);
  // A backfill that goes on following the file has read what it held: lines that wait for
  // a first timestamp are given up (said), and new lines are live (dated when read when
  // they carry no timestamp).
  void CaughtUp(std::vector<v1::Event>& out);

  uint32_t attempt() const { return attempt_; }
  uint64_t lines() const { return lines_; }
  // Lines recognised but not used: the count, and the first kMaxUnusedKept of them.
  static constexpr size_t kMaxUnusedKept = 5;
  // A backfill waits this many lines at most for the log's first timestamp.
  static constexpr size_t kMaxUndatedLines = 10000;
  uint64_t unused() const { return unused_count_; }
  // Lines the format's reader recognised (used or deliberately read past: an iteration, a
  // save, a launch, a crash, its arguments dump). None within a log's first lines means the
  // log is not in that format (the tail says so and stops).
  uint64_t recognised() const { return recognised_; }
  const std::vector<UnusedLine>& unused_lines() const { return unused_; }
  // Things worth saying that are not errors (the log and the plan disagree on seq_length);
  // taken by the caller.
  std::vector<std::string> TakeNotices() { return std::exchange(notices_, {}); }

 private:
  absl::Time When(const std::optional<absl::Time>& line_time, absl::Time read_time) const;
  absl::Status FeedLine(const std::string& raw, absl::Time read_time);
  // The lines of a backfill before its first timestamp, given up: said, not dated.
  void DropUndated(const char* why);
  void Start(absl::Time at, int64_t restored);
  // The launch Start held back (undated_launch_), at `at`: numbered and sent.
  void DateLaunch(absl::Time at);
  v1::Event Base(absl::Time at) const;
  void Emit(v1::Event e);
  void Save(absl::Time at, int64_t step, double blocking);
  void FlushPendingSave(std::optional<absl::Time> bound);
  // An evaluation from `from` to `to`: a span of kind eval, in the current attempt.
  void EvalSpan(absl::Time from, absl::Time to);
  // NeMo's validation loop, open since the last training line: closed at its last line.
  void CloseNemoEval();
  // The attempt's death, from the lines that told of it: an interruption with their cause.
  void FlushCrash();
  void Unused(const std::string& line, std::string why);
  // Appends what was held back: the tokens can be counted.
  void Release();
  // step_tokens: the tokens of one iteration at the line's batch (0: unknown).
  absl::Status Iteration(absl::Time at, int64_t step, int64_t tokens, double elapsed_ms, int64_t step_tokens);
  bool FeedMegatron(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at,
                    absl::Status& status);
  bool FeedDeepSpeed(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at,
                     absl::Status& status);
  bool FeedNemo(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at, absl::Status& status);
  // Tokens per step of a format that counts neither tokens nor sequences: --tokens-per-step,
  // else `sequences` (the log's batch, 0 when unknown) times --seq-len or the plan's, else
  // the plan's tokens per step; 0 when none says. `why` names what to pass.
  int64_t TokensPerStep(int64_t sequences) const;
  // A step whose tokens cannot be counted: the whole tail's refusal (FAILED_PRECONDITION
  // saying what to pass) before any line was released, else this line unused.
  void TokensUnknown(const std::string& line, const std::string& why, absl::Status& status);
  // The launch a DeepSpeed or NeMo log showed (or the first step of a log that showed none)
  // begins with its first step.
  void StartPending(absl::Time at);
  bool FeedTorchtitan(const std::string& line, const std::optional<absl::Time>& stamp, absl::Time at,
                      absl::Status& status);

  LogOptions o_;
  uint64_t lines_ = 0;
  uint32_t attempt_ = 0;
  bool active_ = false;
  int64_t last_step_ = -1;
  std::optional<absl::Time> last_step_time_;
  int64_t last_tokens_ = -1;      // of the last iteration reported
  int64_t last_step_tokens_ = 0;  // one iteration's tokens at its batch
  // Megatron's compute timers across ranks, or a straggler report's relative scores (NeMo),
  // since the last iteration line: the widest spread (slowest over fastest, minus 1), for
  // the next iteration's report; 0 = none.
  double rank_spread_ = 0;
  enum class StragglerBlock { kNone, kRelative, kIndividual } straggler_block_ = StragglerBlock::kNone;
  double block_low_ = 0, block_high_ = 0;  // the relative block's scores so far
  // The rank the log names slowest since the last iteration line (Megatron's per-rank
  // timers, the straggler report's worst relative score), for the next report; -1 = none.
  int32_t slowest_rank_ = -1;
  double slowest_value_ = 0;                            // its score (NeMo)
  std::map<int32_t, double> rank_compute_, rank_wait_;  // Megatron: compute and forward-backward ms per rank
  bool worst_ranks_ = false;                            // inside the straggler report's "Worst performing" list
  std::string ranks_timer_;                             // Megatron's per-rank block: the timer being listed
  double ranks_low_ = 0;                                // ... its fastest rank's time
  // The next launch's nodes, from a line that lists them (DeepSpeed's runner).
  std::vector<std::string> pending_nodes_;
  std::vector<std::string> launch_nodes_;  // the current launch's, as its job_started said
  // Lines left of torchrun's "Root Cause (first observed failure):" entry, whose host names
  // the node of the pending crash.
  int root_cause_lines_ = 0;
  std::optional<absl::Time> last_emitted_;
  std::optional<absl::Time> last_stamp_;   // the latest timestamp seen on any line
  std::optional<absl::Time> launch_time_;  // a launch began (print_datetime, "Starting job")
  // A backfill's launch seen on a line without a time, none of its lines dated before it:
  // the checkpoint it restores, until the first timestamp after it dates it (DateLaunch).
  std::optional<int64_t> undated_launch_;
  bool current_stamped_ = false;  // the line being fed has a timestamp of its own
  uint64_t recognised_ = 0;
  std::set<int64_t> saved_;  // checkpoint steps
  // The events of this Feed, and those held until the token basis is known.
  std::vector<v1::Event>* out_ = nullptr;
  const std::string* current_ = nullptr;  // the line being fed
  std::vector<v1::Event> held_;
  // A backfill's lines before its first timestamp (line number, text), fed once it comes.
  std::vector<std::pair<uint64_t, std::string>> undated_;
  bool releasing_ = false;
  // From the log: Megatron's arguments dump, torchtitan's batch line.
  int64_t log_seq_len_ = 0;
  int64_t log_tokens_per_step_ = 0;
  bool ramp_up_ = false;  // Megatron's rampup_batch_size is set
  // Megatron saves: started (with the line's time when it had one), done but not yet dated
  // (no timestamps: dated by the save timer or the gap to the next iteration), and
  // asynchronous ones scheduled (counted then) whose "successfully saved" is still to come.
  std::optional<absl::Time> save_started_;
  std::optional<int64_t> pending_save_;
  // Its save timer, when the save follows an evaluation a backfill has not dated yet: both
  // are dated at the next iteration (the save after the evaluation).
  std::optional<double> pending_save_blocking_;
  // A backfill's Megatron validation block, undated: the evaluation began at this iteration
  // report and ends where the next one's stamp, less its iterations' own time (and a save's),
  // says.
  std::optional<absl::Time> eval_from_;
  // NeMo's validation loop followed live: open (its start sent), and its latest line's time.
  bool nemo_eval_open_ = false;
  absl::Time nemo_eval_last_ = absl::UnixEpoch();
  std::set<int64_t> async_scheduled_;
  // The saves this log timed (their blocking seconds), for one whose length it does not tell.
  double save_blocking_sum_ = 0;
  int save_blocking_count_ = 0;
  bool estimated_save_ = false;
  // torchtitan: a save begun (its time), and the last-step save awaiting its end.
  std::optional<absl::Time> titan_save_started_;
  std::optional<int64_t> titan_last_save_;
  std::optional<int64_t> titan_loaded_;  // the step of the checkpoint loaded, until "Training starts"
  // DeepSpeed and NeMo: a launch seen (engine init, a restore) before its first step, and
  // the step it resumes from; DeepSpeed's train_batch_size and save in progress.
  bool launch_pending_ = false;
  int64_t pending_restored_ = 0;
  int64_t ds_batch_ = 0;
  std::optional<absl::Time> ds_save_started_;
  // The lines of a dying attempt (ClassifyCrashLine): the cause they name (the highest rank
  // wins), when the first was printed and read. Sent at the next launch, the log's end or
  // kCrashSettle of quiet; dropped if iterations go on (it was not fatal).
  std::optional<Crash> crash_;
  absl::Time crash_time_, crash_read_;
  uint64_t crash_line_ = 0;
  uint64_t unused_count_ = 0;
  std::vector<UnusedLine> unused_;
  std::vector<std::string> notices_;
};

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_LOG_EVENTS_H_
