// Tracker: the core of flightpland, below the gRPC shell. A facade over three parts, one per
// thread: the IngestWriter (the writer thread: the queue, the store, the group commit), the
// RunBoard (any reader's thread: the published views, watchers, statuses) and the
// ForecastScheduler (the forecaster thread: simulations, their cache, backfills).
//
// Data flows one way: callers submit requests (create a run, update its plan, a batch of
// events) to a bounded queue without blocking; one writer thread takes them in groups,
// stores each group in one SQLite transaction (a savepoint per request, so a bad request
// changes nothing), folds the events into each run's accounting state, commits, and only
// then publishes the new run views and calls each request's completion. Readers get
// immutable snapshots (shared_ptr<const RunView>) and never wait for the writer.
//
// Simulations for the finish forecast run on a third thread, throttled per run, and are
// cached; readers combine them with the cheap part of the forecast and never wait for one.
//
// Fresh or labelled: a status (GetStatus, WatchStatus, a scrape) is computed at once from
// the latest state and the cached simulation, which may be behind it. It never hides that:
// the status carries forecast_events, forecast_as_of, forecast_age_seconds and
// forecast_stale (the simulation is older than the events or the plan revision shown), and
// the scrape flightplan_forecast_stale and flightplan_forecast_age_seconds. A read changes nothing: a run that a live
// report (a unary batch, a plan) changed goes to the front of the forecaster's queue, so
// `flightplan status`, which waits up to 2 s for a fresh one, usually gets it; a scrape
// never reorders that queue. Cost: a read never simulates, so 1,000 runs read at once cost 1,000
// cheap ForecastNow calls, not 1,000 simulations.
//
// Forecast history: after each simulation the forecaster hands the run's forecast to the
// writer as a candidate point (pending_points_, drained with the next group); the writer
// keeps it when ShouldRecord (daemon/forecast_history.h) says so and stores it in that
// group's transaction. History reads go through the queue too and are answered by the
// writer after the group's commit: SQLite has one owner, the writer thread. In a backfill
// (TrackerOptions::backfill_spacing) the writer also keeps the run's state at past points
// the forecaster has not seen (RunView::backfill, handed over on publish), and the
// forecaster simulates them into the history before the current state.
//
// Thread-safe: every public method may be called from any thread. Completions run on the
// writer thread, subscriber callbacks on the writer or the forecaster thread; neither may
// block.
#ifndef FLIGHTPLAN_DAEMON_TRACKER_H_
#define FLIGHTPLAN_DAEMON_TRACKER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>  // std::once_flag
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/clock.h"
#include "daemon/forecast_scheduler.h"
#include "daemon/ingest_metrics.h"
#include "daemon/ingest_writer.h"
#include "daemon/run_board.h"
#include "daemon/run_status.h"
#include "daemon/run_view.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

class Tracker {
 public:
  // Recovers every run from `store` (snapshots, then the events after them) and starts
  // the writer thread. `clock` and `metrics` (nullable) must outlive the Tracker.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tracker>> Start(std::unique_ptr<storage::RunStore> store,
                                                                      Clock* clock, IngestMetrics* metrics,
                                                                      TrackerOptions options);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Stops the forecaster, refuses new requests (UNAVAILABLE), finishes the queued ones and
  // the pending history points, snapshots every changed run and stops the writer.
  // Idempotent.
  void Stop();

  // The writer's requests, as IngestWriter documents them (each refuses at once, or calls
  // `done` exactly once, after the commit).
  [[nodiscard]] absl::Status SubmitEvents(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                                          std::shared_ptr<OrderedStream> stream = nullptr, uint64_t sequence = 0);
  [[nodiscard]] absl::Status SubmitCreateRun(std::string run, PlanInput plan, std::function<void(CreateResult)> done);
  [[nodiscard]] absl::Status SubmitUpdatePlan(std::string run, PlanInput plan, std::function<void(CreateResult)> done);
  [[nodiscard]] absl::Status SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done);
  [[nodiscard]] absl::Status SubmitRunRead(std::string run, std::function<void(absl::StatusOr<RunInfo>)> done,
                                           bool with_events = false);
  [[nodiscard]] absl::Status SubmitRetract(std::string run, RetractSpec spec, std::function<void(RetractResult)> done);

  [[nodiscard]] std::shared_ptr<const RunView> Find(const std::string& run) const;
  [[nodiscard]] std::vector<std::shared_ptr<const RunView>> List() const;
  // The run's status now (wall clock, or its latest event with events_clock). NOT_FOUND.
  // Its forecast says how fresh it is (forecast_stale, forecast_as_of, ...).
  [[nodiscard]] absl::StatusOr<RunStatus> Status(const std::string& run) const;
  // The run's latest simulation (nullptr before one): with its view, what a status is
  // built from (watchers of one run share a status while neither changes).
  [[nodiscard]] std::shared_ptr<const forecast::Simulation> LatestSimulation(const std::string& run) const;
  // The run's forecast under proposed changes (forecast::WhatIf), from its current view, on
  // the calling thread; nothing is stored. NOT_FOUND; INVALID_ARGUMENT for a deadline not
  // after the run's now.
  [[nodiscard]] absl::StatusOr<WhatIfAnswer> WhatIf(const WhatIfQuery& query) const;
  [[nodiscard]] RunStatus StatusOf(const RunView& view) const;
  // The node ledger across every run; with `run`, only the nodes that run held or named
  // (NOT_FOUND for an unknown run).
  // The whole ledger is the board's, shared (never copied per read).
  [[nodiscard]] absl::StatusOr<std::shared_ptr<const forecast::NodeLedger>> Nodes(const std::string& run) const;

  // Calls `fn` (on the writer thread; it must not block) after `run` changes. Returns an
  // id for Unsubscribe.
  uint64_t Subscribe(const std::string& run, std::function<void()> fn);
  void Unsubscribe(uint64_t id);

  // A call refused before it reached the core (authentication): counted and logged as
  // IngestWriter::NoteRefused does.
  void NoteRefused(const std::string& run, uint32_t events, absl::StatusCode code, absl::string_view kind,
                   absl::string_view message) {
    writer_->NoteRefused(run, events, code, kind, message);
  }

  [[nodiscard]] size_t QueueDepth() const;
  // The forecaster's work so far and the backfill states waiting for it.
  [[nodiscard]] ForecastScheduler::Stats ForecasterStats() const { return forecasts_->GetStats(); }
  [[nodiscard]] const TrackerOptions& options() const { return options_; }

 private:
  Tracker(std::unique_ptr<storage::RunStore> store, Clock* clock, IngestMetrics* metrics, TrackerOptions options);

  const TrackerOptions options_;
  Clock* const clock_;
  // Constructed in this order, each using those before it: the scheduler reaches the board
  // and the writer through its hooks only when it runs (after Start).
  std::unique_ptr<ForecastScheduler> forecasts_;
  std::unique_ptr<RunBoard> board_;
  std::unique_ptr<IngestWriter> writer_;
  std::once_flag stopped_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_TRACKER_H_
