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
#include "daemon/forecast_scheduler.h"
#include "daemon/run_board.h"
#include "daemon/run_view.h"
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
  void OfferForecastPoint(int64_t run_id, uint64_t version, const storage::ForecastPoint& point);
  // Calls the subscribers of `run`.
  void Notify(const std::string& run);
  // The writer: keeps `run`'s state for the history when its run time has moved on by
  // backfill_spacing past what was kept or simulated (before an event is applied).
  void KeepBackfillState(RunView& run) const;

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

  // The forecaster's thread, its cache of simulations and the backfill states waiting.
  // Constructed with the tracker; started after Recover, stopped first.
  std::unique_ptr<ForecastScheduler> forecasts_;
  // The published views, their watchers and the readers' status.
  std::unique_ptr<RunBoard> board_;

  std::thread writer_;
  std::once_flag stopped_;
};

// Run names: 1-128 characters of A-Z a-z 0-9 . _ - (they become labels and file names).
[[nodiscard]] absl::Status ValidateRunName(const std::string& run);

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_TRACKER_H_
