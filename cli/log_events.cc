#include "cli/log_events.h"

#include <algorithm>
#include <cstdint>
#include <regex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/crash_lines.h"
#include "cli/log_events_internal.h"
#include "convert/plan_convert.h"

namespace flightplan::cli {
namespace {

using log_internal::Double;  // NOLINT
using log_internal::Int;     // NOLINT

// Megatron prints " [2026-08-22 15:22:22.123456] iteration ..." (microseconds since
// core_v0.16.0), "[...] datetime: 2026-08-22 15:22:22.123456 "; torchtitan's logger
// "[titan] 2026-08-22 15:22:22,123 - root - INFO - ".
const std::regex kStamp(R"((\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:[,.](\d{1,6}))?)");
const std::regex kAnsi("\x1b\\[[0-9;]*m");

// torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors/__init__.py
// _FAILURE_FORMAT_TEMPLATE, 1.10 to 2.5): under "Root Cause (first observed failure):" an
// entry "[${idx}]:" with "  host      : ${hostname}" (socket.getfqdn()).
const std::regex kTorchrunHost(R"(^\s*host\s+: (\S+)\s*$)");

std::optional<absl::Time> Stamp(const std::string& line, absl::TimeZone tz) {
  std::smatch m;
  if (!std::regex_search(line, m, kStamp)) return std::nullopt;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%d %H:%M:%S", m[1].str() + " " + m[2].str(), tz, &t, &err)) {
    return std::nullopt;
  }
  if (m[3].matched) {
    std::string micros = m[3].str();
    micros.resize(6, '0');
    t += absl::Microseconds(std::stoi(micros));
  }
  return t;
}

}  // namespace

LogEvents::LogEvents(LogOptions options) : o_(std::move(options)) {
  if (o_.continue_attempt > 0) {
    attempt_ = o_.continue_attempt;
    active_ = true;
    last_step_ = o_.continue_step;
  }
  // Tokens countable from the start: nothing to hold back.
  releasing_ = o_.format == LogFormat::kMegatron ? (o_.seq_len > 0 || o_.plan_seq_len > 0)
                                                 : (o_.tokens_per_step > 0 || o_.plan_tokens_per_step > 0);
  if (o_.format == LogFormat::kNemo)
    releasing_ = releasing_ || o_.seq_len > 0 || o_.plan_seq_len > 0;  // the batch is on each line
}

absl::Time LogEvents::When(const std::optional<absl::Time>& line_time, absl::Time read_time) const {
  if (line_time) return *line_time;
  if (o_.backfill && last_stamp_) return *last_stamp_;
  return read_time;
}

v1::Event LogEvents::Base(absl::Time at) const {
  v1::Event e;
  e.set_run(o_.run);
  *e.mutable_time() = convert::TimeToProto(at);
  return e;
}

void LogEvents::Emit(v1::Event e) {
  // An event of the launch held back: the launch first, at this event's time at the latest.
  if (undated_launch_ && !e.has_job_started()) {
    const uint32_t before = attempt_;
    DateLaunch(convert::TimeFromProto(e.time()));
    if (e.attempt() == before && !e.has_interruption()) e.set_attempt(attempt_);  // it was numbered just now
  }
  // Never before the previous event: lines without a time of their own (a backfill of a log
  // that prints none) must not send the daemon back in time.
  const absl::Time t = convert::TimeFromProto(e.time());
  if (last_emitted_ && t < *last_emitted_) *e.mutable_time() = convert::TimeToProto(*last_emitted_);
  last_emitted_ = std::max(t, last_emitted_.value_or(t));
  if (releasing_) {
    out_->push_back(std::move(e));
  } else {
    held_.push_back(std::move(e));
  }
}

void LogEvents::Release() {
  if (releasing_) return;
  releasing_ = true;
  for (v1::Event& e : held_) out_->push_back(std::move(e));
  held_.clear();
}

void LogEvents::Unused(const std::string& line, std::string why) {
  ++unused_count_;
  if (unused_.size() < kMaxUnusedKept) {
    unused_.push_back(UnusedLine{lines_, line.size() > 240 ? line.substr(0, 240) + "..." : line, std::move(why)});
  }
}

