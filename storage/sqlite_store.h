// SqliteStore: RunStore on one SQLite file.
//
// WAL journal, a busy timeout, prepared statements cached for the life of the store,
// schema migrations keyed on PRAGMA user_version (applied in one transaction), and
// PRAGMA application_id so that a file that is not ours is refused instead of changed. A
// database newer than this code is refused, never dropped. An advisory lock on
// "<path>.lock" makes a second process on the same file fail at once. Not thread-safe:
// one owner (the daemon's writer thread).
#ifndef FLIGHTPLAN_STORAGE_SQLITE_STORE_H_
#define FLIGHTPLAN_STORAGE_SQLITE_STORE_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "storage/run_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace flightplan::storage {

// synchronous=NORMAL under WAL survives a process crash but may lose the last commits on
// power loss; FULL also survives power loss at an fsync per commit (flightplan_bench: 97-99%
// of NORMAL's throughput on a stream of 1,000-event batches; more for small commits).
enum class Sync { kNormal, kFull };

inline constexpr int32_t kApplicationId = 0x464C504E;  // "FLPN"

// flightpland's default database: $XDG_STATE_HOME/flightplan/flightplan.db, else
// ~/.local/state/flightplan/flightplan.db (works for a first-time user without root).
std::string DefaultDatabasePath();
inline constexpr int kSchemaVersion = 7;

class SqliteStore final : public RunStore {
 public:
  // Opens (creating if absent) and migrates the database at `path`. FAILED_PRECONDITION
  // when the file is not a flightplan database, is newer than this code, or is locked by
  // another process; UNAVAILABLE when it cannot be opened.
  // `max_bytes` > 0 caps the database's size (PRAGMA max_page_count): past it, writes fail
  // as on a full disk.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path, Sync sync,
                                                                         int64_t max_bytes = 0);

  // A consistent copy of the live database at `destination` (SQLite's online backup),
  // taken from a separate connection while the daemon writes. Thread-safe with respect to
  // a running SqliteStore on the same file.
  [[nodiscard]] static absl::Status Backup(const std::string& source, const std::string& destination);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  absl::Status ForEachRun(const std::function<void(const StoredRun&)>& fn) override;
  absl::Status ForEachEventAfter(int64_t after_seq,
                                 const std::function<absl::Status(int64_t, int64_t, const std::string&)>& fn) override;
  absl::Status Begin() override;
  absl::Status Commit() override;
  void Rollback() override;
  absl::Status Savepoint() override;
  absl::Status RollbackToSavepoint() override;
  bool InTransaction() override;
  absl::Status ReleaseSavepoint() override;
  absl::StatusOr<int64_t> InsertRun(const std::string& name, absl::Time now) override;
  absl::Status InsertPlan(int64_t run_id, uint32_t revision, const std::string& plan, absl::Time now,
                          absl::Time effective) override;
  absl::StatusOr<EventInsert> InsertEvent(int64_t run_id, const std::string& key, absl::Time time,
                                          const std::string& event) override;
  absl::Status ForEachRunEvent(
      int64_t run_id, const std::function<absl::Status(int64_t, const std::string&, const std::string&)>& fn) override;
  absl::StatusOr<int64_t> RetractEvents(int64_t run_id, const std::vector<int64_t>& seqs, absl::Time at,
                                        const std::string& selector, const std::string& reason) override;
  absl::Status ForEachPlan(int64_t run_id, const std::function<void(const StoredPlan&)>& fn) override;
  absl::Status DeleteForecastPointsAfter(int64_t run_id, absl::Time t) override;
  absl::Status SaveSnapshot(int64_t run_id, int64_t seq, const std::string& state) override;
  absl::Status InsertForecastPoint(int64_t run_id, const ForecastPoint& point) override;
  absl::Status ForEachForecastPoint(int64_t run_id, const std::function<void(const ForecastPoint&)>& fn) override;
  absl::StatusOr<ForecastHistoryTail> LastForecastPoint(int64_t run_id) override;
  absl::StatusOr<int64_t> ThinForecastHistory(int64_t run_id, int64_t keep_at_most) override;
  absl::Status SetSnapshotWatermark(int64_t seq) override;
  absl::StatusOr<int64_t> SnapshotWatermark() override;
  int64_t DatabaseBytes() override;

  const std::string& path() const { return path_; }
  // Opened read-only (the file or its directory is not writable): reads work, Begin()
  // refuses until the store can reopen read-write.
  bool read_only() const { return read_only_; }

 private:
  class Statement;
  SqliteStore(std::string path, Sync sync, int64_t max_bytes);
  // Locks "<path>.lock": the fd, or -1 when the directory is read-only and has no lock
  // file (nobody can write there either).
  absl::StatusOr<int> TakeLock() const;
  // Opens path_ (read-only when it is not writable), migrates (`check`: PRAGMA
  // quick_check first), prepares the statements. Takes the lock unless it is held.
  absl::Status Connect(bool check);
  void Disconnect(bool release_lock);
  // Reopens (read-write if it can), keeping the lock; at most once a second.
  absl::Status Reconnect();
  // Before each transaction: the file is still the one opened (not removed with its
  // directory, not replaced) and writable. A vanished database is restored from the open
  // connection once its directory exists again; a read-only one is reopened read-write
  // once it is writable. Otherwise UNAVAILABLE, and nothing is written.
  absl::Status CheckWritable();
  absl::Status RestoreVanished();
  // At exit with the database vanished: restore it, or save it under $TMPDIR and say so.
  void Rescue();
  // A consistent copy of this connection's database in `file` (SQLite's backup API).
  absl::Status CopyTo(const std::string& file);
  absl::Status Exec(const char* sql);
  absl::Status Migrate(bool check);
  absl::Status Prepare();

  const std::string path_;
  const Sync sync_;
  const int64_t max_bytes_;
  sqlite3* db_ = nullptr;
  int lock_fd_ = -1;
  bool read_only_ = false;
  uint64_t dev_ = 0, ino_ = 0;  // identity of the file opened
  // Monotonic: a throttle, not a time of day.
  std::chrono::steady_clock::time_point next_reconnect_ = std::chrono::steady_clock::time_point::min();
  std::string reconnect_error_;
  std::unique_ptr<Statement> begin_, commit_, rollback_, savepoint_, rollback_to_, release_, insert_run_, insert_plan_,
      insert_event_, save_snapshot_, page_count_, set_watermark_, get_watermark_, insert_point_, read_points_,
      last_point_, count_points_, thin_points_, existing_event_, run_events_, insert_retraction_, move_retracted_,
      delete_event_, read_plans_, delete_points_after_;
  std::vector<std::unique_ptr<Statement>*> prepared_;  // every slot Prepare() filled
  int64_t next_seq_ = 1;                               // the next event's seq: above every seq stored or retracted
};

}  // namespace flightplan::storage

#endif  // FLIGHTPLAN_STORAGE_SQLITE_STORE_H_
