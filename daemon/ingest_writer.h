// IngestWriter: the one writer of flightpland's store.
//
// Callers submit requests (create a run, update its plan, a batch of events, a history or
// run read, a retraction) to a bounded queue of two lanes without blocking. The writer
// thread takes them in groups, stores each group in one SQLite transaction (a savepoint
// per request, so a bad request changes nothing), folds the events into each run's
// accounting state, commits, and only then publishes the new views on the RunBoard, hands
// the backfill states to the ForecastScheduler, and calls each request's completion. The
// forecaster's candidate history points come back through the same queue
// (OfferForecastPoint): SQLite has one owner.
//
// Threads: one thread of its own (Start) owns the store and everything marked "writer
// thread only"; Submit*, OfferForecastPoint and QueueDepth may be called from any thread.
// Completions run on the writer thread and must not block.
#ifndef FLIGHTPLAN_DAEMON_INGEST_WRITER_H_
#define FLIGHTPLAN_DAEMON_INGEST_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "daemon/clock.h"
#include "daemon/forecast_history.h"
#include "daemon/forecast_scheduler.h"
#include "daemon/ingest_metrics.h"
#include "daemon/refusal_log.h"
#include "daemon/run_board.h"
#include "daemon/run_view.h"
#include "forecast/accounting.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

// An oversized batch's refusal: INVALID_ARGUMENT whose message ends with "the limit of N"
// for people, and whose payload kBatchLimitPayload holds N in decimal for programs (the
// gRPC shell turns it into the ack's max_batch_events and the trailing metadata
// kBatchLimitMetadata; clients split by it, never by the message).
inline constexpr char kBatchLimitPrefix[] = "the limit of ";
inline constexpr char kBatchLimitPayload[] = "flightplan.dev/max_batch_events";
inline constexpr char kBatchLimitMetadata[] = "flightplan-max-batch-events";
// The limit an oversized batch's refusal carries, or 0.
[[nodiscard]] size_t BatchLimitOf(const absl::Status& status);

// The batches of one ReportEvents stream form an ordered log: once one is refused, the
// later ones are refused too (ABORTED), so that a client resending from the first refusal
// keeps its events in order. Touched only by the writer thread.
struct OrderedStream {
  bool refused = false;
  uint64_t first_refused = 0;
};

// One event as the shell hands it in: decoded (or why it could not be), and the bytes the
// store keeps (the shell's deterministic encoding of the event the client sent). `run`
// and `id` name it in messages, also when it could not be decoded.
struct IngestEvent {
  std::string run;
  std::string id;
  absl::StatusOr<forecast::Event> event = absl::UnknownError("not decoded");
  std::string encoded;
};

struct BatchResult {
  absl::Status status;  // OK, or why the whole batch was refused (nothing stored)
  uint32_t accepted = 0;
  uint32_t duplicates = 0;
  std::vector<std::string> flags;  // flags the batch's events raised on their runs (RunState::flags)
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
  int64_t retraction_id = 0;           // 0 for a dry run
  std::vector<RetractedEvent> events;  // every event retracted, in seq order
};

// A run's plan revisions and launches (GetRun).
struct RunInfo {
  std::string run;
  std::vector<std::shared_ptr<const RunPlan>> plans;      // oldest first; the last is current
  std::vector<absl::Time> plan_created;                   // when each revision was stored
  std::vector<std::optional<absl::Time>> plan_effective;  // and from when it governs
  std::vector<forecast::AttemptStart> attempts;           // oldest first (the newest 4,096)
  uint32_t attempt = 0;
  absl::Time latest_event = absl::InfinitePast();
  // With SubmitRunRead(with_events): the run's log (arrival order) and the fold's settings.
  std::vector<forecast::LoggedEvent> events;
  forecast::FoldSettings settings;
};

// A run's forecast history, oldest first; NOT_FOUND for an unknown run.
using HistoryResult = absl::StatusOr<std::vector<storage::ForecastPoint>>;

struct CreateResult {
  absl::Status status;
  bool created = false;  // false: the run existed with this plan (or the plan was unchanged)
  std::shared_ptr<const RunPlan> plan;
};

// Run names: 1-128 characters of A-Z a-z 0-9 . _ - (they become labels and file names).
[[nodiscard]] absl::Status ValidateRunName(const std::string& run);

class IngestWriter {
 public:
  // `options`, `clock`, `metrics` (nullable), `board` and `forecasts` must outlive it.
  IngestWriter(std::unique_ptr<storage::RunStore> store, const TrackerOptions& options, Clock* clock,
               IngestMetrics* metrics, RunBoard* board, ForecastScheduler* forecasts);
  ~IngestWriter();
  IngestWriter(const IngestWriter&) = delete;
  IngestWriter& operator=(const IngestWriter&) = delete;

  // Every run from the store (snapshots, then the events after them) onto the board;
  // before Start.
  absl::Status Recover();

  // Refused for good: `events` events (0 for a call that carries none) that named `run`,
  // as `kind` (a status code's name, or "UNAUTHENTICATED on RPC"), with the client's
  // message. Counted under the run when this daemon has it (flightplan_ingest_rejected_
  // events_total{run,code}) and said on stderr once per run and kind a minute
  // (RefusalLog). Any thread.
  void NoteRefused(const std::string& run, uint32_t events, absl::StatusCode code, absl::string_view kind,
                   absl::string_view message);
  // The payload of an event batch's refusal that names the run it is about.
  static constexpr char kRefusedRunPayload[] = "flightplan/refused-run";
  void Start();
  // Refuses new requests (UNAVAILABLE), finishes the queued ones and the pending history
  // points, snapshots every changed run and ends the thread. Idempotent.
  void Stop();