void LogEvents::FlushCrash() {
  if (!crash_) return;
  const Crash c = *std::exchange(crash_, std::nullopt);
  if (!active_) return;
  FlushPendingSave(crash_time_);
  v1::Event e = Base(crash_time_);
  e.set_attempt(attempt_);
  e.mutable_interruption()->set_cause(c.cause);
  e.mutable_interruption()->set_planned(c.planned);
  e.mutable_interruption()->set_detail(absl::StrCat(c.detail, " (line ", crash_line_, ")"));
  std::vector<std::string> nodes = c.nodes;
  if (nodes.empty() && o_.gpus_per_node > 0) {  // the ranks it names, on the launch's nodes
    for (const int32_t rank : c.ranks) {
      const size_t i = static_cast<size_t>(rank) / o_.gpus_per_node;
      if (i < launch_nodes_.size() && std::find(nodes.begin(), nodes.end(), launch_nodes_[i]) == nodes.end()) {
        nodes.push_back(launch_nodes_[i]);
      }
    }
  }
  for (const std::string& n : nodes) e.mutable_interruption()->add_nodes(n);
  Emit(std::move(e));
  active_ = false;
}

void LogEvents::Idle(absl::Time now, std::vector<v1::Event>& out) {
  if (!crash_ || now - crash_read_ < kCrashSettle) return;
  out_ = &out;
  FlushCrash();
}

void LogEvents::Start(absl::Time at, int64_t restored) {
  // Lines without a time (one rule, docs/clients.md "Lines without a time"): in a backfill
  // they take the last time before them, but a launch whose lines so far carry none would
  // borrow the previous attempt's last time and book the whole gap as its startup, where a
  // per-job file cut at this launch (its lines waiting for the file's first timestamp)
  // books it as downtime. So such a launch takes the first timestamp after it, in both.
  const bool undated = o_.backfill && !current_stamped_ && !launch_time_ && last_stamp_.has_value();
  if (launch_time_ && *launch_time_ <= at) at = *launch_time_;
  launch_time_.reset();
  CloseNemoEval();
  FlushCrash();
  FlushPendingSave(at);
  if (undated_launch_) DateLaunch(at);  // two launches with no time between: the first at the second's
  active_ = true;
  last_step_ = restored;
  last_step_time_ = at;
  pending_save_.reset();
  pending_save_blocking_.reset();
  eval_from_.reset();
  nemo_eval_open_ = false;
  save_started_.reset();
  async_scheduled_.clear();
  titan_save_started_.reset();
  titan_last_save_.reset();
  undated_launch_ = restored;
  if (!undated) DateLaunch(at);
}

void LogEvents::DateLaunch(absl::Time at) {
  const int64_t restored = *std::exchange(undated_launch_, std::nullopt);
  attempt_ = o_.number_launch ? o_.number_launch(at, attempt_) : attempt_ + 1;
  last_step_time_ = std::max(last_step_time_.value_or(at), at);
  v1::Event e = Base(at);
  e.mutable_job_started()->set_attempt(attempt_);
  e.mutable_job_started()->set_restored_step(restored);
  const std::vector<std::string> nodes = !pending_nodes_.empty() ? std::exchange(pending_nodes_, {})
                                         : o_.backfill           ? std::vector<std::string>{}
                                                                 : o_.nodes;
  for (const std::string& n : nodes) e.mutable_job_started()->add_nodes(n);
  launch_nodes_ = nodes;
  if (!o_.backfill && !o_.launch.empty()) {
    // The first launch followed live is the scheduler's; one after it in the same job (an
    // elastic restart inside it) is a launch of its own, without the scheduler's name.
    e.mutable_job_started()->set_launch(o_.launch);
    o_.launch.clear();
  }
  Emit(std::move(e));
}

void LogEvents::FlushPendingSave(std::optional<absl::Time> bound) {
  if (!pending_save_) return;
  // A save whose length no later line tells (no timer, no iteration after it: the log ends,
  // the job exits or is relaunched): it lasted as long as the log's own saves did on
  // average (0 when it showed none), from the last iteration, and no later than `bound`.
  const int64_t step = *pending_save_;
  pending_save_.reset();
  const absl::Time from = last_step_time_.value_or(bound.value_or(absl::UnixEpoch()));
  eval_from_.reset();  // an evaluation no later iteration dates: counted as training, as a backfill does
  if (const std::optional<double> timed = std::exchange(pending_save_blocking_, std::nullopt)) {
    Save(from + absl::Seconds(*timed), step, *timed);
    return;
  }
  double blocking = save_blocking_count_ > 0 ? save_blocking_sum_ / save_blocking_count_ : 0;
  if (bound && *bound >= from) blocking = std::min(blocking, absl::ToDoubleSeconds(*bound - from));
  notices_.push_back(absl::StrCat(
      "line ", lines_, ": no later line tells how long the save of iteration ", step, " took; counted as ",
      save_blocking_count_ > 0
          ? absl::StrCat(absl::SixDigits(blocking), " s, the mean of the log's ", save_blocking_count_, " timed saves")
          : std::string("0 s (the log timed no save)")));
  estimated_save_ = true;
  Save(from + absl::Seconds(blocking), step, blocking);
  estimated_save_ = false;
}

