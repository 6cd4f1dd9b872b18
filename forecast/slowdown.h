// Slowdowns on a run's own pace (docs/contract.md §5, "Slowdowns"): a slow node, thermal
// throttling, a degraded link or a noisy neighbour on the storage leave the run going, slower.
// The run's accounting feeds each productive step interval here; this finds where the time
// per token rose above the run's own sustained pace, by how much, until when, and what it
// cost: the time beyond what the same tokens would have taken at that pace.
//
// The method, in the run's own units (nothing here is tuned to a simulator):
//   - Productive intervals are pooled into bins of at least kSlowdownBinSeconds of work; a
//     bin's pace is log(seconds / tokens). Intervals that are estimates (a stall's expected
//     work, a launch's first report) are not fed, so stalls and restarts do not count as
//     slowness.
//   - The reference is the mean pace of the last kSlowdownReferenceBins bins in the normal
//     state, trimmed of its highest and lowest tenth (robust to a few odd bins, nearly as
//     precise as the mean); the noise is 1.4826 x their median absolute deviation (a robust
//     sigma), at least kSlowdownMinSigma.
//   - A one-sided CUSUM (Page 1954) on the bins' pace above the reference, with allowance
//     k = max(log(1 + kSlowdownMinShift / 2), sigma / 2) and decision interval h =
//     kSlowdownThresholdSigmas x sigma, signals a slowdown. It started at the split of the
//     reference and the evidence into a faster "before" and a slower "after" that best tells
//     them apart (binary segmentation's statistic, over splits no later than where the CUSUM
//     last left zero: a small shift lets the CUSUM touch zero in its first hours); the bins
//     after the split are its evidence and leave the reference.
//     With k = sigma / 2 and h = 6 sigma, Siegmund's approximation gives an in-control run
//     length of about 2,500 bins (26 days of 15-minute bins) between false signals.
//   - While a slowdown is active the reference is frozen, and a second CUSUM tests a return
//     to it (allowance half the slowdown's size); it ended where that CUSUM last left zero.
//   - A change of the tokens per step (a batch ramp) or of the plan's pace (accounting.h:
//     FoldSettings: a phase's end, a revision; the fold calls RestartPace) changes the pace by
//     design: the reference starts again there, and an active slowdown ends.
//
// Pure: no I/O, no clock. A SlowdownState is a value inside RunState, bounded per run.
#ifndef FLIGHTPLAN_FORECAST_SLOWDOWN_H_
#define FLIGHTPLAN_FORECAST_SLOWDOWN_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "forecast/packed_time.h"

