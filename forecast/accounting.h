// Run accounting (docs/contract.md §5): folds a run's events, one at a time, into the seconds of
// each time category, the lineage's progress, interruptions and throughput.
//
// Pure: no I/O, no clock; `now` is a parameter of Snapshot(). A RunState is a value: the
// fold is incremental (O(1) per event, amortised), its size is bounded per run (not per
// event), and copying it is how a caller keeps an all-or-nothing batch. Not thread-safe;
// share copies.
#ifndef FLIGHTPLAN_FORECAST_ACCOUNTING_H_
#define FLIGHTPLAN_FORECAST_ACCOUNTING_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "forecast/event.h"
#include "forecast/nodes.h"
#include "forecast/packed_time.h"
#include "forecast/slowdown.h"

namespace flightplan::forecast {

// A gap between steps longer than kStallFactor x the usual gap (and at least
// kStallMinSeconds) is a stall: the usual gap still counts as work, the rest is `stalled`.
inline constexpr double kStallFactor = 5.0;
inline constexpr double kStallMinSeconds = 120.0;
// Until two reports have shown the usual gap, a gap past this is stalled beyond it.
inline constexpr double kStallUnknownSeconds = 1800.0;
// A launch that has not reported its first step after kStallFactor x the run's usual
// startup (at least kStartupStallMinSeconds; kStallUnknownSeconds before a first launch
// has shown it) hangs: the time past that is `stalled`, charged to the failure budget.
inline constexpr double kStartupStallMinSeconds = 600.0;
// Attempt start times remembered to resolve an event's attempt from its time.
inline constexpr size_t kMaxAttemptStarts = 4096;
inline constexpr size_t kMaxInterruptionMarks = 4096;
// Checkpoints remembered for restores (the newest); older restores are interpolated.
inline constexpr size_t kMaxCheckpointMarks = 512;
// Step reports remembered since the newest checkpoint; past this, every other one of them
// is dropped (a restore between two kept reports interpolates between them).
inline constexpr size_t kMaxStepMarks = 256;
// Window of the recent throughput.
inline constexpr absl::Duration kRecentWindow = absl::Hours(1);

enum class Phase { kNew, kStarting, kRunning, kDown, kFinished };
const char* PhaseName(Phase phase);

// The categories of docs/contract.md §5. Every second of a run's time is in exactly one.
// `capacity`: the missing share of productive seconds on fewer GPUs than the plan's;
// `custom`: inside a span (deliberate work that is not training); `excluded`: inside a window
// an operator left out.
struct TimeSeconds {
  double productive = 0, checkpoint = 0, lost = 0, startup = 0, down_unplanned = 0, down_planned = 0, stalled = 0;
  double capacity = 0, custom = 0, excluded = 0;
  [[nodiscard]] double Sum() const {
    return productive + checkpoint + lost + startup + down_unplanned + down_planned + stalled + capacity + custom +
           excluded;
  }
};

// A span without a promise (SpanStarted.expected_seconds 0) promises this: past it, its
// silence is a stall like any other.
inline constexpr double kSpanDefaultPromiseSeconds = 1800.0;
// Kinds of span a run keeps apart (custom_seconds_by_kind); later new ones count as "other".
inline constexpr size_t kMaxSpanKinds = 32;
// Exclusion windows a run keeps; past it, one more is refused.
inline constexpr size_t kMaxExclusions = 1024;

struct SpanSeconds {
  std::string kind;
  double seconds = 0;
};

// A window of the run's time an operator left out of its accounting (an `excluded` event).
struct ExclusionWindow {
  absl::Time from;
  absl::Time until;
  std::string reason;
};

// Seconds of [from, to) inside the windows (sorted, disjoint).
[[nodiscard]] double ExcludedSeconds(const std::vector<ExclusionWindow>& windows, absl::Time from, absl::Time to);

// One interruption on the run's timeline (reported, or implied by a relaunch).
struct InterruptionMark {
  PackedTime time;
  std::string cause;
  bool planned = false;
};

struct InterruptionCount {
  std::string cause;
  bool planned = false;
  uint32_t count = 0;
};

// Where the lineage stood when a checkpoint was saved, or a step was reported: what a
// restore returns to.
struct CheckpointMark {
  int64_t step = 0;
  int64_t tokens = 0;
  double productive_seconds = 0;
  double productive_tokens = 0;
  bool exact = true;  // false: interpolated (a save of an older step than the latest report)
};

// Failure budget consumed at a moment (for burn rates over windows).
struct BudgetSample {
  PackedTime time;
  double consumed_seconds = 0;
};
// Budget samples are kept this far back (the longest burn-rate window), one per
// kBudgetSampleSpacing at most.
inline constexpr absl::Duration kBudgetHistory = absl::Hours(72);
inline constexpr absl::Duration kBudgetSampleSpacing = absl::Minutes(5);
// Losses of the most recent incidents kept for the forecaster's loss distribution.
inline constexpr size_t kMaxIncidentLosses = 256;

// The run's cumulative evidence at a moment, for estimates over a window of the recent
// past (the forecaster's "the recent regime continues"). `other_seconds` is the time that
// is neither work, checkpoint nor an unplanned incident: planned downtime and its
// restarts, deliberate rollbacks, stalls outside incidents, the first launch.
struct EvidenceSample {
  PackedTime time;
  double running_seconds = 0;
  double productive_seconds = 0;
  double productive_tokens = 0;
  double incidents = 0;  // closed incidents
  double incident_loss_seconds = 0;
  double other_seconds = 0;
  double planned_stops = 0;  // planned interruptions
};
// Evidence samples: one per kEvidenceSpacing of the run's time at first; when
// kMaxEvidenceSamples are kept, every other one is dropped and the spacing doubles, so a
// run of any length keeps a bounded history that still reaches back to its start.
inline constexpr absl::Duration kEvidenceSpacing = absl::Minutes(30);
inline constexpr size_t kMaxEvidenceSamples = 1024;

struct AttemptStart {
  uint32_t attempt = 0;
  PackedTime time;
  std::string launch;  // Event::launch of its job_started
};

struct ThroughputSample {
  absl::Time time;
  double productive_seconds = 0;
  double productive_tokens = 0;
};

// The lineage's tokens at a moment (for "tokens per wall second over the last hour").
struct TokenSample {
  absl::Time time;
  int64_t tokens = 0;
};

// Distinct interruption causes a run's state keeps, and shows in its status: far above any
// cluster's vocabulary of causes; past it, new ones count as "other", so that a client
// cannot grow a run's state without bound.
inline constexpr uint32_t kMaxStatusCauses = 1024;
// Distinct causes that get their own label value on /metrics by default (the exporter's
// limit: later ones are summed as "other" there, never in the status).
inline constexpr uint32_t kDefaultMaxCauses = 16;

// Set by a state's owner from the run's plan, not part of the history (not snapshotted, and
// set again on every state the owner folds).
struct FoldSettings {
  // Distinct interruption causes kept; later new ones are counted as "other" (kMaxStatusCauses).
  uint32_t max_causes = kMaxStatusCauses;
  // Where the plan changes the pace by design, so that the slowdown detector's reference
  // starts again there rather than take the change for a slowdown: the tokens at which a
  // phase ends whose successor runs at another rate (a longer sequence, a smaller fleet,
  // with the same tokens per step), ascending; and the time from which a revised plan with
  // another rate governs the run. A step interval that spans one is not fed to the detector.
  std::vector<double> pace_break_tokens;
  std::optional<absl::Time> pace_break_time;
  // The plan's fleet at 100% MFU, tokens per second (0: unknown): tokens arriving faster
  // than that are flagged (ImplausibleSteps, forecast/plausibility.h).
  double peak_tokens_per_second = 0;
  // The plan's GPUs per node: where a launch names its nodes but not its GPUs, this places
  // a rank on its node (NodeOfRank). 0: unknown.
  uint32_t gpus_per_node = 0;
  // The plan's GPUs: a launch on fewer (JobStarted.gpus) charges the missing share of its
  // productive seconds to `capacity`; a launch on more is refused. 0: unknown.
  uint32_t plan_gpus = 0;
};

struct RunState {
  FoldSettings settings;