void LogEvents::EvalSpan(absl::Time from, absl::Time to) {
  if (to <= from) return;
  v1::Event start = Base(from);
  start.set_attempt(attempt_);
  start.mutable_span_started()->set_kind("eval");
  Emit(std::move(start));
  v1::Event end = Base(to);
  end.set_attempt(attempt_);
  end.mutable_span_ended()->set_kind("eval");
  Emit(std::move(end));
}

void LogEvents::CloseNemoEval() {
  if (!nemo_eval_open_) return;
  nemo_eval_open_ = false;
  v1::Event end = Base(nemo_eval_last_);
  end.set_attempt(attempt_);
  end.mutable_span_ended()->set_kind("eval");
  Emit(std::move(end));
}

void LogEvents::Save(absl::Time at, int64_t step, double blocking) {
  if (!estimated_save_ && blocking > 0) {
    save_blocking_sum_ += blocking;
    ++save_blocking_count_;
  }
  if (step > last_step_ && active_) {
    // A save of an iteration the log did not print (Megatron saves where an exit finds it,
    // between logged iterations): its steps first, at the latest batch, or the daemon
    // refuses a checkpoint of a step it has not seen.
    if (last_tokens_ < 0 || last_step_tokens_ <= 0) {
      Unused(current_ ? *current_ : std::string(),
             absl::StrCat("a save of iteration ", step, ", past the last iteration logged (", last_step_,
                          "), whose tokens are unknown"));
      return;
    }
    const int64_t tokens = last_tokens_ + (step - last_step_) * last_step_tokens_;
    v1::Event e = Base(at - absl::Seconds(std::max(0.0, blocking)));
    e.set_attempt(attempt_);
    e.mutable_steps()->set_step(step);
    e.mutable_steps()->set_tokens(tokens);
    Emit(std::move(e));
    last_tokens_ = tokens;
    last_step_ = step;
  }
  saved_.insert(step);
  v1::Event e = Base(at);
  e.set_attempt(attempt_);
  e.mutable_checkpoint_saved()->set_step(step);
  e.mutable_checkpoint_saved()->set_blocking_seconds(std::max(0.0, blocking));
  Emit(std::move(e));
}

namespace {

// torchtitan colours its step lines whether or not they go to a terminal; torchrun --tee
// prefixes each line with the rank ("[rank0]:").
std::string Clean(const std::string& raw) {
  std::string line = raw.find('\x1b') == std::string::npos ? raw : std::regex_replace(raw, kAnsi, "");
  if (absl::StartsWith(line, "[rank")) {
    if (const size_t end = line.find("]:"); end != std::string::npos && end < 16) line.erase(0, end + 2);
  }
  return line;
}

}  // namespace

absl::Status LogEvents::Feed(const std::string& raw, absl::Time read_time, std::vector<v1::Event>& out) {
  ++lines_;
  out_ = &out;
  if (!o_.backfill || last_stamp_) return FeedLine(raw, read_time);
  // A backfill before the log's first timestamp: the lines wait for it (a per-job file
  // whose launch lines carry none is dated from the log itself, never when it is read).
  const std::optional<absl::Time> stamp = Stamp(Clean(raw), o_.timezone);
  if (!stamp) {
    undated_.emplace_back(lines_, raw);
    if (undated_.size() > kMaxUndatedLines) DropUndated("no timestamp within kMaxUndatedLines lines");
    return absl::OkStatus();
  }
  last_stamp_ = stamp;
  const uint64_t now = lines_;
  for (auto& [number, text] : std::exchange(undated_, {})) {
    lines_ = number;
    const absl::Status st = FeedLine(text, *stamp);
    if (!st.ok()) {
      lines_ = now;
      return st;
    }
  }
  lines_ = now;
  return FeedLine(raw, read_time);
}