  // Each Submit either refuses at once (the returned status: RESOURCE_EXHAUSTED when the
  // queue is full, UNAVAILABLE when stopping, INVALID_ARGUMENT for a malformed request) and
  // never calls `done`, or returns OK and calls `done` exactly once, after the commit.
  // `stream` (optional) ties the batch to the batches before it on the same stream.
  [[nodiscard]] absl::Status SubmitEvents(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                                          std::shared_ptr<OrderedStream> stream = nullptr, uint64_t sequence = 0);
  [[nodiscard]] absl::Status SubmitCreateRun(std::string run, PlanInput plan, std::function<void(CreateResult)> done);
  [[nodiscard]] absl::Status SubmitUpdatePlan(std::string run, PlanInput plan, std::function<void(CreateResult)> done);

  // Reads the run's forecast history on the writer thread, after the commit of the group
  // it joins: `done` (on the writer thread) gets every point stored so far. Refuses as the
  // other Submits do, and NOT_FOUND at once for a run that does not exist.
  [[nodiscard]] absl::Status SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done);
  // The run's plan revisions and launches, read on the writer thread like the history.
  [[nodiscard]] absl::Status SubmitRunRead(std::string run, std::function<void(absl::StatusOr<RunInfo>)> done,
                                           bool with_events = false);
  // Retracts events of `run` (see RetractSpec): they move to the retracted log with an
  // audit row, the run is folded again from what remains, and its forecast follows.
  // NOT_FOUND when nothing matches (or an id is unknown); FAILED_PRECONDITION when what
  // remains does not fold (the message names the event that would no longer apply).
  [[nodiscard]] absl::Status SubmitRetract(std::string run, RetractSpec spec, std::function<void(RetractResult)> done);

  // A forecast offered to the run's history by the forecaster; kept when ShouldRecord
  // says so, in the next group's transaction.
  void OfferForecastPoint(int64_t run_id, uint64_t version, const storage::ForecastPoint& point);
  [[nodiscard]] size_t QueueDepth() const;

 private:
  struct Request;
  struct Group;
  // A forecast the forecaster offers to the run's history; the writer decides.
  struct PendingPoint {
    int64_t run_id = 0;
    uint64_t version = 0;  // of the run view it was simulated from
    storage::ForecastPoint point;
  };
  absl::Status SubmitPlan(bool update, std::string run, PlanInput plan, std::function<void(CreateResult)> done);
  absl::Status Submit(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                      std::shared_ptr<OrderedStream> stream, uint64_t sequence);
  absl::Status Enqueue(std::unique_ptr<Request> request);
  void WriterLoop();
  void ProcessGroup(std::vector<std::unique_ptr<Request>>& requests, std::vector<PendingPoint> points);
  // The group's requests, each under its savepoint; the transaction's status.
  absl::Status ProcessRequests(std::vector<std::unique_ptr<Request>>& requests, Group& group,
                               absl::Status& storage_cause);
  // Stores the candidates ShouldRecord keeps, in the group's transaction.
  absl::Status RecordForecastPoints(const std::vector<PendingPoint>& points, Group& group);
  // Answers history reads and calls every request's completion.
  void Complete(std::vector<std::unique_ptr<Request>>& requests);
  // NoteRefused for a refused event batch: the run its status names (Annotate), else the
  // batch's first event's.
  void NoteRefusedBatch(const absl::Status& st, const std::string& first_run, uint32_t events);
  absl::Status ProcessEvents(Request& request, Group& group, BatchResult& result);
  absl::Status ProcessEventsInOrder(Request& request, Group& group, BatchResult& result);
  absl::Status ProcessPlan(Request& request, Group& group, CreateResult& result);
  absl::Status ProcessRetract(Request& request, Group& group, RetractResult& result);
  // The run's whole log from the store (this transaction's inserts included).
  absl::StatusOr<std::vector<forecast::LoggedEvent>> LoadRunEvents(int64_t run_id,
                                                                   std::map<int64_t, std::string>* keys = nullptr);
  // Folds `run` again from its whole log (the group snapshots it before the commit); on
  // failure the seq of the event that no longer applies is in `failed_seq`, and the
  // stored event in `failed`.
  absl::Status RefoldRun(RunView& run, Group& group, int64_t& failed_seq, forecast::Event& failed);
  // Takes a state folded again as the run's, to be snapshotted before the commit.
  void AdoptRefold(RunView& run, forecast::RunState state, Group& group);
  // Saves every run changed since its last snapshot and moves the watermark.
  absl::Status SnapshotRuns(Group& group);
  void Publish(Group& group);
  // The writer: keeps `run`'s state for the history when its run time has moved on by
  // backfill_spacing past what was kept or simulated (before an event is applied).
  void KeepBackfillState(RunView& run) const;

  const TrackerOptions& options_;
  Clock* const clock_;
  IngestMetrics* const metrics_;
  RefusalLog refusals_{clock_};
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

  RunBoard* const board_;
  ForecastScheduler* const forecasts_;
  std::thread writer_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_INGEST_WRITER_H_