  // A scheduler's report was folded: launches and stops are folded again with the whole
  // log from then on, where two reports of one join (NeedsRefold, FoldOrder).
  bool scheduler_reports = false;

  Phase phase = Phase::kNew;
  uint32_t attempt = 0;
  uint64_t events = 0;
  absl::Time first_time = absl::InfinitePast();
  absl::Time last_time = absl::InfinitePast();

  // The lineage: progress that still counts.
  int64_t step = 0;
  int64_t tokens = 0;

  TimeSeconds seconds;
  // Startup after an unplanned stop: charged to the failure budget.
  double startup_after_unplanned = 0;
  double startup_in_attempt = 0;  // seconds in `starting` since this attempt's launch
  double typical_startup = 0;     // EWMA of launches' startups; 0 until one reported a step
  bool down_planned = false;      // the current (or last) stop was planned
  bool last_stop_unplanned = false;
  // Tokens gained in productive time that still counts (throughput's numerator).
  double productive_tokens = 0;
  absl::Time last_step_time = absl::InfinitePast();  // latest steps event
  double checkpoint_since_step = 0;                  // blocking seconds since it
  // EWMA of the gap between step reports while running; 0 until the second report.
  double typical_step_gap = 0;
  // EWMA of seconds per training step while running; 0 until the second report. It dates
  // an attempt's first step when reports are coarser than steps.
  double typical_seconds_per_step = 0;
  bool saw_step_in_attempt = false;
  // The lineage's tokens are an estimate (a restore to an interpolated or unknown step):
  // the attempt's first step report sets them, even below the estimate.
  bool tokens_uncertain = false;
  bool checkpoints_evicted = false;          // older marks were dropped (kMaxCheckpointMarks)
  std::vector<AttemptStart> attempt_starts;  // oldest first, at most kMaxAttemptStarts

