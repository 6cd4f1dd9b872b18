#include "forecast/accounting.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "forecast/plausibility.h"

namespace flightplan::forecast {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kNew:
      return "new";
    case Phase::kStarting:
      return "starting";
    case Phase::kRunning:
      return "running";
    case Phase::kDown:
      return "down";
    case Phase::kFinished:
      return "finished";
  }
  return "unknown";
}

namespace {

constexpr size_t kMaxFlags = 32;

constexpr size_t kMaxRecentSamples = 512;
constexpr double kTypicalGapWeight = 0.2;  // EWMA weight of the newest gap

bool ValidCause(const std::string& cause) {
  if (cause.size() > 32) return false;
  return std::all_of(cause.begin(), cause.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

// Seconds past the stall threshold are `stalled`; below it, all of the gap is work.
struct Split {
  double work = 0;
  double stalled = 0;
};
// The usual figures (gap, step time, startup): the newest weighs kTypicalGapWeight; the
// first sets them.
void Ewma(double& usual, double newest) {
  usual = usual > 0 ? (1 - kTypicalGapWeight) * usual + kTypicalGapWeight * newest : newest;
}

Split SplitStall(double gap, double typical) {
  if (typical <= 0) {
    if (gap <= kStallUnknownSeconds) return {gap, 0};
    return {kStallUnknownSeconds, gap - kStallUnknownSeconds};
  }
  const double threshold = std::max(kStallFactor * typical, kStallMinSeconds);
  if (gap <= threshold) return {gap, 0};
  return {typical, gap - typical};
}

void AddFlag(RunState& s, std::string flag) {
  if (s.flags.size() >= kMaxFlags) s.flags.erase(s.flags.begin());
  s.flags.push_back(std::move(flag));
}

void CountInterruption(RunState& s, const std::string& cause, bool planned, absl::Time at) {
  // To the microsecond, as snapshots keep times: the same after a restart.
  s.interruption_marks.push_back({absl::FromUnixMicros(absl::ToUnixMicros(at)), cause, planned});
  if (s.interruption_marks.size() > kMaxInterruptionMarks) s.interruption_marks.erase(s.interruption_marks.begin());
  std::set<std::string> causes;
  for (InterruptionCount& c : s.interruptions) {
    if (c.cause == cause && c.planned == planned) {
      ++c.count;
      return;
    }
    causes.insert(c.cause);
  }
  if (!causes.count(cause) && causes.size() >= s.settings.max_causes && cause != "other") {
    s.interruption_marks.pop_back();  // counted as "other", marked with its own cause
    CountInterruption(s, "other", planned, at);
    s.interruption_marks.back().cause = cause;
    return;
  }
  s.interruptions.push_back({cause, planned, 1});
}

void OpenIncident(RunState& s) {
  if (s.incident_open) return;  // a crash during the recovery from another: one incident
  s.incident_open = true;
  s.incident_start_budget = BudgetConsumed(s);
}

void CloseIncident(RunState& s) {
  if (!s.incident_open) return;
  s.incident_open = false;
  const double loss = BudgetConsumed(s) - s.incident_start_budget;
  s.incident_losses.push_back(loss);
  if (s.incident_losses.size() > kMaxIncidentLosses) s.incident_losses.pop_front();
  ++s.incidents;
  s.incident_loss_sum += loss;
}

void PushTokenSample(RunState& s, absl::Time t) {
  const TokenSample sample{t, s.tokens};
  if (s.wall_tokens.size() >= 2 &&
      s.wall_tokens.back().time - s.wall_tokens[s.wall_tokens.size() - 2].time < kRecentWindow / 256) {
    s.wall_tokens.back() = sample;
  } else {
    s.wall_tokens.push_back(sample);
  }
  while (s.wall_tokens.size() >= 2 && s.wall_tokens[1].time <= t - kRecentWindow) s.wall_tokens.pop_front();
}

void PushBudgetSample(RunState& s, absl::Time t) {
  const BudgetSample sample{t, BudgetConsumed(s)};
  if (s.budget_samples.size() >= 2 &&
      s.budget_samples.back().time - s.budget_samples[s.budget_samples.size() - 2].time < kBudgetSampleSpacing) {
    s.budget_samples.back() = sample;
  } else {
    s.budget_samples.push_back(sample);
  }
  while (s.budget_samples.size() >= 2 && s.budget_samples[1].time <= t - kBudgetHistory) {
    s.budget_samples.pop_front();
  }
}

EvidenceSample FoldedEvidence(const RunState& s, absl::Time t) {
  EvidenceSample e;
  e.time = t;
  const TimeSeconds& x = s.seconds;
  e.running_seconds = x.startup + x.productive + x.capacity + x.checkpoint + x.custom + x.lost + x.stalled;
  e.productive_seconds = x.productive;
  e.productive_tokens = s.productive_tokens;
  e.incidents = s.incidents;
  e.incident_loss_seconds = s.incident_loss_sum;
  const double open = s.incident_open ? BudgetConsumed(s) - s.incident_start_budget : 0;
  e.other_seconds = std::max(0.0, x.Sum() - x.excluded - x.productive - x.checkpoint - s.incident_loss_sum - open);
  e.planned_stops = s.planned_interruptions;
  return e;
}

void PushEvidence(RunState& s, absl::Time t) {
  const EvidenceSample sample = FoldedEvidence(s, t);
  // Events at one instant make one sample (an async save at its step report's time).
  if ((!s.evidence.empty() && s.evidence.back().time == PackedTime(t)) ||
      (s.evidence.size() >= 2 &&
       s.evidence.back().time - s.evidence[s.evidence.size() - 2].time < s.evidence_spacing)) {
    s.evidence.back() = sample;
    return;
  }
  s.evidence.push_back(sample);
  if (s.evidence.size() <= kMaxEvidenceSamples) return;
  // Full: keep every other sample (the first and the newest always), double the spacing.
  std::deque<EvidenceSample> kept;
  for (size_t i = 0; i < s.evidence.size(); i += 2) kept.push_back(s.evidence[i]);
  if (kept.back().time != s.evidence.back().time) kept.push_back(s.evidence.back());
  s.evidence = std::move(kept);
  s.evidence_spacing *= 2;
}

void ChargeDown(RunState& s, double seconds) {
  (s.down_planned ? s.seconds.down_planned : s.seconds.down_unplanned) += seconds;
}

// Startup up to the attempt's bound (StartupStallSeconds) is startup; past it, the launch
// hangs and the rest is stalled.
void ChargeStartup(RunState& s, double seconds) {
  const double within = std::clamp(StartupStallSeconds(s) - s.startup_in_attempt, 0.0, std::max(0.0, seconds));
  s.seconds.startup += within;
  if (s.last_stop_unplanned) s.startup_after_unplanned += within;
  s.seconds.stalled += std::max(0.0, seconds - within);
  s.startup_in_attempt += std::max(0.0, seconds);
}

// The share of a productive second that the launch's GPUs make: 1 on the plan's fleet (or
// when either count is unknown), gpus / plan's below it.
double CapacityShare(const RunState& s) {
  const uint32_t plan = s.settings.plan_gpus;
  return s.gpus > 0 && plan > 0 && s.gpus < plan ? static_cast<double>(s.gpus) / plan : 1.0;
}

// Productive seconds of the launch: the missing GPUs' share is `capacity`.
void ChargeProductive(const RunState& s, TimeSeconds& x, double seconds) {
  const double share = CapacityShare(s);
  x.productive += seconds * share;
  x.capacity += seconds * (1 - share);
}

// Running time that produced progress, or (`lost`) work that will have to be redone.
void ChargeWork(RunState& s, double seconds, bool lost) {
  const Split split = SplitStall(seconds, s.typical_step_gap);
  if (lost) {
    s.seconds.lost += split.work;
  } else {
    ChargeProductive(s, s.seconds, split.work);
  }
  s.seconds.stalled += split.stalled;
}

void AddCustom(std::vector<SpanSeconds>& by_kind, const std::string& kind, double seconds) {
  for (SpanSeconds& k : by_kind) {
    if (k.kind == kind) {
      k.seconds += seconds;
      return;
    }
  }
  if (by_kind.size() + 1 >= kMaxSpanKinds && kind != "other") {
    AddCustom(by_kind, "other", seconds);
    return;
  }
  by_kind.push_back({kind, seconds});
}

// Time inside the open span: `custom` while its promise holds, `stalled` past it.
void ChargeSpan(RunState& s, double seconds) {
  const double within = std::clamp(s.span_promise - s.span_charged, 0.0, std::max(0.0, seconds));
  s.seconds.custom += within;
  AddCustom(s.custom_by_kind, s.span_kind, within);
  s.span_charged += within;
  s.paused_since_step += within;
  s.seconds.stalled += std::max(0.0, seconds - within);
}

void CloseSpan(RunState& s) {
  s.span_kind.clear();
  s.span_start = absl::InfinitePast();
  s.span_promise = 0;
  s.span_charged = 0;
}

// Where the lineage stood at `step`: an exact mark (a checkpoint's, or the step's own
// report), or one interpolated between the marks (or the start, or now) around it, the
// step reports included. `exact` says which.
CheckpointMark MarkAt(const RunState& s, int64_t step, bool& exact) {
  CheckpointMark below{};  // step 0: nothing done
  CheckpointMark above{s.step, s.tokens, s.seconds.productive, s.productive_tokens};
  exact = step == 0;
  if (exact) return below;
  if (step == s.step && !s.tokens_inferred) {
    exact = true;
    return above;
  }
  bool inexact_match = false;
  CheckpointMark match;
  for (const std::vector<CheckpointMark>* marks : {&s.checkpoints, &s.step_marks}) {
    for (const CheckpointMark& m : *marks) {
      if (m.step == step) {
        if (m.exact) {
          exact = true;
          return m;
        }
        inexact_match = true;
        match = m;
      }
      if (m.step < step && m.step >= below.step) below = m;
      if (m.step > step && m.step < above.step) above = m;
    }
  }
  if (inexact_match) return match;
  if (above.step <= below.step) return below;
  const double f = static_cast<double>(step - below.step) / static_cast<double>(above.step - below.step);
  CheckpointMark m;
  m.step = step;
  m.tokens = below.tokens + static_cast<int64_t>(std::llround(f * static_cast<double>(above.tokens - below.tokens)));
  m.productive_seconds = below.productive_seconds + f * (above.productive_seconds - below.productive_seconds);
  m.productive_tokens = below.productive_tokens + f * (above.productive_tokens - below.productive_tokens);
  m.exact = false;
  return m;
}

void Restore(RunState& s, int64_t step, uint32_t attempt) {
  if (step == s.step) return;
  if (step > s.step) {
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step, ", beyond the latest reported step ", s.step,
                            "; its tokens are taken from the attempt's first report"));
    s.step = step;
    s.tokens_uncertain = true;
    return;
  }
  bool exact = false;
  const CheckpointMark m = MarkAt(s, step, exact);
  const bool known = std::any_of(s.checkpoints.begin(), s.checkpoints.end(),
                                 [step](const CheckpointMark& c) { return c.step == step; });
  if (!exact) {
    const bool evicted = s.checkpoints_evicted && !s.checkpoints.empty() && step < s.checkpoints.front().step;
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step,
                            known     ? ", a checkpoint whose tokens were inferred"
                            : evicted ? ", older than the checkpoints remembered"
                                      : ", which was never checkpointed nor reported",
                            "; time and tokens interpolated between the reports around it, tokens set by the attempt's "
                            "first report"));
  } else if (!known) {
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step,
                            ", which was reported but never checkpointed; the time after its report is lost"));
  }
  s.tokens_uncertain = !exact;
  // The time and tokens of steps S..F no longer count.
  // (The capacity share of those steps stays `capacity`: those GPUs were missing either way.)
  s.seconds.lost += s.seconds.productive - m.productive_seconds;
  s.seconds.productive = m.productive_seconds;
  s.productive_tokens = m.productive_tokens;
  s.step = m.step;
  s.tokens = m.tokens;
  s.checkpoints.erase(std::remove_if(s.checkpoints.begin(), s.checkpoints.end(),
                                     [step](const CheckpointMark& c) { return c.step > step; }),
                      s.checkpoints.end());
  s.step_marks.erase(std::remove_if(s.step_marks.begin(), s.step_marks.end(),
                                    [step](const CheckpointMark& c) { return c.step > step; }),
                     s.step_marks.end());
  s.tokens_inferred = false;
  s.recent.clear();
}

