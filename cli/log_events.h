// Training logs to events: Megatron-LM / Megatron-DeepSpeed and torchtitan log lines turned
// into the events of DESIGN.md §4 (the `flightplan tail` converter). No I/O: lines in,
// events out; the caller reads the file and sends. Not thread-safe (one per log).
#ifndef FLIGHTPLAN_CLI_LOG_EVENTS_H_
#define FLIGHTPLAN_CLI_LOG_EVENTS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "flightplan/v1/event.pb.h"

namespace flightplan {

enum class LogFormat { kMegatron, kTorchtitan };

struct LogOptions {
  LogFormat format = LogFormat::kMegatron;
  std::string run;
  // Tokens per sequence, for logs that count samples (Megatron). 0: from the log's own
  // argument dump (`seq_length ....... 8192`) if it has one.
  int64_t seq_len = 0;
  // Tokens per optimizer step, for logs that count neither tokens nor samples
  // (torchtitan). 0: from the log (`global batch size 16, sequence length 8192`).
  int64_t tokens_per_step = 0;
  // Zone of timestamps printed without one.
  absl::TimeZone timezone = absl::UTCTimeZone();
  // Reading a finished log from its start: lines without a timestamp take the nearest
  // earlier timestamped line's time instead of the time they were read.
  bool backfill = false;
  // Numbers a launch the log shows at `at`; `local` is the latest number this converter
  // gave. `flightplan tail` asks the daemon: the attempt launched at that very instant
  // (the same launch, tailed again), else one past the run's latest, so that per-job log
  // files and restarted tailers continue one run. Unset: the log counts from 1.
  std::function<uint32_t(absl::Time at, uint32_t local)> number_launch;
  // Following a live log mid-attempt: its iterations continue this attempt (no launch is
  // invented for the first one seen); 0 = none.
  uint32_t continue_attempt = 0;
  int64_t continue_step = -1;
};

class LogEvents {
 public:
  explicit LogEvents(LogOptions options) : o_(std::move(options)) {
    if (o_.continue_attempt > 0) {
      attempt_ = o_.continue_attempt;
      active_ = true;
      last_step_ = o_.continue_step;
    }
  }

  // One line (without its newline), read at `read_time`; appends the events it implies.
  // FAILED_PRECONDITION when an iteration line cannot be turned into tokens (say which
  // flag is missing); the line is then skipped.
  absl::Status Feed(const std::string& line, absl::Time read_time, std::vector<v1::Event>& out);

  uint32_t attempt() const { return attempt_; }
  uint64_t lines() const { return lines_; }

 private:
  absl::Time When(const std::optional<absl::Time>& line_time, absl::Time read_time) const;
  void Start(absl::Time at, int64_t restored, std::vector<v1::Event>& out);
  v1::Event Base(absl::Time at) const;

  LogOptions o_;
  uint64_t lines_ = 0;
  uint32_t attempt_ = 0;
  bool active_ = false;
  int64_t last_step_ = -1;
  std::optional<absl::Time> last_step_time_;
  std::optional<absl::Time> last_stamp_;    // the latest timestamp seen on any line
  std::set<int64_t> saved_;                 // checkpoint steps
  std::optional<absl::Time> save_started_;  // Megatron "saving checkpoint" with a timestamp
  std::optional<int64_t> pending_save_;     // saved without timestamps: dated at the next step
};

}  // namespace flightplan

#endif  // FLIGHTPLAN_CLI_LOG_EVENTS_H_
