// What an on-call engineer is paged on, from a run's state (docs/contract.md §7, "A dead
// job is paged"): how long the run has not trained when it should (an outage), and how
// much work a failure now would lose (its checkpoints). Pure: `now` is a parameter.
#ifndef FLIGHTPLAN_FORECAST_OUTAGE_H_
#define FLIGHTPLAN_FORECAST_OUTAGE_H_

#include "absl/time/time.h"
#include "forecast/accounting.h"

namespace flightplan::forecast {

// The least outage that pages, whatever the plan's detect and restart: a relaunch within
// it is routine (a page at once would wake someone for every crash).
inline constexpr double kMinOutageAllowanceSeconds = 15 * 60;

// What the plan allows a relaunch before a person is paged: detect + restart, at least
// kMinOutageAllowanceSeconds.
[[nodiscard]] double OutageAllowanceSeconds(double detect_seconds, double restart_seconds);

struct OutageReport {
  // Seconds without training when the run should train: since its latest unplanned stop
  // while it is down (no relaunch yet); since the plan's start while it never started (0
  // before it). 0 otherwise: running, starting (the launch hang is the stall's business),
  // finished, or down after a planned stop (charged to availability, not paged).
  double seconds = 0;
  absl::Time since = absl::InfinitePast();  // InfinitePast when `seconds` is 0
  double allowance_seconds = 0;
};

[[nodiscard]] OutageReport OutageOf(const RunState& state, absl::Time plan_start, double allowance_seconds,
                                    absl::Time now);

struct CheckpointReport {
  absl::Time last = absl::InfinitePast();  // the latest save; InfinitePast before one
  // Productive seconds since the lineage's newest checkpoint at or before its step (since
  // its start before one): what a failure now would lose.
  double unsaved_work_seconds = 0;
  // The usual time between two saves of one launch (0 until two).
  double observed_interval_seconds = 0;
};

// `snapshot` is Snapshot(state, now): its productive seconds include the open interval.
[[nodiscard]] CheckpointReport CheckpointsOf(const RunState& state, const RunSnapshot& snapshot);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_OUTAGE_H_