// A step report, remembered while a save or a restore may still name it.
// Whether a plan's pace break (FoldSettings) lies within a report interval: a phase's end
// in tokens in (from_tokens, to_tokens], or a revision's time in [from_time, to_time).
bool CrossesPaceBreak(const FoldSettings& f, int64_t from_tokens, int64_t to_tokens, absl::Time from_time,
                      absl::Time to_time) {
  if (f.pace_break_time && *f.pace_break_time >= from_time && *f.pace_break_time < to_time) return true;
  const auto first =
      std::upper_bound(f.pace_break_tokens.begin(), f.pace_break_tokens.end(), static_cast<double>(from_tokens));
  return first != f.pace_break_tokens.end() && *first <= static_cast<double>(to_tokens);
}

void AddStepMark(RunState& s) {
  if (s.tokens_uncertain || s.tokens_inferred) return;
  if (!s.step_marks.empty() && s.step_marks.back().step >= s.step) s.step_marks.pop_back();
  s.step_marks.push_back({s.step, s.tokens, s.seconds.productive, s.productive_tokens, true});
  if (s.step_marks.size() <= kMaxStepMarks) return;
  std::vector<CheckpointMark> kept;
  for (size_t i = 0; i < s.step_marks.size(); i += 2) kept.push_back(s.step_marks[i]);
  if (kept.back().step != s.step_marks.back().step) kept.push_back(s.step_marks.back());
  s.step_marks = std::move(kept);
}

