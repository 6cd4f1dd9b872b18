#include "cli/log_events.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "proto/plan_convert.h"

namespace flightplan {
namespace {

// Megatron prints "[2024-05-01 12:00:01]" (training_log) and "datetime: 2024-05-01 12:00:01";
// torchtitan "[rank0]:2024-05-01 12:00:01,123 - root - INFO - ".
const std::regex kStamp(R"((\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:[,.](\d{3}))?)");
const std::regex kMegatronIteration(R"(iteration\s+(\d+)\s*/\s*\d+)");
const std::regex kConsumedTokens(R"(consumed tokens:\s*(\d+))");
const std::regex kConsumedSamples(R"(consumed samples:\s*(\d+))");
const std::regex kElapsedMs(R"(elapsed time per iteration \(ms\):\s*([\d.]+))");
const std::regex kMegatronSaving(R"(^\s*(?:\[[^\]]*\])?\s*saving checkpoint at iteration\s+(\d+))");
const std::regex kMegatronSaved(R"(successfully saved checkpoint at iteration\s+(\d+))");
const std::regex kMegatronLoaded(R"(successfully loaded checkpoint from .* at iteration:?\s*(\d+))");
const std::regex kMegatronSeqLen(R"(^\s*seq_length\s*\.+\s*(\d+)\s*$)");
const std::regex kTitanStep(R"(\bstep:\s*(\d+)\s+loss:)");
const std::regex kTitanBatch(R"(global batch size (\d+), sequence length (\d+))");
const std::regex kTitanSaved(R"(Finished saving the checkpoint.*in\s+([\d.]+)\s+seconds)");
const std::regex kTitanLoading(R"(Loading the checkpoint at step\s+(\d+))");

std::optional<absl::Time> Stamp(const std::string& line, absl::TimeZone tz) {
  std::smatch m;
  if (!std::regex_search(line, m, kStamp)) return std::nullopt;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%d %H:%M:%S", m[1].str() + " " + m[2].str(), tz, &t, &err)) {
    return std::nullopt;
  }
  if (m[3].matched) t += absl::Milliseconds(std::stoi(m[3].str()));
  return t;
}

int64_t Int(const std::smatch& m, int i) { return std::stoll(m[i].str()); }

}  // namespace

absl::Time LogEvents::When(const std::optional<absl::Time>& line_time, absl::Time read_time) const {
  if (line_time) return *line_time;
  if (o_.backfill && last_stamp_) return *last_stamp_;
  return read_time;
}

v1::Event LogEvents::Base(absl::Time at) const {
  v1::Event e;
  e.set_run(o_.run);
  *e.mutable_time() = TimeToProto(at);
  return e;
}

void LogEvents::Start(absl::Time at, int64_t restored, std::vector<v1::Event>& out) {
  attempt_ = o_.number_launch ? o_.number_launch(at, attempt_) : attempt_ + 1;
  v1::Event e = Base(at);
  e.mutable_job_started()->set_attempt(attempt_);
  e.mutable_job_started()->set_restored_step(restored);
  out.push_back(e);
  active_ = true;
  last_step_ = restored;
  last_step_time_ = at;
  pending_save_.reset();
  save_started_.reset();
}

