// Tracker: the core of flightpland, below the gRPC shell.
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
// the scrape flightplan_forecast_stale and flightplan_forecast_age_seconds. A read that finds its run's simulation stale moves the
// run to the front of the forecaster's queue (still at most one simulation per run per
// forecast_min_interval), so `flightplan status`, which waits up to 2 s for a fresh one,
// usually gets it. Cost: a read never simulates, so 1,000 runs read at once cost 1,000
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
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>  // std::once_flag
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/clock.h"
#include "daemon/forecast_history.h"
#include "exporters/daemon_metrics.h"
#include "flightplan/v1/event.pb.h"
#include "flightplan/v1/plan.pb.h"
#include "flightplan/v1/status.pb.h"
#include "flightplan/v1/tracker.pb.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "planner/plan.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

// An oversized batch's refusal ends with "the limit of N" (N events per batch): clients
// split by it.
inline constexpr char kBatchLimitPrefix[] = "the limit of ";

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
};

// What a run's plan says, fixed per plan revision.
struct RunPlan {
  uint32_t revision = 0;
  v1::Plan plan;
  planner::PlanReport report;
  forecast::ForecastPrior prior;
};

// A run as readers see it; immutable once published.
struct RunView {
  int64_t id = 0;
  std::string name;
  std::shared_ptr<const RunPlan> plan;
  forecast::RunState state;
  int64_t last_seq = 0;                 // seq of the latest event folded
  uint64_t events_since_snapshot = 0;
  uint64_t version = 0;                 // bumps on every change
  // Backfills (TrackerOptions::backfill_spacing): the run time up to which states were
  // kept or simulated, the states kept by the group being written (handed to the
  // forecaster when it is published: empty in a published view), and when its latest
  // events were accepted (the tracker's clock).
  absl::Time backfill_mark = absl::InfinitePast();
  absl::Duration backfill_spacing = absl::ZeroDuration();  // the writer's, for this group
  std::vector<std::shared_ptr<const forecast::RunState>> backfill;
  absl::Time received = absl::InfinitePast();
};

// The batches of one ReportEvents stream form an ordered log: once one is refused, the
// later ones are refused too (ABORTED), so that a client resending from the first refusal
// keeps its events in order. Touched only by the writer thread.
struct OrderedStream {
  bool refused = false;
  uint64_t first_refused = 0;
};

struct BatchResult {
  absl::Status status;  // OK, or why the whole batch was refused (nothing stored)
  uint32_t accepted = 0;
  uint32_t duplicates = 0;
};

// What to retract from a run's log: events by id (an explicit id, or a natural key as
// `flightplan events` shows it), and/or every event dated after a time.
struct RetractSpec {
  std::vector<std::string> ids;
  std::optional<absl::Time> after;
  std::string reason;
  bool dry_run = false;  // say what would go, change nothing
};

struct RetractedEvent {
  int64_t seq = 0;
  std::string key;
  forecast::Event event;
};

struct RetractResult {
  absl::Status status;
  int64_t retraction_id = 0;          // 0 for a dry run
  std::vector<RetractedEvent> events;  // every event retracted, in seq order
};

// A run's plan revisions and launches (GetRun).
struct RunInfo {
  std::string run;
  std::vector<std::shared_ptr<const RunPlan>> plans;  // oldest first; the last is current
  std::vector<absl::Time> plan_created;               // when each revision was stored
  std::vector<std::optional<absl::Time>> plan_effective;  // and from when it governs
  std::vector<forecast::AttemptStart> attempts;       // oldest first (the newest 4,096)
  uint32_t attempt = 0;
  absl::Time latest_event = absl::InfinitePast();
};

// A run's forecast history, oldest first; NOT_FOUND for an unknown run.
using HistoryResult = absl::StatusOr<std::vector<storage::ForecastPoint>>;

struct CreateResult {
  absl::Status status;
  bool created = false;  // false: the run existed with this plan (or the plan was unchanged)
  std::shared_ptr<const RunPlan> plan;
};