void AddMark(RunState& s, int64_t step) {
  // A save while the lineage's tokens are unknown (after a restore beyond the reports)
  // is not remembered: a restore to it interpolates instead.
  if (s.tokens_uncertain) return;
  bool exact = false;
  CheckpointMark m = MarkAt(s, step, exact);
  // The reports older than the newest exact save are no longer needed: a restore goes to
  // a save (or, rarely, to an older report: then it interpolates between the saves).
  // The newest two stay, for the tokens per step (SaveAhead).
  if (m.exact && (s.checkpoints.empty() || step >= s.checkpoints.back().step) && s.step_marks.size() > 2) {
    const auto keep = s.step_marks.end() - 2;
    s.step_marks.erase(
        std::remove_if(s.step_marks.begin(), keep, [step](const CheckpointMark& c) { return c.step < step; }), keep);
  }
  auto it = std::lower_bound(s.checkpoints.begin(), s.checkpoints.end(), step,
                             [](const CheckpointMark& c, int64_t v) { return c.step < v; });
  if (it != s.checkpoints.end() && it->step == step) {
    *it = m;
  } else {
    // At the bound, room for exactly one more (the oldest goes below): the vector's doubling
    // would hold twice the marks' memory in every run at rest.
    const auto at = it - s.checkpoints.begin();
    if (s.checkpoints.size() >= kMaxCheckpointMarks && s.checkpoints.capacity() != kMaxCheckpointMarks + 1) {
      std::vector<CheckpointMark> exact;
      exact.reserve(kMaxCheckpointMarks + 1);
      exact.assign(s.checkpoints.begin(), s.checkpoints.end());
      s.checkpoints.swap(exact);
    }
    s.checkpoints.insert(s.checkpoints.begin() + at, m);
  }
  if (s.checkpoints.size() > kMaxCheckpointMarks) {
    s.checkpoints.erase(s.checkpoints.begin());
    s.checkpoints_evicted = true;
  }
}

void PushSample(RunState& s, absl::Time t) {
  // The newest sample is replaced while it sits closer than 1/256 of the window to the one
  // before it, so kept samples are that far apart: an hour holds at most ~257 of them,
  // whatever the report rate.
  const ThroughputSample sample{t, s.seconds.productive, s.productive_tokens};
  if (s.recent.size() >= 2 && s.recent.back().time - s.recent[s.recent.size() - 2].time < kRecentWindow / 256) {
    s.recent.back() = sample;
  } else {
    s.recent.push_back(sample);
  }
  // Keep one sample at or before the window's start so the window is full.
  while (s.recent.size() >= 2 && s.recent[1].time <= t - kRecentWindow) s.recent.pop_front();
  if (s.recent.size() > kMaxRecentSamples) s.recent.pop_front();
}

