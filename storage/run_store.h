// RunStore: the durable event log and run registry behind flightpland.
//
// One writer owns a RunStore (it is not thread-safe: the daemon's writer thread is its only
// caller). Writes happen inside Begin()/Commit(); a request that fails midway is undone
// with a savepoint, so a transaction commits only whole requests. Nothing is durable, and
// nothing may be acknowledged, before Commit() returns OK. SqliteStore is the real
// implementation; tests wrap it to inject faults.
#ifndef FLIGHTPLAN_STORAGE_RUN_STORE_H_
#define FLIGHTPLAN_STORAGE_RUN_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace flightplan::storage {

struct StoredRun {
  int64_t id = 0;
  std::string name;
  uint32_t plan_revision = 0;
  std::string plan;          // serialized flightplan.v1.Plan of the latest revision
  int64_t snapshot_seq = 0;  // events with seq <= this are folded into `snapshot`
  std::string snapshot;      // serialized flightplan.v1.RunStateSnapshot, or empty
};

// One point of a run's forecast trajectory (its forecast history): what the daemon forecast
// as of a moment of the run. Finish times outside what a protobuf Timestamp can hold (a run
// that would take millennia) are absent.
struct ForecastPoint {
  absl::Time as_of = absl::UnixEpoch();  // the run's "now" of the forecast
  uint64_t events = 0;                   // the run's events it was made from
  std::optional<absl::Time> finish_p10, finish_p50, finish_p90;
  double consumed_seconds = 0;             // failure budget consumed
  double projected_at_finish_seconds = 0;  // consumed + the median loss still to come
  double exhaustion_probability = 0;
  double burn_rate = 0;
  bool finished = false;
  // The run as it stood (schema 5; 0 in older points): tokens, and the wall time by
  // category (productive, checkpoint, lost, startup, down unplanned, down planned,
  // stalled), for the page's burn-up and time charts.
  int64_t tokens = 0;
  // productive, checkpoint, lost, startup, down_unplanned, down_planned, stalled; then
  // capacity, custom, excluded (schema 7; 0 in older points).
  double seconds[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  // What the run's slowdowns had cost (schema 6; 0 in older points), seconds.
  double slowdown_seconds = 0;
};

// What InsertEvent did: a new event's seq, or (seq 0) the serialized event already stored
// under the key, for the caller to tell a duplicate from a conflicting reuse of the key.
struct EventInsert {
  int64_t seq = 0;
  std::string existing;
};

// One revision of a run's plan, as stored.
struct StoredPlan {
  uint32_t revision = 0;
  std::string plan;  // serialized flightplan.v1.Plan
  absl::Time created = absl::UnixEpoch();
  // The run's time from which it governs the work (its latest event, or the wall clock,
  // when it was stored); absent before the run's first event, and for revisions stored
  // before schema 4.
  std::optional<absl::Time> effective;
};

// The end of a run's stored forecast history.
struct ForecastHistoryTail {
  int64_t points = 0;
  std::optional<ForecastPoint> last;
};

class RunStore {
 public:
  virtual ~RunStore() = default;

  // Every run with its latest plan and snapshot, in id order.
  [[nodiscard]] virtual absl::Status ForEachRun(const std::function<void(const StoredRun&)>& fn) = 0;
  // Every event with seq > after_seq, in seq order: (seq, run id, serialized flightplan.v1.Event).
  [[nodiscard]] virtual absl::Status ForEachEventAfter(
      int64_t after_seq,
      const std::function<absl::Status(int64_t seq, int64_t run_id, const std::string& event)>& fn) = 0;

  [[nodiscard]] virtual absl::Status Begin() = 0;
  [[nodiscard]] virtual absl::Status Commit() = 0;
  virtual void Rollback() = 0;
  // Savepoints inside a transaction: one per request. Savepoint() refuses outside a
  // transaction (it would start one of its own).
  [[nodiscard]] virtual absl::Status Savepoint() = 0;
  [[nodiscard]] virtual absl::Status RollbackToSavepoint() = 0;
  [[nodiscard]] virtual absl::Status ReleaseSavepoint() = 0;
  // Whether a transaction is open: a failed statement (disk full, I/O error) can make
  // SQLite roll back the whole transaction by itself.
  [[nodiscard]] virtual bool InTransaction() = 0;