class Tracker {
 public:
  // Recovers every run from `store` (snapshots, then the events after them) and starts
  // the writer thread. `clock` and `metrics` (nullable) must outlive the Tracker.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tracker>> Start(
      std::unique_ptr<storage::RunStore> store, Clock* clock, exporters::DaemonMetrics* metrics,
      TrackerOptions options);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Stops the forecaster, refuses new requests (UNAVAILABLE), finishes the queued ones and
  // the pending history points, snapshots every changed run and stops the writer.
  // Idempotent.
  void Stop();

  // Each Submit either refuses at once (the returned status: RESOURCE_EXHAUSTED when the
  // queue is full, UNAVAILABLE when stopping, INVALID_ARGUMENT for a malformed request) and
  // never calls `done`, or returns OK and calls `done` exactly once, after the commit.
  // `stream` (optional) ties the batch to the batches before it on the same stream.
  [[nodiscard]] absl::Status SubmitEvents(std::vector<v1::Event> events,
                                          std::function<void(BatchResult)> done,
                                          std::shared_ptr<OrderedStream> stream = nullptr,
                                          uint64_t sequence = 0);
  [[nodiscard]] absl::Status SubmitCreateRun(std::string run, v1::Plan plan,
                                             std::function<void(CreateResult)> done);
  [[nodiscard]] absl::Status SubmitUpdatePlan(std::string run, v1::Plan plan,
                                              std::function<void(CreateResult)> done);

  // Reads the run's forecast history on the writer thread, after the commit of the group
  // it joins: `done` (on the writer thread) gets every point stored so far. Refuses as the
  // other Submits do, and NOT_FOUND at once for a run that does not exist.
  [[nodiscard]] absl::Status SubmitHistoryRead(std::string run,
                                               std::function<void(HistoryResult)> done);
  // The run's plan revisions and launches, read on the writer thread like the history.
  [[nodiscard]] absl::Status SubmitRunRead(std::string run,
                                           std::function<void(absl::StatusOr<RunInfo>)> done);
  // Retracts events of `run` (see RetractSpec): they move to the retracted log with an
  // audit row, the run is folded again from what remains, and its forecast follows.
  // NOT_FOUND when nothing matches (or an id is unknown); FAILED_PRECONDITION when what
  // remains does not fold (the message names the event that would no longer apply).
  [[nodiscard]] absl::Status SubmitRetract(std::string run, RetractSpec spec,
                                           std::function<void(RetractResult)> done);

  [[nodiscard]] std::shared_ptr<const RunView> Find(const std::string& run) const;
  [[nodiscard]] std::vector<std::shared_ptr<const RunView>> List() const;
  // The run's status now (wall clock, or its latest event with events_clock). NOT_FOUND.
  // Its forecast says how fresh it is (forecast_stale, forecast_as_of, ...); a stale one
  // asks the forecaster to hurry this run.
  [[nodiscard]] absl::StatusOr<v1::RunStatus> Status(const std::string& run) const;
  // The run's forecast under proposed changes (forecast::WhatIf), from its current view, on
  // the calling thread; nothing is stored.
  [[nodiscard]] absl::StatusOr<v1::WhatIfResponse> WhatIf(const v1::WhatIfRequest& request) const;
  [[nodiscard]] v1::RunStatus StatusOf(const RunView& view) const;

  // Calls `fn` (on the writer thread; it must not block) after `run` changes. Returns an
  // id for Unsubscribe.
  uint64_t Subscribe(const std::string& run, std::function<void()> fn);
  void Unsubscribe(uint64_t id);

  [[nodiscard]] size_t QueueDepth() const;
  [[nodiscard]] const TrackerOptions& options() const { return options_; }

 private:
  struct Request;
  struct Group;
  // A forecast the forecaster offers to the run's history; the writer decides.
  struct PendingPoint {
    int64_t run_id = 0;
    uint64_t version = 0;  // of the run view it was simulated from
    storage::ForecastPoint point;
  };
  // A run's state kept by the writer during a backfill, for the forecaster to simulate.
  struct BackfillState {
    int64_t run_id = 0;
    uint64_t version = 0;
    std::shared_ptr<const forecast::RunState> state;
    std::shared_ptr<const RunPlan> plan;
  };
  // The latest simulation of a run, and the plan revision it was made with.
  struct CachedSimulation {
    std::shared_ptr<const forecast::Simulation> sim;
    uint32_t plan_revision = 0;
  };

  Tracker(std::unique_ptr<storage::RunStore> store, Clock* clock,
          exporters::DaemonMetrics* metrics, TrackerOptions options);
  absl::Status Recover();
  absl::Status SubmitPlan(bool update, std::string run, v1::Plan plan,
                          std::function<void(CreateResult)> done);
  absl::Status Submit(std::vector<v1::Event> events, std::function<void(BatchResult)> done,
                      std::shared_ptr<OrderedStream> stream, uint64_t sequence);
  absl::Status Enqueue(std::unique_ptr<Request> request);
  void WriterLoop();
  void ProcessGroup(std::vector<std::unique_ptr<Request>>& requests,
                    std::vector<PendingPoint> points);
  // The group's requests, each under its savepoint; the transaction's status.
  absl::Status ProcessRequests(std::vector<std::unique_ptr<Request>>& requests, Group& group,
                               absl::Status& storage_cause);
  // Stores the candidates ShouldRecord keeps, in the group's transaction.
  absl::Status RecordForecastPoints(const std::vector<PendingPoint>& points, Group& group);
  // Answers history reads and calls every request's completion.
  void Complete(std::vector<std::unique_ptr<Request>>& requests);
  absl::Status ProcessEvents(Request& request, Group& group, BatchResult& result);
  absl::Status ProcessEventsInOrder(Request& request, Group& group, BatchResult& result);
  absl::Status ProcessPlan(Request& request, Group& group, CreateResult& result);
  absl::Status ProcessRetract(Request& request, Group& group, RetractResult& result);
  // The run's whole log from the store (this transaction's inserts included).
  absl::StatusOr<std::vector<forecast::LoggedEvent>> LoadRunEvents(
      int64_t run_id, std::map<int64_t, std::string>* keys = nullptr);
  // Folds `run` again from its whole log (the group snapshots it before the commit); on
  // failure the seq of the event that no longer applies is in `failed_seq`, and the
  // stored event in `failed`.
  absl::Status RefoldRun(RunView& run, Group& group, int64_t& failed_seq, forecast::Event& failed);
  // Takes a state folded again as the run's, to be snapshotted before the commit.
  void AdoptRefold(RunView& run, forecast::RunState state, Group& group);
  // Saves every run changed since its last snapshot and moves the watermark.
  absl::Status SnapshotRuns(Group& group);
  void Publish(Group& group);
  void ForecasterLoop();
  // Simulates `run` now, caches it, offers its point to the history, tells subscribers.
  void SimulateRun(const std::string& run);
  void OfferForecastPoint(int64_t run_id, uint64_t version, const storage::ForecastPoint& point);
  // The writer: keeps `run`'s state for the history when its run time has moved on by
  // backfill_spacing past what was kept or simulated (before an event is applied).
  void KeepBackfillState(RunView& run) const;
  // The forecaster: simulates the states kept for `run` into its history, oldest first,
  // until requests wait for the writer; whether some are left for a later turn.
  bool SimulateBackfill(const std::string& run);
  // `urgent`: a reader found its forecast stale; it goes ahead of the other ready runs.
  void MarkForForecast(const std::string& run, bool urgent = false) const;

  const TrackerOptions options_;
  Clock* const clock_;
  exporters::DaemonMetrics* const metrics_;
  std::unique_ptr<storage::RunStore> store_;  // writer thread only (and Recover, before it)
  uint64_t events_since_round_ = 0;           // writer thread only
  int64_t last_seq_ = 0;                      // writer thread only
  // The end of each run's stored forecast history, by run id; loaded on first use.
  std::map<int64_t, storage::ForecastHistoryTail> history_tails_;  // writer thread only
  // Each retracted run's view version after its latest retraction: forecasts simulated
  // from an older view (the retracted events in it) are not recorded.
  std::map<int64_t, uint64_t> retracted_version_;  // writer thread only

  mutable absl::Mutex queue_mu_;
  absl::CondVar queue_cv_;
  // Two lanes, each bounded by max_queue_requests. Single requests (a unary ReportBatch
  // from a training loop, CreateRun, UpdatePlan) go ahead of stream batches (replays,
  // backfills), so a bulk load does not delay a live job's reports. Order within each
  // lane is kept; a stream's batches all use the bulk lane.
  std::deque<std::unique_ptr<Request>> urgent_ ABSL_GUARDED_BY(queue_mu_);
  std::deque<std::unique_ptr<Request>> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  // Candidate history points from the forecaster, taken by the writer with its next group.
  // Bounded (a writer that far behind drops the newest candidates: thinning drops most).
  std::vector<PendingPoint> pending_points_ ABSL_GUARDED_BY(queue_mu_);

  mutable absl::Mutex runs_mu_;
  std::map<std::string, std::shared_ptr<const RunView>> runs_ ABSL_GUARDED_BY(runs_mu_);

  absl::Mutex subscribers_mu_;
  uint64_t next_subscriber_ ABSL_GUARDED_BY(subscribers_mu_) = 1;
  std::map<uint64_t, std::pair<std::string, std::function<void()>>> subscribers_
      ABSL_GUARDED_BY(subscribers_mu_);

  mutable absl::Mutex forecasts_mu_;
  mutable absl::CondVar forecasts_cv_;
  mutable std::set<std::string> forecast_due_ ABSL_GUARDED_BY(forecasts_mu_);
  mutable std::set<std::string> forecast_urgent_ ABSL_GUARDED_BY(forecasts_mu_);
  std::map<std::string, CachedSimulation> simulations_ ABSL_GUARDED_BY(forecasts_mu_);
  // Backfill states waiting for the forecaster, oldest first, and the run time each run's
  // latest simulation was made at (the writer keeps no state before it).
  std::map<std::string, std::deque<BackfillState>> backfill_ ABSL_GUARDED_BY(forecasts_mu_);
  std::map<std::string, absl::Time> simulated_at_ ABSL_GUARDED_BY(forecasts_mu_);
  // The factor on backfill_spacing while a run's queue has been thinned (1 when absent).
  std::map<std::string, int64_t> backfill_scale_ ABSL_GUARDED_BY(forecasts_mu_);
  // When each run was last simulated (wall time).
  std::map<std::string, absl::Time> last_simulated_;  // forecaster thread only
  bool forecasts_stop_ ABSL_GUARDED_BY(forecasts_mu_) = false;

  std::thread writer_;
  std::thread forecaster_;
  std::once_flag stopped_;
};

// Run names: 1-128 characters of A-Z a-z 0-9 . _ - (they become labels and file names).
[[nodiscard]] absl::Status ValidateRunName(const std::string& run);

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_TRACKER_H_