// A save names a step the reports have not reached (a client that reports every N
// steps and saves at its exit): the step was reached. Its tokens are inferred from the
// lineage's tokens per step (the latest two reports', else the average), flagged, and
// set by the next report; the mark is inexact, so a restore to it lets the attempt's first
// report set them too.
void SaveAhead(RunState& s, int64_t step) {
  double per_step = 0;
  if (s.step_marks.size() >= 2) {
    const CheckpointMark& a = s.step_marks[s.step_marks.size() - 2];
    const CheckpointMark& b = s.step_marks.back();
    if (b.step > a.step) per_step = static_cast<double>(b.tokens - a.tokens) / static_cast<double>(b.step - a.step);
  }
  if (per_step <= 0 && s.step > 0) per_step = static_cast<double>(s.tokens) / static_cast<double>(s.step);
  const auto inferred = static_cast<int64_t>(std::llround(per_step * static_cast<double>(step - s.step)));
  AddFlag(s, absl::StrCat("checkpoint_saved.step ", step, " is ahead of the latest reported step ", s.step,
                          ": the step is taken as reached, its tokens inferred at ",
                          static_cast<int64_t>(std::llround(per_step)), " per step (", s.tokens + inferred,
                          "); the next report sets them"));
  s.step = step;
  s.tokens += inferred;
  if (!s.tokens_uncertain) s.productive_tokens += static_cast<double>(inferred);
  s.tokens_inferred = true;
}

// The run's node book, for a change: a copy when another state shares it.
NodeBook& MutableBook(RunState& s) {
  if (s.node_book == nullptr || s.node_book.use_count() > 1) {
    s.node_book = s.node_book == nullptr ? std::make_shared<NodeBook>() : std::make_shared<NodeBook>(*s.node_book);
  }
  return const_cast<NodeBook&>(*s.node_book);  // sole owner: made above, or unshared
}

// The current launch's hold on its nodes ends at `at`.
void ReleaseHeld(RunState& s, absl::Time at) {
  if (s.node_book != nullptr && !s.node_book->held.empty()) ReleaseNodes(MutableBook(s), at);
}

// What changes when the slowdown detector closes a bin or a stretch starts or ends: the
// stretches are attributed again only then, not on every step report.
struct PaceMoment {
  size_t stretches = 0;
  uint32_t count = 0;
  bool active = false;
  absl::Time last_bin = absl::InfinitePast();
  bool operator==(const PaceMoment&) const = default;
};
PaceMoment MomentOf(const SlowdownState& d) {
  return {d.stretches.size(), d.count, !d.stretches.empty() && d.stretches.back().active,
          d.recent.empty() ? absl::InfinitePast() : d.recent.back().end.time()};
}

// Names the node of each slow stretch not yet attributed for good, newest first: an active
// one from the reports so far, an ended one once (then it is booked on its node).
void AttributeStretches(RunState& s, absl::Time now) {
  for (auto it = s.slowdown.stretches.rbegin(); it != s.slowdown.stretches.rend() && !it->node_final; ++it) {
    it->node = s.rank_marks.empty() ? "" : SlowestNodeIn(s.rank_marks, it->start, it->active ? now : it->end);
    if (it->active) continue;
    it->node_final = true;
    if (!it->node.empty()) BlameSlowStretch(MutableBook(s), it->node);
  }
}

absl::Status Precondition(const std::string& message) { return absl::FailedPreconditionError(message); }

}  // namespace

absl::Status ReusedAttempt(uint32_t attempt, uint32_t current, const std::string& launched) {
  return absl::AlreadyExistsError(absl::StrCat("job_started.attempt ", attempt, " was already launched",
                                               launched.empty() ? "" : absl::StrCat(" (", launched, ")"),
                                               ": the run's current attempt is ", current, "; a relaunch is attempt ",
                                               current + 1));
}