  std::vector<InterruptionCount> interruptions;
  std::vector<InterruptionMark> interruption_marks;  // oldest first, the newest kMaxInterruptionMarks
  uint32_t unplanned_interruptions = 0;
  uint32_t planned_interruptions = 0;
  // An incident is an unplanned stop, from the last work before it to the first step after
  // the restart; its loss is the failure budget it consumed (lost work, downtime, stall,
  // restart).
  bool incident_open = false;
  double incident_start_budget = 0;
  std::deque<double> incident_losses;  // the newest, at most kMaxIncidentLosses
  uint32_t incidents = 0;
  double incident_loss_sum = 0;
  uint32_t checkpoint_count = 0;
  double checkpoint_blocking_sum = 0;
  std::deque<BudgetSample> budget_samples;  // kBudgetHistory back, thinned
  std::deque<EvidenceSample> evidence;      // the whole run, thinned (see above)
  absl::Duration evidence_spacing = kEvidenceSpacing;
  std::vector<CheckpointMark> checkpoints;  // oldest first, at most kMaxCheckpointMarks
  // The lineage's step reports since its newest checkpoint, oldest first, at most
  // kMaxStepMarks (thinned): the time at a reported step, for restores and late saves.
  std::vector<CheckpointMark> step_marks;
  // The latest tokens were inferred from the tokens per step (a checkpoint_saved ahead of
  // the reports): the next report sets them, even below the inference.
  bool tokens_inferred = false;
  std::deque<ThroughputSample> recent;  // within kRecentWindow of the last sample
  std::deque<TokenSample> wall_tokens;  // within kRecentWindow, never cleared
  // Slowdowns on the run's own pace, fed each clean interval between two step reports of
  // one launch: the productive seconds charged between them (saves' blocking excluded) and
  // the tokens gained. Not fed: a launch's first report, an interval with a stall, tokens
  // inferred or uncertain.
  SlowdownState slowdown;
  // The spread of compute time across ranks, where the training reports it (Steps.rank_spread):
  // the latest, and the usual one (EWMA of the reports); 0 until one.
  double rank_spread = 0;
  double typical_rank_spread = 0;
  double pace_productive_mark = 0;  // seconds.productive at the latest step report
  double pace_stalled_mark = 0;     // seconds.stalled then
  bool pace_mark_valid = false;     // the interval since it is clean so far
  // The latest save (InfinitePast before one) and the usual time between two saves of one
  // launch (EWMA; 0 until two): the observed cadence beside the plan's and Daly's.
  absl::Time last_checkpoint_time = absl::InfinitePast();
  double typical_checkpoint_gap = 0;
  std::vector<std::string> flags;  // accepted but suspicious, at most 32
  uint32_t last_kind_rank = 0;     // fold order of the kind of the latest event
  // The nodes the run held and what named them (forecast/nodes.h); null until an event
  // names a node. Shared between copies of the state: the fold copies it before changing it.
  std::shared_ptr<const NodeBook> node_book;
  // Step reports' slowest ranks, as the nodes they sat on (the newest kMaxRankMarks).
  std::deque<RankMark> rank_marks;
  // The current launch's GPUs (JobStarted.gpus; 0: the plan's fleet).
  uint32_t gpus = 0;
  // Deliberate work: the open span (span_kind "" when none), when it started, what it
  // promised (seconds) and the custom seconds charged to it so far; custom seconds by kind;
  // custom and excluded seconds since the latest step report (not part of its seconds per step).
  std::string span_kind;
  absl::Time span_start = absl::InfinitePast();
  double span_promise = 0;
  double span_charged = 0;
  std::vector<SpanSeconds> custom_by_kind;
  double paused_since_step = 0;
  // Windows an operator excluded, by start (disjoint).
  std::vector<ExclusionWindow> exclusions;
};

// Applies one event. On error the state is unchanged and the status says which field is
// wrong: INVALID_ARGUMENT for a malformed or self-contradictory event, FAILED_PRECONDITION
// for one that contradicts the run so far (time before its latest event, tokens going
// backwards without a restore, a superseded or unstarted attempt, an event after the finish).
[[nodiscard]] absl::Status ApplyEvent(RunState& state, const Event& event);

// The refusal of a job_started that reuses an attempt number (`launched`: what is known of
// the earlier launch, or ""): ALREADY_EXISTS naming the run's current attempt.
[[nodiscard]] absl::Status ReusedAttempt(uint32_t attempt, uint32_t current, const std::string& launched);

// Checks an event on its own (no run state): kind-specific fields, ranges, cause format,
// ids (a leading '~' is reserved for natural keys).
[[nodiscard]] absl::Status ValidateEvent(const Event& event);

// The attempt an event belongs to: its own (job_started, or a non-zero `attempt`), else
// the latest attempt that started strictly before the event's time (so a resent event
// gets the same attempt, and the same natural key, as when it first arrived).
[[nodiscard]] uint32_t AttemptOf(const RunState& state, const Event& event);

// One event of a run's log and its place in it (the store's seq: arrival order).
struct LoggedEvent {
  int64_t seq = 0;
  Event event;
};

// The run's events in fold order: by time, then attempt (resolved for events without one:
// the latest attempt launched strictly before them), then kind as in EventBefore, then
// arrival. An interruption that names an earlier attempt but is dated after a later
// attempt's launch was filed late with the filing time: it is placed at that attempt's
// latest event (its last sign of life) and keeps its cause and attempt.
//
// Two reports of one launch (job_started with the same `launch`) or of one stop
// (interruptions of the same attempt) from different sources, the training's and the
// scheduler's, are one event, each field from the report that knows it best:
//   - the time: the earlier report's (the scheduler's allocation start is the launch; the
//     first report of a stop is when work stopped);
//   - a launch's restored_step: the training's (the scheduler does not know it);
//   - a stop's cause, planned flag and detail: the scheduler's when it names the cause
//     (node, preemption, time_limit, operator, oom), else the training's when it names one,
//     else the scheduler's; the other report's cause is kept in the detail.
[[nodiscard]] std::vector<LoggedEvent> FoldOrder(std::vector<LoggedEvent> events);

// A job_started whose launch an attempt of the run already has: the other source's report
// of that launch (it may be dated before the run's latest event).
[[nodiscard]] bool ReportsAKnownLaunch(const RunState& state, const Event& event);

// The run folded again from its whole log (after a late event or a retraction): the state
// had the events arrived in fold order. On the first event that does not apply, its
// status, with its seq in `failed_seq`. The result equals a fold of the events applied
// one by one in FoldOrder, so a log delivered late and out of order accounts exactly as
// the time-ordered one.
[[nodiscard]] absl::StatusOr<RunState> Refold(std::vector<LoggedEvent> events, const FoldSettings& settings,
                                              int64_t& failed_seq);

// Whether `event` belongs before the run's latest folded event (an earlier time, or an
// earlier attempt than the run's current one), or is a report of a launch or stop that
// another source may report too (a scheduler's report, or a launch or stop of a run the
// scheduler reports on): then it cannot be applied on top of the state, and the run is
// folded again with it (Refold), where the two reports join.
[[nodiscard]] bool NeedsRefold(const RunState& state, const Event& event);

// Order of events within a batch: time, then attempt (an attempt's events follow its
// job_started at the same instant), then kind (steps before the checkpoint of that step,
// before an interruption, before the finish).
[[nodiscard]] bool EventBefore(const Event& a, const Event& b);

// The run as of `now`: the folded seconds plus the open interval since the latest event,
// charged by the current phase (down, starting, running — with a stall past the usual
// gap). A finished run's clock stops at its finish. `now` before the latest event is
// treated as the latest event.
struct RunSnapshot {
  Phase phase = Phase::kNew;
  uint32_t attempt = 0;
  uint64_t events = 0;
  absl::Time first_time = absl::InfinitePast();
  absl::Time last_time = absl::InfinitePast();
  absl::Time as_of = absl::InfinitePast();
  int64_t step = 0;
  int64_t tokens = 0;
  TimeSeconds seconds;
  double elapsed_seconds = 0;
  double failure_budget_consumed_seconds = 0;
  std::vector<InterruptionCount> interruptions;
  double tokens_per_second = 0;
  double recent_tokens_per_second = 0;
  // Seconds the job was up: startup, productive, capacity, checkpoint, custom, lost, stalled.
  double running_seconds = 0;
  absl::Time last_step_time = absl::InfinitePast();
  double typical_step_gap = 0;
  std::vector<std::string> flags;
  // Slowdowns on the run's own pace (projected over no tokens: the caller, who knows the
  // target, adds tokens_left x excess_seconds_per_token).
  SlowdownReport slowdown;
  double rank_spread = 0, typical_rank_spread = 0;
  std::vector<SpanSeconds> custom_by_kind;
  // The open span ("" none), its start, and when its promise runs out.
  std::string span_kind;
  absl::Time span_start = absl::InfinitePast();
  absl::Time span_promised_until = absl::InfinitePast();
  // The launch's GPUs (0: the plan's fleet).
  uint32_t gpus = 0;
  std::vector<ExclusionWindow> exclusions;
};
[[nodiscard]] RunSnapshot Snapshot(const RunState& state, absl::Time now);

// The cumulative evidence as of `now` (the folded state plus the open interval, from the
// snapshot at `now`), comparable with the samples in `state.evidence`.
[[nodiscard]] EvidenceSample EvidenceNow(const RunState& state, const RunSnapshot& snapshot);

// The startup past which a launch is hung (see kStartupStallMinSeconds).
[[nodiscard]] double StartupStallSeconds(const RunState& state);

// Failure budget consumed by the folded state (no open interval): lost + down_unplanned
// + stalled + startup after an unplanned stop.
[[nodiscard]] double BudgetConsumed(const RunState& state);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_ACCOUNTING_H_