namespace flightplan::forecast {

// Productive seconds pooled per bin: enough steps that a bin's pace is steady, short enough
// that a slowdown of hours is seen in hours.
inline constexpr double kSlowdownBinSeconds = 900;
// The smallest slowdown sought: 3% more time per token (the alert's ticket threshold).
inline constexpr double kSlowdownMinShift = 0.03;
// Bins of the reference (48 h of 15-minute bins: its mean's error is then about a tenth of a
// 2% slowdown at 2% noise), and how many before any verdict (2 h).
inline constexpr size_t kSlowdownReferenceBins = 192;
// Bins kept for the throughput ratio's windows (24 h).
inline constexpr size_t kSlowdownRecentBins = 96;
inline constexpr size_t kSlowdownWarmupBins = 8;
inline constexpr double kSlowdownThresholdSigmas = 6;
// The noise of a bin's pace is taken as at least this (0.5%): real step times are never
// steadier, and a smaller sigma would make the test hair-triggered.
inline constexpr double kSlowdownMinSigma = 0.005;
// Bins kept as the evidence of a change not yet decided (the CUSUM above zero); past this
// the oldest are taken as normal (a drift too small to signal).
inline constexpr size_t kSlowdownMaxPendingBins = 512;
// Slow stretches kept (the newest); older ones still count in the totals.
inline constexpr size_t kMaxSlowStretches = 64;

struct PaceBin {
  PackedTime start, end;
  double seconds = 0;  // productive
  double tokens = 0;
  [[nodiscard]] double LogPace() const;  // log(seconds per token)
};

// One slowdown: a stretch of the run slower than its reference pace.
struct SlowStretch {
  absl::Time start;
  absl::Time end = absl::InfiniteFuture();  // while active
  bool active = true;
  double reference_log_pace = 0;  // log(seconds per token) before it
  double seconds = 0;             // productive seconds in it
  double tokens = 0;              // tokens gained in it
  // The node its slowest rank sat on, where step reports named one (forecast/nodes.h:
  // SlowestNodeIn); final once the stretch has ended and been attributed.
  std::string node;
  bool node_final = false;
  // Time per token over the reference's (1.05: 5% slower).
  [[nodiscard]] double Factor() const;
  // The seconds it cost: its time beyond what its tokens took at the reference pace.
  [[nodiscard]] double Cost() const;
};

struct SlowdownState {
  PaceBin bin;                 // filling; tokens == 0 while empty
  std::deque<PaceBin> recent;  // every closed bin of the last kSlowdownRecentBins (ThroughputRatio)
  std::deque<PaceBin> reference;
  std::deque<PaceBin> pending;         // since the CUSUM left zero
  double cusum = 0;                    // up: slower than the reference
  double back_cusum = 0;               // while active: back to the reference
  std::deque<PaceBin> back_pending;    // while active, since back_cusum left zero
  std::vector<SlowStretch> stretches;  // oldest first, at most kMaxSlowStretches
  double evicted_cost = 0;             // cost of stretches dropped from `stretches`
  uint32_t count = 0;                  // stretches ever found
  double tokens_per_step = 0;          // the latest interval's (a change restarts the reference)
  // The reference's trimmed mean and robust sigma, and its bins, as of its latest change
  // (RefreshPaceReference): a status reads them without sorting the bins again.
  double ref_log_pace = 0, ref_sigma = 0;
  size_t ref_bins = 0;
};

// Sets the reference's cached figures from its bins (after a snapshot is restored).
void RefreshPaceReference(SlowdownState& state);

// One productive interval ending at `end`: `seconds` of work that gained `tokens` over
// `steps` steps (0 when unknown).
void AddPace(SlowdownState& state, absl::Time end, double seconds, double tokens, int64_t steps);

// Starts the reference again at `at` (a plan phase, a batch ramp): an active slowdown ends.
void RestartPace(SlowdownState& state, absl::Time at);

// What the status shows. `tokens_left`: tokens still to train, for the cost by the finish
// if the active slowdown continues.
struct SlowdownReport {
  double seconds = 0;                       // cost of every slowdown so far
  absl::Time since = absl::InfinitePast();  // the active one's start, else the latest one's
  absl::Time until = absl::InfinitePast();  // the latest one's end (InfiniteFuture while active)
  double factor = 1;  // the active one's (else the latest one's) time per token over the reference
  bool active = false;
  double projected_seconds = 0;  // `seconds`, plus the active one's excess on the tokens left
  // The active one's excess per token (0 when none is active): projected_seconds =
  // seconds + tokens_left x this.
  double excess_seconds_per_token = 0;
  uint32_t count = 0;
  // The node the active (else the latest) stretch names, "" when none.
  std::string node;
  // The run's own pace (tokens per productive second), 0 until it is known.
  double reference_tokens_per_second = 0;
  // The robust sigma of a bin's log pace (the noise the test allows for).
  double noise = 0;
  // ThroughputRatio over the last 1 h, 6 h and 1 d (kThroughputRatioWindows).
  double throughput_ratio[3] = {0, 0, 0};
};
inline constexpr absl::Duration kThroughputRatioWindows[3] = {absl::Hours(1), absl::Hours(6), absl::Hours(24)};
inline constexpr const char* kThroughputRatioWindowNames[3] = {"1h", "6h", "1d"};
[[nodiscard]] SlowdownReport ReportSlowdown(const SlowdownState& state, double tokens_left, absl::Time now);

// The run's pace over the last `window` of bins against its reference (reference time per
// token / recent time per token: 1 at its own pace, 0.95 when 5% slower); 0 when unknown.
[[nodiscard]] double ThroughputRatio(const SlowdownState& state, absl::Time now, absl::Duration window);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_SLOWDOWN_H_