absl::Status ValidateEvent(const Event& e) {
  if (e.id.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("id is ", e.id.size(), " bytes; at most 128"));
  }
  if (!e.id.empty() && e.id[0] == '~') {
    return absl::InvalidArgumentError(
        absl::StrCat("id '", e.id.substr(0, 40), "' starts with '~', reserved for natural keys"));
  }
  if (!e.source.empty() && e.source != kSchedulerSource) {
    return absl::InvalidArgumentError(absl::StrCat("source '", e.source.substr(0, 40),
                                                   "' must be \"\" (the training) or \"", kSchedulerSource,
                                                   "\" (flightplan slurm)"));
  }
  switch (e.kind) {
    case EventKind::kJobStarted:
      if (e.launch.size() > 128) {
        return absl::InvalidArgumentError(
            absl::StrCat("job_started.launch is ", e.launch.size(), " bytes; at most 128"));
      }
      if (e.attempt < 1) {
        return absl::InvalidArgumentError("job_started.attempt must be >= 1 (launches count from 1)");
      }
      if (e.restored_step < 0) {
        return absl::InvalidArgumentError(absl::StrCat("job_started.restored_step ", e.restored_step, " is negative"));
      }
      break;
    case EventKind::kSteps:
      if (e.step < 0) return absl::InvalidArgumentError(absl::StrCat("steps.step ", e.step, " is negative"));
      if (e.tokens < 0) {
        return absl::InvalidArgumentError(absl::StrCat("steps.tokens ", e.tokens, " is negative"));
      }
      if (!(e.rank_spread >= 0) || !(e.rank_spread <= 100)) {
        return absl::InvalidArgumentError(absl::StrCat("steps.rank_spread ", e.rank_spread,
                                                       " must be a finite number from 0 to 100 (0.05: 5% slower)"));
      }
      break;
    case EventKind::kCheckpointSaved:
      if (e.step < 0) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint_saved.step ", e.step, " is negative"));
      }
      if (!(e.blocking_seconds >= 0) || !std::isfinite(e.blocking_seconds)) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint_saved.blocking_seconds ", e.blocking_seconds, " must be a finite number >= 0"));
      }
      break;
    case EventKind::kInterruption:
      if (!ValidCause(e.cause)) {
        return absl::InvalidArgumentError(
            absl::StrCat("interruption.cause '", e.cause.substr(0, 40),
                         "' must be a short lowercase word: up to 32 of a-z, 0-9, '_' and '-'"));
      }
      if (e.detail.size() > 4096) {
        return absl::InvalidArgumentError("interruption.detail is longer than 4096 bytes");
      }
      break;
    case EventKind::kRunFinished:
      break;
    case EventKind::kSpanStarted:
    case EventKind::kSpanEnded: {
      const char* field = e.kind == EventKind::kSpanStarted ? "span_started.kind" : "span_ended.kind";
      if (e.span.empty() || !ValidCause(e.span)) {
        return absl::InvalidArgumentError(absl::StrCat(field, " '", e.span.substr(0, 40),
                                                       "' must be a short lowercase word (eval, sdc_check, profiling, "
                                                       "or the job's own): 1 to 32 of a-z, 0-9, '_' and '-'"));
      }
      if (!(e.expected_seconds >= 0) || !(e.expected_seconds <= 30 * 86400.0)) {
        return absl::InvalidArgumentError(absl::StrCat("span_started.expected_seconds ", e.expected_seconds,
                                                       " must be a number of seconds from 0 (not said) to 30 days"));
      }
      break;
    }
    case EventKind::kExcluded:
      if (e.until <= e.time) {
        return absl::InvalidArgumentError(absl::StrCat("excluded.until ", FormatUtc(e.until),
                                                       " is not after the window's start ", FormatUtc(e.time),
                                                       ": a window runs from the event's time to until"));
      }
      if (e.detail.size() > 4096) return absl::InvalidArgumentError("excluded.reason is longer than 4096 bytes");
      break;
  }
  return absl::OkStatus();
}

double ExcludedSeconds(const std::vector<ExclusionWindow>& windows, absl::Time from, absl::Time to) {
  double out = 0;
  for (const ExclusionWindow& w : windows) {
    if (w.from >= to) break;
    const absl::Time a = std::max(w.from, from), b = std::min(w.until, to);
    if (b > a) out += absl::ToDoubleSeconds(b - a);
  }
  return out;
}