absl::Status LogEvents::Feed(const std::string& line, absl::Time read_time, std::vector<v1::Event>& out) {
  ++lines_;
  const std::optional<absl::Time> stamp = Stamp(line, o_.timezone);
  const absl::Time at = When(stamp, read_time);
  if (stamp) last_stamp_ = stamp;
  std::smatch m;
  const bool megatron = o_.format == LogFormat::kMegatron;

  // Configuration lines.
  if (megatron && o_.seq_len == 0 && std::regex_search(line, m, kMegatronSeqLen)) {
    o_.seq_len = Int(m, 1);
    return absl::OkStatus();
  }
  if (!megatron && o_.tokens_per_step == 0 && std::regex_search(line, m, kTitanBatch)) {
    o_.tokens_per_step = Int(m, 1) * Int(m, 2);
    return absl::OkStatus();
  }

  // A restore: a new attempt, from the checkpoint it loaded.
  if ((megatron && std::regex_search(line, m, kMegatronLoaded)) ||
      (!megatron && std::regex_search(line, m, kTitanLoading))) {
    Start(at, Int(m, 1), out);
    return absl::OkStatus();
  }

  // Checkpoint saves.
  if (megatron && std::regex_search(line, m, kMegatronSaving)) {
    save_started_ = stamp;
    return absl::OkStatus();
  }
  if (megatron && std::regex_search(line, m, kMegatronSaved)) {
    const int64_t step = Int(m, 1);
    saved_.insert(step);
    if (!active_) return absl::OkStatus();
    if (save_started_ && stamp) {
      v1::Event e = Base(*stamp);
      e.set_attempt(attempt_);
      e.mutable_checkpoint_saved()->set_step(step);
      e.mutable_checkpoint_saved()->set_blocking_seconds(absl::ToDoubleSeconds(*stamp - *save_started_));
      out.push_back(e);
    } else {
      pending_save_ = step;  // dated by the gap around it, at the next iteration
    }
    save_started_.reset();
    return absl::OkStatus();
  }
  if (!megatron && std::regex_search(line, m, kTitanSaved)) {
    if (!active_ || last_step_ < 0) return absl::OkStatus();
    saved_.insert(last_step_);
    v1::Event e = Base(at);
    e.set_attempt(attempt_);
    e.mutable_checkpoint_saved()->set_step(last_step_);
    e.mutable_checkpoint_saved()->set_blocking_seconds(std::stod(m[1].str()));
    out.push_back(e);
    return absl::OkStatus();
  }

  // Iterations.
  int64_t step = -1;
  std::optional<int64_t> tokens;
  double elapsed_ms = 0;
  if (megatron && std::regex_search(line, m, kMegatronIteration)) {
    step = Int(m, 1);
    if (std::regex_search(line, m, kConsumedTokens)) {
      tokens = Int(m, 1);
    } else if (std::regex_search(line, m, kConsumedSamples) && o_.seq_len > 0) {
      tokens = Int(m, 1) * o_.seq_len;
    }
    if (std::regex_search(line, m, kElapsedMs)) elapsed_ms = std::stod(m[1].str());
    if (!tokens && o_.tokens_per_step > 0) tokens = step * o_.tokens_per_step;
    if (!tokens) {
      return absl::FailedPreconditionError(absl::StrCat(
          "line ", lines_, ": iteration ", step, " counts samples, not tokens: pass --seq-len "
          "(or --plan), or log consumed tokens"));
    }
  } else if (!megatron && std::regex_search(line, m, kTitanStep)) {
    step = Int(m, 1);
    if (o_.tokens_per_step <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "line ", lines_, ": step ", step, ": tokens per step unknown: pass --tokens-per-step "
          "(or --plan); torchtitan prints it only at the start of a job"));
    }
    tokens = step * o_.tokens_per_step;
  } else {
    return absl::OkStatus();
  }

  if (!active_) {
    Start(at, 0, out);
  } else if (step <= last_step_) {
    // Iterations started over without a load line: a restart from the newest checkpoint
    // before this step (or from scratch).
    int64_t restored = 0;
    for (int64_t s : saved_) {
      if (s < step) restored = s;
    }
    Start(at, restored, out);
  }
  if (pending_save_ && last_step_time_) {
    // Gap between the iteration lines around the save, less the iterations' own time.
    const double gap = absl::ToDoubleSeconds(at - *last_step_time_);
    const double work = elapsed_ms / 1000.0 * static_cast<double>(std::max<int64_t>(1, step - last_step_));
    const double blocking = std::clamp(gap - work, 0.0, gap);
    v1::Event e = Base(*last_step_time_ + absl::Seconds(blocking));
    e.set_attempt(attempt_);
    e.mutable_checkpoint_saved()->set_step(*pending_save_);
    e.mutable_checkpoint_saved()->set_blocking_seconds(blocking);
    out.push_back(e);
    pending_save_.reset();
  }
  v1::Event e = Base(at);
  e.set_attempt(attempt_);
  e.mutable_steps()->set_step(step);
  e.mutable_steps()->set_tokens(*tokens);
  out.push_back(e);
  last_step_ = step;
  last_step_time_ = at;
  return absl::OkStatus();
}

}  // namespace flightplan