  [[nodiscard]] virtual absl::StatusOr<int64_t> InsertRun(const std::string& name, absl::Time now) = 0;
  // `effective`: see StoredPlan (InfinitePast: none).
  [[nodiscard]] virtual absl::Status InsertPlan(int64_t run_id, uint32_t revision, const std::string& plan,
                                                absl::Time now, absl::Time effective) = 0;
  // The event's seq; or, when (run_id, key) is already stored, seq 0 and the stored event
  // (nothing written).
  [[nodiscard]] virtual absl::StatusOr<EventInsert> InsertEvent(int64_t run_id, const std::string& key, absl::Time time,
                                                                const std::string& event) = 0;
  // Every event of one run, in seq order: (seq, key, serialized flightplan.v1.Event). Inside a
  // transaction it sees the transaction's own inserts.
  [[nodiscard]] virtual absl::Status ForEachRunEvent(
      int64_t run_id,
      const std::function<absl::Status(int64_t seq, const std::string& key, const std::string& event)>& fn) = 0;
  // Moves the run's events `seqs` out of the event log into the retracted log, under a new
  // retraction (when, what was asked, why), inside the current transaction. Nothing is
  // deleted for good: the retracted log keeps every row. Returns the retraction's id.
  [[nodiscard]] virtual absl::StatusOr<int64_t> RetractEvents(int64_t run_id, const std::vector<int64_t>& seqs,
                                                              absl::Time at, const std::string& selector,
                                                              const std::string& reason) = 0;
  // Every revision of the run's plan, oldest first.
  [[nodiscard]] virtual absl::Status ForEachPlan(int64_t run_id, const std::function<void(const StoredPlan&)>& fn) = 0;
  [[nodiscard]] virtual absl::Status SaveSnapshot(int64_t run_id, int64_t seq, const std::string& state) = 0;

  // Forecast history. A point is appended inside a transaction; one with the as_of of the
  // run's latest point replaces it (a newer forecast of the same moment); one before it is
  // refused (INVALID_ARGUMENT): a run's points are strictly increasing in as_of.
  [[nodiscard]] virtual absl::Status InsertForecastPoint(int64_t run_id, const ForecastPoint& point) = 0;
  // The run's points, oldest first.
  [[nodiscard]] virtual absl::Status ForEachForecastPoint(int64_t run_id,
                                                          const std::function<void(const ForecastPoint&)>& fn) = 0;
  [[nodiscard]] virtual absl::StatusOr<ForecastHistoryTail> LastForecastPoint(int64_t run_id) = 0;
  // When the run holds more than `keep_at_most` points, removes every second one of its
  // older half (the first point stays): a long run keeps its whole trajectory, its past at
  // a coarser grain. Returns the points left.
  [[nodiscard]] virtual absl::StatusOr<int64_t> ThinForecastHistory(int64_t run_id, int64_t keep_at_most) = 0;
  // Removes the run's points as of after `t` (a retraction moved the run's time back).
  [[nodiscard]] virtual absl::Status DeleteForecastPointsAfter(int64_t run_id, absl::Time t) = 0;

  // Every run's snapshot covers all of its events with seq <= the watermark: recovery
  // folds only the events after it. Set in the transaction that saves the snapshots.
  [[nodiscard]] virtual absl::Status SetSnapshotWatermark(int64_t seq) = 0;
  [[nodiscard]] virtual absl::StatusOr<int64_t> SnapshotWatermark() = 0;

  // Bytes of the database file (pages in use, WAL excluded).
  [[nodiscard]] virtual int64_t DatabaseBytes() = 0;
};

}  // namespace flightplan::storage

#endif  // FLIGHTPLAN_STORAGE_RUN_STORE_H_