absl::Status ApplyEvent(RunState& s, const Event& e) {
  if (absl::Status st = ValidateEvent(e); !st.ok()) return st;
  if (s.phase == Phase::kFinished) {
    return Precondition(
        absl::StrCat("the run finished at ", FormatUtc(s.last_time), "; no events are accepted after run_finished"));
  }
  if (s.events > 0 && e.time < s.last_time) {
    return Precondition(
        absl::StrCat("time ", FormatUtc(e.time), " is before the run's latest event at ", FormatUtc(s.last_time)));
  }
  const bool running = s.phase == Phase::kStarting || s.phase == Phase::kRunning;
  if (e.kind == EventKind::kJobStarted) {
    if (e.attempt <= s.attempt) {
      // One launch, one attempt number: a relaunch that reuses one is refused, never
      // merged into the earlier launch.
      return ReusedAttempt(e.attempt, s.attempt, "");
    }
    if (s.settings.plan_gpus > 0 && e.gpus > s.settings.plan_gpus) {
      return absl::InvalidArgumentError(absl::StrCat("job_started.gpus ", e.gpus, " is above the plan's fleet of ",
                                                     s.settings.plan_gpus,
                                                     " GPUs; a larger fleet is a plan revision (flightplan create "
                                                     "--update)"));
    }
  } else if (e.kind == EventKind::kExcluded) {
    // An operator's window, in any phase of the run once it has begun.
    if (s.phase == Phase::kNew) {
      return Precondition(absl::StrCat("excluded window from ", FormatUtc(e.time),
                                       " starts before the run's first event; a window lies within the run"));
    }
    for (const ExclusionWindow& w : s.exclusions) {
      if (w.from < e.until && e.time < w.until) {
        return Precondition(absl::StrCat("excluded window ", FormatUtc(e.time), " to ", FormatUtc(e.until),
                                         " overlaps the excluded window ", FormatUtc(w.from), " to ",
                                         FormatUtc(w.until), w.reason.empty() ? "" : absl::StrCat(" (", w.reason, ")"),
                                         "; retract it first, or exclude the part that is not covered"));
      }
    }
    if (s.exclusions.size() >= kMaxExclusions) {
      return Precondition(absl::StrCat("the run has ", kMaxExclusions, " excluded windows, the most it keeps"));
    }
  } else {
    const uint32_t attempt = e.attempt ? e.attempt : s.attempt;
    const char* kind = EventKindName(e.kind);
    if (s.phase == Phase::kNew) {
      return Precondition(absl::StrCat(kind, " before any job_started: a run begins with job_started"));
    }
    if (attempt < s.attempt) {
      return Precondition(absl::StrCat(kind, " from attempt ", attempt, ", which attempt ", s.attempt, " superseded"));
    }
    if (attempt > s.attempt) {
      return Precondition(
          absl::StrCat(kind, " from attempt ", attempt, ", which has not started (no job_started for it)"));
    }
    if (!running) {
      return Precondition(absl::StrCat(kind, " while the run is down: attempt ", s.attempt,
                                       " was interrupted; a new attempt starts with job_started"));
    }
    if (e.kind == EventKind::kSpanEnded && s.span_kind != e.span) {
      return Precondition(absl::StrCat(
          "span_ended.kind '", e.span, "' ends no open span: ",
          s.span_kind.empty() ? std::string("none is open (a span_ended needs its span_started first)")
                              : absl::StrCat("the open span is '", s.span_kind, "', since ", FormatUtc(s.span_start))));
    }
  }
  if (e.kind == EventKind::kSteps) {
    // After a restore to an estimated state, the first report sets the tokens; after a
    // save ahead of the reports, the next one.
    const bool rebase = (s.tokens_uncertain && !s.saw_step_in_attempt) || s.tokens_inferred;
    // The message names the field that goes back: the step, or the tokens.
    if (e.step < s.step) {
      return Precondition(
          absl::StrCat("steps.step ", e.step, " goes backwards from step ", s.step, " without a restore"));
    }
    if (e.tokens < s.tokens && !rebase) {
      return Precondition(absl::StrCat("steps.tokens ", e.tokens, " at step ", e.step, " goes backwards from ",
                                       s.tokens, " at step ", s.step, " without a restore"));
    }
    if (e.step == s.step && e.tokens != s.tokens && s.saw_step_in_attempt && !s.tokens_inferred) {
      return absl::InvalidArgumentError(absl::StrCat("steps.tokens ", e.tokens, " for step ", e.step,
                                                     ", which was reported with ", s.tokens, " tokens"));
    }
  }

  // Valid: charge the interval since the latest event, then change phase.
  if (e.source == kSchedulerSource) s.scheduler_reports = true;
  double gap = s.events > 0 ? absl::ToDoubleSeconds(e.time - s.last_time) : 0;
  if (s.events == 0) s.first_time = e.time;
  // Seconds inside excluded windows are `excluded`, whatever the run was doing.
  const double excluded = s.events > 0 ? ExcludedSeconds(s.exclusions, s.last_time, e.time) : 0;
  const double wall_gap = gap;
  s.seconds.excluded += excluded;
  s.paused_since_step += excluded;
  gap -= excluded;
  // Inside an open span, the time is the span's (a save's blocking stays `checkpoint`); the
  // kind's own rules below see only what is left. A launch closes it after the implied stop.
  bool spanned = false;
  if (!s.span_kind.empty() && e.kind != EventKind::kJobStarted) {
    const double blocking = e.kind == EventKind::kCheckpointSaved ? std::clamp(e.blocking_seconds, 0.0, gap) : 0.0;
    ChargeSpan(s, gap - blocking);
    gap = blocking;
    spanned = true;
    if (e.kind == EventKind::kSpanStarted || e.kind == EventKind::kSpanEnded || e.kind == EventKind::kInterruption ||
        e.kind == EventKind::kRunFinished) {
      CloseSpan(s);
    }
  }
  switch (e.kind) {
    case EventKind::kJobStarted:
      if (running) {
        // No interruption was reported: the previous attempt died at its latest event.
        OpenIncident(s);
        s.seconds.down_unplanned += gap;
        CountInterruption(s, "unknown", false, s.last_time);  // the attempt died at its latest event
        ++s.unplanned_interruptions;
        s.down_planned = false;
        s.last_stop_unplanned = true;
        ReleaseHeld(s, s.last_time);
      } else if (s.phase == Phase::kDown) {
        ChargeDown(s, gap);
      }
      CloseSpan(s);
      s.gpus = e.gpus;
      if (!e.nodes.empty()) HoldNodes(MutableBook(s), e.nodes, e.gpus, e.time);
      Restore(s, e.restored_step, e.attempt);
      s.pace_mark_valid = false;  // the next interval starts at the launch's first report
      s.phase = Phase::kStarting;
      s.startup_in_attempt = 0;
      s.attempt = e.attempt;
      s.attempt_starts.push_back({e.attempt, e.time, e.launch});
      if (s.attempt_starts.size() > kMaxAttemptStarts) s.attempt_starts.erase(s.attempt_starts.begin());
      s.saw_step_in_attempt = false;
      break;
    case EventKind::kSteps: {
      const PaceMoment pace_before = MomentOf(s.slowdown);
      if (std::optional<std::string> flag = ImplausibleSteps(s, e)) AddFlag(s, *std::move(flag));
      // The plan changes the pace by design between the latest report and this one.
      const bool pace_break = CrossesPaceBreak(s.settings, s.tokens, e.tokens, s.last_time, e.time);
      if (s.phase == Phase::kStarting) {
        // Launch to first step. A report covers the steps before it: with the usual
        // seconds per step, those steps were work, and only the time before them startup.
        const double work = s.typical_seconds_per_step > 0 && e.step > s.step
                                ? std::min(gap, static_cast<double>(e.step - s.step) * s.typical_seconds_per_step)
                                : 0.0;
        ChargeStartup(s, gap - work);
        ChargeProductive(s, s.seconds, work);
        if (work > 0 && !s.tokens_uncertain) {
          s.productive_tokens += static_cast<double>(std::max<int64_t>(0, e.tokens - s.tokens));
        } else if (s.tokens_inferred && !s.tokens_uncertain && e.step == s.step) {
          s.productive_tokens += static_cast<double>(e.tokens - s.tokens);  // the inference corrected
        }
        // The usual startup, from launches that did not hang past the bound.
        { Ewma(s.typical_startup, std::min(s.startup_in_attempt, StartupStallSeconds(s))); }
        s.phase = Phase::kRunning;
        s.tokens_uncertain = false;
        CloseIncident(s);
      } else {
        // A report covering k steps takes about k times the usual seconds per step (the
        // usual gap between reports before that is known): kStallFactor times that, and at
        // least kStallMinSeconds, is a stall, whose expected time counts as work and the
        // rest as stalled. A stall is evidence of neither usual figure (its threshold would
        // widen the next one's).
        const int64_t covered = e.step - s.step;
        const bool per_step_known = s.typical_seconds_per_step > 0 && covered > 0 && !s.tokens_inferred;
        const double expected =
            per_step_known ? static_cast<double>(covered) * s.typical_seconds_per_step : s.typical_step_gap;
        const Split split = SplitStall(gap, expected);
        ChargeProductive(s, s.seconds, split.work);
        s.seconds.stalled += split.stalled;
        // Tokens gained in an excluded window are not the throughput's: its share of the interval.
        s.productive_tokens += static_cast<double>(e.tokens - s.tokens) * (wall_gap > 0 ? 1 - excluded / wall_gap : 1);
        if (s.pace_mark_valid && !pace_break && split.stalled == 0 && s.seconds.stalled == s.pace_stalled_mark &&
            !s.tokens_inferred && !s.tokens_uncertain && excluded == 0) {
          AddPace(s.slowdown, e.time, s.seconds.productive - s.pace_productive_mark,
                  static_cast<double>(e.tokens - s.tokens), covered);
        }
        if (split.stalled == 0) {
          // A gap cut by a span or a window is not a usual one.
          if (!spanned && s.paused_since_step == 0) Ewma(s.typical_step_gap, gap);
          // Seconds per step: since the previous report, less saves, spans and excluded windows.
          const double since_report =
              s.last_step_time == absl::InfinitePast()
                  ? gap
                  : absl::ToDoubleSeconds(e.time - s.last_step_time) - s.checkpoint_since_step - s.paused_since_step;
          if (covered > 0 && since_report > 0 && !s.tokens_inferred) {
            Ewma(s.typical_seconds_per_step, since_report / static_cast<double>(covered));
          }
        }
      }
      if (pace_break) RestartPace(s.slowdown, e.time);
      if (e.slowest_rank >= 0 && s.node_book != nullptr) {
        AddRankMark(s.rank_marks, e.time, NodeOfRank(*s.node_book, e.slowest_rank, s.settings.gpus_per_node));
      }
      if (!(MomentOf(s.slowdown) == pace_before)) AttributeStretches(s, e.time);
      s.step = e.step;
      s.tokens = e.tokens;
      s.tokens_inferred = false;
      s.saw_step_in_attempt = true;
      s.pace_productive_mark = s.seconds.productive;
      s.pace_stalled_mark = s.seconds.stalled;
      s.pace_mark_valid = true;
      if (e.rank_spread > 0) {
        s.rank_spread = e.rank_spread;
        Ewma(s.typical_rank_spread, e.rank_spread);
      }
      s.last_step_time = e.time;
      s.checkpoint_since_step = 0;
      s.paused_since_step = 0;
      AddStepMark(s);
      PushSample(s, e.time);
      break;
    }
    case EventKind::kCheckpointSaved: {
      const double blocking = std::min(e.blocking_seconds, gap);
      s.seconds.checkpoint += blocking;
      s.checkpoint_since_step += blocking;
      ++s.checkpoint_count;
      s.checkpoint_blocking_sum += blocking;
      if (s.phase == Phase::kStarting) {
        ChargeStartup(s, gap - blocking);
      } else {
        ChargeWork(s, gap - blocking, false);
      }
      if (e.step > s.step) SaveAhead(s, e.step);
      AddMark(s, e.step);
      // The cadence within one launch (a relaunch's first save follows a restore, not a save).
      if (s.last_checkpoint_time != absl::InfinitePast() && !s.attempt_starts.empty() &&
          s.attempt_starts.back().time <= s.last_checkpoint_time) {
        Ewma(s.typical_checkpoint_gap, absl::ToDoubleSeconds(e.time - s.last_checkpoint_time));
      }
      s.last_checkpoint_time = e.time;
      break;
    }
    case EventKind::kInterruption:
      if (!e.planned) OpenIncident(s);
      if (s.phase == Phase::kStarting) {
        ChargeStartup(s, gap);
      } else {
        // Work since the latest report produced no step that counts.
        ChargeWork(s, gap, true);
      }
      CountInterruption(s, e.cause.empty() ? "unknown" : e.cause, e.planned, e.time);
      ReleaseHeld(s, e.time);
      if (!e.planned && !e.nodes.empty()) BlameFailure(MutableBook(s), e.nodes);
      if (!e.planned) ++s.unplanned_interruptions;
      if (e.planned) ++s.planned_interruptions;
      s.phase = Phase::kDown;
      s.down_planned = e.planned;
      s.last_stop_unplanned = !e.planned;
      break;
    case EventKind::kRunFinished:
      if (s.phase == Phase::kStarting) {
        ChargeStartup(s, gap);
      } else {
        ChargeWork(s, gap, false);
      }
      ReleaseHeld(s, e.time);
      s.phase = Phase::kFinished;
      break;
    case EventKind::kSpanStarted:
    case EventKind::kExcluded:
      // The time before it, as a save's (without its blocking) or as the phase says.
      if (s.phase == Phase::kStarting) {
        ChargeStartup(s, gap);
      } else if (s.phase == Phase::kRunning) {
        ChargeWork(s, gap, false);
      } else if (s.phase == Phase::kDown) {
        ChargeDown(s, gap);
      }
      if (e.kind == EventKind::kSpanStarted) {
        s.span_kind = e.span;
        s.span_start = e.time;
        s.span_promise = e.expected_seconds > 0 ? e.expected_seconds : kSpanDefaultPromiseSeconds;
        s.span_charged = 0;
      } else {
        const ExclusionWindow w{e.time, e.until, e.detail};
        s.exclusions.insert(
            std::upper_bound(s.exclusions.begin(), s.exclusions.end(), w,
                             [](const ExclusionWindow& a, const ExclusionWindow& b) { return a.from < b.from; }),
            w);
      }
      break;
    case EventKind::kSpanEnded:
      break;  // its time was the span's
  }
  s.last_time = e.time;
  s.last_kind_rank = static_cast<uint32_t>(KindRank(e.kind));
  ++s.events;
  PushBudgetSample(s, e.time);
  PushEvidence(s, e.time);
  PushTokenSample(s, e.time);
  return absl::OkStatus();
}

