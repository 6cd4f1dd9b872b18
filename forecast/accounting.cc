// The fold of one event into a run's state (ApplyEvent, docs/contract.md §5): the event
// checked against the run so far, then the time since its latest event charged to the ten
// categories, with the interruptions, incidents, spans, flags and node book it changes.
#include "forecast/accounting.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "forecast/accounting_internal.h"
#include "forecast/plausibility.h"

namespace flightplan::forecast {

using namespace accounting_internal;  // NOLINT(build/namespaces): this folder's own helpers

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

constexpr double kTypicalGapWeight = 0.2;  // EWMA weight of the newest gap

// The usual figures (gap, step time, startup): the newest weighs kTypicalGapWeight; the
// first sets them.
void Ewma(double& usual, double newest) {
  usual = usual > 0 ? (1 - kTypicalGapWeight) * usual + kTypicalGapWeight * newest : newest;
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

// Whether a plan's pace break (FoldSettings) lies within a report interval: a phase's end
// in tokens in (from_tokens, to_tokens], or a revision's time in [from_time, to_time).
bool CrossesPaceBreak(const FoldSettings& f, int64_t from_tokens, int64_t to_tokens, absl::Time from_time,
                      absl::Time to_time) {
  if (f.pace_break_time && *f.pace_break_time >= from_time && *f.pace_break_time < to_time) return true;
  const auto first =
      std::upper_bound(f.pace_break_tokens.begin(), f.pace_break_tokens.end(), static_cast<double>(from_tokens));
  return first != f.pace_break_tokens.end() && *first <= static_cast<double>(to_tokens);
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

}  // namespace flightplan::forecast
