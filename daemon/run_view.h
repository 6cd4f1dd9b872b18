// The tracker's domain types: its options, a run's plan revision (RunPlan) and a run as
// readers see it (RunView, immutable once published). Shared by the writer (Tracker), the
// forecaster (ForecastScheduler) and the readers.
#ifndef FLIGHTPLAN_DAEMON_RUN_VIEW_H_
#define FLIGHTPLAN_DAEMON_RUN_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/forecast_history.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "planner/plan.h"

namespace flightplan::daemon {

struct TrackerOptions {
  // Requests waiting for the writer; a full queue refuses with RESOURCE_EXHAUSTED rather
  // than growing (back-pressure to the clients, which retry).
  size_t max_queue_requests = 4096;
  // Events per batch; a larger batch is INVALID_ARGUMENT naming the limit (the client
  // splits it and resends; the queue's RESOURCE_EXHAUSTED means "wait", this "split").
  size_t max_batch_events = 10000;
  // Requests the writer commits in one transaction: more amortises the commit, fewer
  // acknowledges sooner. A group also stops growing at max_group_events events, so that
  // one commit stays short (~25 ms at 200k events/s) for whoever waits behind it.
  size_t max_group_requests = 512;
  size_t max_group_events = 5000;
  // Snapshot every run's state after this many accepted events, so a restart folds at
  // most about this many events.
  uint64_t snapshot_every_events = 20000;
  // "now" of a run is its latest event instead of the wall clock (replays, backfills).
  bool events_clock = false;
  // Time sanity. Under the wall clock, an event dated more than max_clock_skew ahead of
  // now is refused (a host clock that runs fast would count hours that have not
  // happened). Under either clock, an event more than max_event_gap after its run's
  // latest event is refused as a typo (the year 3000 for 2027): longer than any pause a
  // run survives without a new plan. Both INVALID_ARGUMENT / FAILED_PRECONDITION, named.
  absl::Duration max_clock_skew = absl::Minutes(5);
  absl::Duration max_event_gap = absl::Hours(24 * 30);
  // Runs one daemon tracks; creating more is RESOURCE_EXHAUSTED (each run costs memory,
  // a forecast, and a label set in every scrape).
  size_t max_runs = 1000;
  // Distinct interruption causes per run that get their own label value in every scrape;
  // later new causes are summed as "other" on /metrics (the status keeps every cause).
  uint32_t max_label_values = forecast::kDefaultMaxCauses;
  // Forecasts run on their own thread, at most this often per run (a busy run is not
  // simulated per event), and again every `forecast_refresh` on the wall clock (a silent
  // run's forecast moves as time passes).
  absl::Duration forecast_min_interval = absl::Seconds(1);
  absl::Duration forecast_refresh = absl::Seconds(30);
  int forecast_draws = 2000;
  // End crises and slowdowns by the law from the records (forecast/bad_period.h) rather
  // than Gott's D/(D+x): ForecastOptions::bad_period_law, off by default (docs/forecasting.md).
  bool bad_period_law = false;
  // Which forecasts each run's history keeps, and how many.
  HistoryOptions history;
  // Backfills: events that arrive faster than the run's time passed (a replay, `tail
  // --from-start`, a client's spool after an outage) would leave the history a point or
  // two. The writer keeps the run's state every `backfill_spacing` of the run's time the
  // forecaster has not seen, and the forecaster simulates each (`backfill_draws`) into the
  // history before the current state, so the history is what it would have been live. At
  // most `max_backfill_states` wait per run (about 100 KB each at most): past it every
  // other one goes and the run's spacing doubles until they are drained, so the history
  // stays evenly spaced, only coarser. 0 spacing keeps none.
  absl::Duration backfill_spacing = absl::Hours(1);
  int backfill_draws = 500;
  size_t max_backfill_states = 512;
  // And across runs, the bytes the states waiting may hold (forecast::StateBytes): past it,
  // the run with the most waiting is thinned the same way, down to one state each. 0: no cap.
  size_t max_backfill_bytes = size_t{256} << 20;
};

// A plan as the core takes it: its spec, and the bytes the store keeps (the shell's
// deterministic encoding of the plan the client sent; equal bytes, an unchanged plan).
struct PlanInput {
  planner::PlanSpec spec;
  std::string encoded;
};

// What a run's plan says, fixed per plan revision.
struct RunPlan {
  uint32_t revision = 0;
  planner::PlanSpec spec;
  std::string encoded;  // as PlanInput::encoded
  planner::PlanReport report;
  forecast::ForecastPrior prior;
};

// A run as readers see it; immutable once published.
struct RunView {
  int64_t id = 0;
  std::string name;
  std::shared_ptr<const RunPlan> plan;
  forecast::RunState state;
  int64_t last_seq = 0;  // seq of the latest event folded
  uint64_t events_since_snapshot = 0;
  uint64_t version = 0;  // bumps on every change
  // Backfills (TrackerOptions::backfill_spacing): the run time up to which states were
  // kept or simulated, the states kept by the group being written (handed to the
  // forecaster when it is published: empty in a published view), and when its latest
  // events were accepted (the tracker's clock).
  absl::Time backfill_mark = absl::InfinitePast();
  absl::Duration backfill_spacing = absl::ZeroDuration();  // the writer's, for this group
  std::vector<std::shared_ptr<const forecast::RunState>> backfill;
  absl::Time received = absl::InfinitePast();
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_RUN_VIEW_H_