double StartupStallSeconds(const RunState& s) {
  return s.typical_startup > 0 ? std::max(kStallFactor * s.typical_startup, kStartupStallMinSeconds)
                               : kStallUnknownSeconds;
}

double BudgetConsumed(const RunState& s) {
  return s.seconds.lost + s.seconds.down_unplanned + s.seconds.stalled + s.startup_after_unplanned;
}

EvidenceSample EvidenceNow(const RunState& s, const RunSnapshot& snap) {
  EvidenceSample e;
  e.time = snap.as_of;
  const TimeSeconds& x = snap.seconds;
  e.running_seconds = snap.running_seconds;
  e.productive_seconds = x.productive;
  // Tokens of the open interval are not known until the next report: the folded count.
  e.productive_tokens = s.productive_tokens;
  e.incidents = s.incidents;
  e.incident_loss_seconds = s.incident_loss_sum;
  const double open = s.incident_open ? snap.failure_budget_consumed_seconds - s.incident_start_budget : 0;
  e.other_seconds = std::max(0.0, x.Sum() - x.excluded - x.productive - x.checkpoint - s.incident_loss_sum - open);
  e.planned_stops = s.planned_interruptions;
  return e;
}

RunSnapshot Snapshot(const RunState& s, absl::Time now) {
  RunSnapshot out;
  out.phase = s.phase;
  out.attempt = s.attempt;
  out.events = s.events;
  out.first_time = s.first_time;
  out.last_time = s.last_time;
  out.step = s.step;
  out.tokens = s.tokens;
  out.seconds = s.seconds;
  out.interruptions = s.interruptions;
  out.flags = s.flags;
  out.last_step_time = s.last_step_time;
  out.typical_step_gap = s.typical_step_gap;
  out.slowdown = ReportSlowdown(s.slowdown, 0, std::max(now, s.last_time));
  out.rank_spread = s.rank_spread;
  out.typical_rank_spread = s.typical_rank_spread;
  out.custom_by_kind = s.custom_by_kind;
  out.gpus = s.gpus;
  out.exclusions = s.exclusions;
  if (!s.span_kind.empty()) {
    out.span_kind = s.span_kind;
    out.span_start = s.span_start;
    out.span_promised_until = s.span_start + absl::Seconds(s.span_promise);
  }
  double startup_after_unplanned = s.startup_after_unplanned;
  if (s.events == 0) {
    out.as_of = now;
    return out;
  }
  absl::Time as_of = std::max(now, s.last_time);
  if (s.phase == Phase::kFinished) as_of = s.last_time;
  out.as_of = as_of;
  const double excluded = ExcludedSeconds(s.exclusions, s.last_time, as_of);
  out.seconds.excluded += excluded;
  const double tail = absl::ToDoubleSeconds(as_of - s.last_time) - excluded;
  if (!s.span_kind.empty() && s.phase != Phase::kFinished) {
    // Inside the open span: custom while its promise holds, a stall past it.
    const double within = std::clamp(s.span_promise - s.span_charged, 0.0, std::max(0.0, tail));
    out.seconds.custom += within;
    AddCustom(out.custom_by_kind, s.span_kind, within);
    out.seconds.stalled += std::max(0.0, tail - within);
  } else {
    switch (s.phase) {
      case Phase::kDown:
        (s.down_planned ? out.seconds.down_planned : out.seconds.down_unplanned) += tail;
        break;
      case Phase::kStarting: {
        const double within = std::clamp(StartupStallSeconds(s) - s.startup_in_attempt, 0.0, tail);
        out.seconds.startup += within;
        if (s.last_stop_unplanned) startup_after_unplanned += within;
        out.seconds.stalled += tail - within;
        break;
      }
      case Phase::kRunning: {
        const Split split = SplitStall(tail, s.typical_step_gap);
        ChargeProductive(s, out.seconds, split.work);
        out.seconds.stalled += split.stalled;
        break;
      }
      default:
        break;
    }
  }
  out.elapsed_seconds = absl::ToDoubleSeconds(as_of - s.first_time);
  out.running_seconds = out.seconds.startup + out.seconds.productive + out.seconds.capacity + out.seconds.checkpoint +
                        out.seconds.custom + out.seconds.lost + out.seconds.stalled;
  out.failure_budget_consumed_seconds =
      out.seconds.lost + out.seconds.down_unplanned + out.seconds.stalled + startup_after_unplanned;
  out.tokens_per_second = s.seconds.productive > 0 ? s.productive_tokens / s.seconds.productive : 0;
  out.recent_tokens_per_second = out.tokens_per_second;
  if (s.recent.size() >= 2) {
    const ThroughputSample& a = s.recent.front();
    const ThroughputSample& b = s.recent.back();
    if (b.productive_seconds > a.productive_seconds) {
      out.recent_tokens_per_second =
          (b.productive_tokens - a.productive_tokens) / (b.productive_seconds - a.productive_seconds);
    }
  }
  return out;
}

}  // namespace flightplan::forecast