void LogEvents::DropUndated(const char* why) {
  const uint64_t now = lines_;
  for (const auto& [number, text] : std::exchange(undated_, {})) {
    lines_ = number;
    // The arguments dump carries no time and is read; a line that would have become an
    // event is said.
    const std::string line = Clean(text);
    if (absl::StrContains(line, " ....") && !absl::StrContains(line, "checkpoint")) {
      (void)FeedLine(text, absl::InfinitePast());
    } else if (absl::StrContains(line, "iteration") || absl::StrContains(line, "step") ||
               absl::StrContains(line, "checkpoint")) {
      Unused(text, absl::StrCat("a backfilled line before any timestamp in the log (", why, "): it cannot be dated"));
    }
  }
  lines_ = now;
}

absl::Status LogEvents::FeedLine(const std::string& raw, absl::Time read_time) {
  current_ = &raw;
  const std::string line = Clean(raw);
  const std::optional<absl::Time> stamp = Stamp(line, o_.timezone);
  const absl::Time at = When(stamp, read_time);
  if (stamp) last_stamp_ = stamp;
  current_stamped_ = stamp.has_value();
  if (stamp && undated_launch_) DateLaunch(*stamp);
  // torchrun's summary names the host of the first failure: the pending crash's node.
  if (absl::StrContains(line, "Root Cause (first observed failure):")) {
    root_cause_lines_ = 8;
    ++recognised_;
    return absl::OkStatus();
  }
  if (root_cause_lines_ > 0) {
    --root_cause_lines_;
    std::smatch m;
    if (std::regex_search(line, m, kTorchrunHost)) {
      root_cause_lines_ = 0;
      if (crash_ && crash_->nodes.empty()) {
        if (const std::string host = ShortHost(m[1].str()); !host.empty()) crash_->nodes = {host};
      }
      ++recognised_;
      return absl::OkStatus();
    }
  }
  // A line that says what is killing the attempt: remembered (the most telling of them)
  // until the attempt's end shows.
  if (active_) {
    if (std::optional<Crash> c = ClassifyCrashLine(line)) {
      if (!crash_) {
        crash_time_ = std::max(at, last_step_time_.value_or(at));
        crash_read_ = read_time;
        crash_line_ = lines_;
      }
      if (!crash_ || c->rank > crash_->rank) {
        // A line that only names the cause keeps the host an earlier one blamed.
        if (crash_ && c->nodes.empty()) c->nodes = std::move(crash_->nodes);
        crash_ = std::move(c);
      } else if (crash_->nodes.empty()) {
        crash_->nodes = std::move(c->nodes);
      }
      ++recognised_;
      return absl::OkStatus();
    }
  }
  absl::Status status;
  bool known = false;
  switch (o_.format) {
    case LogFormat::kMegatron:
      known = FeedMegatron(line, stamp, at, status);
      break;
    case LogFormat::kTorchtitan:
      known = FeedTorchtitan(line, stamp, at, status);
      break;
    case LogFormat::kDeepSpeed:
      known = FeedDeepSpeed(line, stamp, at, status);
      break;
    case LogFormat::kNemo:
      known = FeedNemo(line, stamp, at, status);
      break;
  }
  if (known) ++recognised_;
  return status;
}

void LogEvents::CaughtUp(std::vector<v1::Event>& out) {
  if (!o_.backfill) return;
  out_ = &out;
  if (!undated_.empty()) DropUndated("the file's end came first");
  if (undated_launch_) DateLaunch(*last_stamp_);
  o_.backfill = false;
}

void LogEvents::Finish(std::vector<v1::Event>& out) {
  out_ = &out;
  if (!undated_.empty()) DropUndated("the log shows none");
  if (undated_launch_) DateLaunch(*last_stamp_);  // no time after it: the last before it
  FlushCrash();
  current_ = nullptr;
  const absl::Time end = last_stamp_ ? *last_stamp_ : last_step_time_ ? *last_step_time_ : absl::Now();
  if (titan_last_save_) {
    Save(end, *titan_last_save_, titan_save_started_ ? absl::ToDoubleSeconds(end - *titan_save_started_) : 0);
    titan_last_save_.reset();
  }
  FlushPendingSave(std::nullopt);  // saved as the log ends: no later line tells how long it blocked
  Release();
}

absl::Status LogEvents::Iteration(absl::Time at, int64_t step, int64_t tokens, double elapsed_ms, int64_t step_tokens) {
  Release();
  if (crash_ && active_ && step > last_step_) {
    notices_.push_back(absl::StrCat("line ", crash_line_, " told of ", crash_->cause, " (", crash_->detail,
                                    "), but the iterations went on: not counted as an interruption"));
    crash_.reset();
  }
  if (!active_ || step <= last_step_) {
    // A launch without a load line, or iterations started over: a restart from the newest
    // checkpoint before this step (or from scratch).
    int64_t restored = 0;
    for (int64_t s : saved_) {
      if (s < step) restored = s;
    }
    Start(at, restored);
  }
  // Gap between the iteration lines around an evaluation or a save, less the iterations'
  // own time: what they took.
  double eval_seconds = 0;
  if (eval_from_ && last_step_time_ && *eval_from_ == *last_step_time_) {
    const double gap = absl::ToDoubleSeconds(at - *last_step_time_);
    const double work = elapsed_ms / 1000.0 * static_cast<double>(std::max<int64_t>(1, step - last_step_));
    const double rest = std::clamp(gap - work, 0.0, std::max(0.0, gap));
    if (pending_save_ && !pending_save_blocking_) {
      notices_.push_back(absl::StrCat("line ", lines_, ": the evaluation before iteration ", step,
                                      " and an untimed save share the gap before it; counted with the save"));
    } else {
      eval_seconds = std::max(0.0, rest - pending_save_blocking_.value_or(0));
      EvalSpan(*last_step_time_, *last_step_time_ + absl::Seconds(eval_seconds));
    }
  }
  eval_from_.reset();
  if (pending_save_ && last_step_time_) {
    const absl::Time from = *last_step_time_ + absl::Seconds(eval_seconds);
    double blocking = 0;
    if (pending_save_blocking_) {
      blocking = *pending_save_blocking_;
    } else {
      const double gap = absl::ToDoubleSeconds(at - from);
      const double work = elapsed_ms / 1000.0 * static_cast<double>(std::max<int64_t>(1, step - last_step_));
      blocking = std::clamp(gap - work, 0.0, std::max(0.0, gap));
    }
    Save(from + absl::Seconds(blocking), *pending_save_, blocking);
    pending_save_.reset();
    pending_save_blocking_.reset();
  }
  v1::Event e = Base(at);
  e.set_attempt(attempt_);
  e.mutable_steps()->set_step(step);
  e.mutable_steps()->set_tokens(tokens);
  if (rank_spread_ > 0) e.mutable_steps()->set_rank_spread(rank_spread_);
  rank_spread_ = 0;
  // Megatron's per-rank timers: the rank with the most compute time (else the most
  // forward-backward time).
  for (const auto* times : {&rank_compute_, &rank_wait_}) {
    if (times->empty() || slowest_rank_ >= 0) continue;
    slowest_rank_ = std::max_element(times->begin(), times->end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
  }
  rank_compute_.clear();
  rank_wait_.clear();
  if (slowest_rank_ >= 0) e.mutable_steps()->set_slowest_rank(slowest_rank_);
  slowest_rank_ = -1;
  Emit(std::move(e));
  last_step_ = step;
  last_step_time_ = at;
  last_tokens_ = tokens;
  last_step_tokens_ = step_tokens;
  return absl::OkStatus();
}

void LogEvents::TokensUnknown(const std::string& line, const std::string& why, absl::Status& status) {
  if (!releasing_) {
    status = absl::FailedPreconditionError(absl::StrCat("line ", lines_, ": ", why));
  } else {
    Unused(line, why);
  }
}

void LogEvents::StartPending(absl::Time at) {
  if (!launch_pending_ && active_) return;
  Start(launch_time_.value_or(at), launch_pending_ ? pending_restored_ : 0);
  launch_pending_ = false;
}

int64_t LogEvents::TokensPerStep(int64_t sequences) const {
  if (o_.tokens_per_step > 0) return o_.tokens_per_step;
  const int64_t seq = o_.seq_len > 0 ? o_.seq_len : o_.plan_seq_len;
  if (sequences > 0 && seq > 0) return sequences * seq;
  return o_.plan_tokens_per_step;
}

}  // namespace flightplan::cli
