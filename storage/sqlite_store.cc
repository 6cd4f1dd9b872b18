#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace flightplan::storage {
namespace {

// Each entry moves the schema from version i to i + 1; all pending ones run in one
// transaction that also bumps user_version. Never edit an entry once released: append.
const std::vector<const char*>& Migrations() {
  static const auto* migrations = new std::vector<const char*>{
      // 1: runs, plan revisions, the event log, per-run snapshots.
      "CREATE TABLE runs("
      "  id INTEGER PRIMARY KEY,"
      "  name TEXT NOT NULL UNIQUE,"
      "  created_us INTEGER NOT NULL);"
      "CREATE TABLE plans("
      "  run_id INTEGER NOT NULL REFERENCES runs(id),"
      "  revision INTEGER NOT NULL,"
      "  plan BLOB NOT NULL,"
      "  created_us INTEGER NOT NULL,"
      "  PRIMARY KEY(run_id, revision)) WITHOUT ROWID;"
      "CREATE TABLE events("
      "  seq INTEGER PRIMARY KEY,"
      "  run_id INTEGER NOT NULL REFERENCES runs(id),"
      "  key TEXT NOT NULL,"
      "  time_us INTEGER NOT NULL,"
      "  event BLOB NOT NULL);"
      "CREATE UNIQUE INDEX events_by_key ON events(run_id, key);"
      "CREATE TABLE snapshots("
      "  run_id INTEGER PRIMARY KEY REFERENCES runs(id),"
      "  seq INTEGER NOT NULL,"
      "  state BLOB NOT NULL);"
      // watermark: every run's snapshot covers all of its events with seq <= this.
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
      "INSERT INTO meta(key, value) VALUES('snapshot_watermark', 0);",
      // 2: each run's forecast trajectory, thinned by the writer (docs/contract.md §8). Keyed by
      // time, so a run's points are stored in time order and never two at one as_of.
      "CREATE TABLE forecast_history("
      "  run_id INTEGER NOT NULL REFERENCES runs(id),"
      "  as_of_us INTEGER NOT NULL,"
      "  events INTEGER NOT NULL,"
      "  finish_p10_us INTEGER,"
      "  finish_p50_us INTEGER,"
      "  finish_p90_us INTEGER,"
      "  consumed_seconds REAL NOT NULL,"
      "  projected_at_finish_seconds REAL NOT NULL,"
      "  exhaustion_probability REAL NOT NULL,"
      "  burn_rate REAL NOT NULL,"
      "  finished INTEGER NOT NULL,"
      "  PRIMARY KEY(run_id, as_of_us)) WITHOUT ROWID;",
      // 3: retractions (flightplan retract): an operator's correction, and the events it
      // took out of the log, kept whole with their seq (nothing is deleted for good).
      "CREATE TABLE retractions("
      "  id INTEGER PRIMARY KEY,"
      "  run_id INTEGER NOT NULL REFERENCES runs(id),"
      "  at_us INTEGER NOT NULL,"
      "  selector TEXT NOT NULL,"
      "  reason TEXT NOT NULL);"
      "CREATE TABLE retracted_events("
      "  seq INTEGER PRIMARY KEY,"
      "  retraction_id INTEGER NOT NULL REFERENCES retractions(id),"
      "  run_id INTEGER NOT NULL REFERENCES runs(id),"
      "  key TEXT NOT NULL,"
      "  time_us INTEGER NOT NULL,"
      "  event BLOB NOT NULL);",
      // 4: when each plan revision took effect in the run's time (a revised fleet's rate).
      "ALTER TABLE plans ADD COLUMN effective_us INTEGER;",
      // 5: the run's tokens and wall time by category at each forecast point (the page).
      "ALTER TABLE forecast_history ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN productive_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN checkpoint_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN lost_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN startup_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN down_unplanned_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN down_planned_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN stalled_seconds REAL NOT NULL DEFAULT 0;",
      // 6: what the run's slowdowns had cost at each forecast point (forecast/slowdown.h).
      "ALTER TABLE forecast_history ADD COLUMN slowdown_seconds REAL NOT NULL DEFAULT 0;",
      // 7: the categories of capacity, deliberate work and exclusions (0 in older points).
      "ALTER TABLE forecast_history ADD COLUMN capacity_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN custom_seconds REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE forecast_history ADD COLUMN excluded_seconds REAL NOT NULL DEFAULT 0;",
  };
  return *migrations;
}

absl::Status SqliteError(sqlite3* db, int rc, const std::string& what) {
  const std::string message =
      absl::StrCat(what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), " (sqlite ", rc, ")");
  switch (rc & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PERM:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

// A prepared statement, reset before each use; finalized with the store.
class SqliteStore::Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  static absl::StatusOr<std::unique_ptr<Statement>> Make(sqlite3* db, const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db, rc, absl::StrCat("prepare '", sql, "'"));
    return std::make_unique<Statement>(db, stmt);
  }

  Statement& Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return *this;
  }
  Statement& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& BindReal(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  // An absent time is NULL.
  Statement& BindTime(int i, const std::optional<absl::Time>& t) {
    if (t) {
      sqlite3_bind_int64(stmt_, i, absl::ToUnixMicros(*t));
    } else {
      sqlite3_bind_null(stmt_, i);
    }
    return *this;
  }
  Statement& BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  // Runs to completion (no rows expected).
  absl::Status Run(const char* what) {
    const int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqliteError(db_, rc, what);
    return absl::OkStatus();
  }
  // Steps once: true with a row, false when done.
  absl::StatusOr<bool> Step(const char* what) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, rc, what);
  }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) { return sqlite3_column_double(stmt_, col); }
  std::optional<absl::Time> Time(int col) {
    if (IsNull(col)) return std::nullopt;
    return absl::FromUnixMicros(Int(col));
  }
  bool IsNull(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) {
    const void* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path, Sync sync, int64_t max_bytes) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, sync, max_bytes));
  if (absl::Status st = store->Connect(/*check=*/true); !st.ok()) return st;
  return store;
}

SqliteStore::SqliteStore(std::string path, Sync sync, int64_t max_bytes)
    : path_(std::move(path)), sync_(sync), max_bytes_(max_bytes) {}

namespace {
bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string Directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A file name as an SQLite URI path ("file:" URIs treat ?, # and % specially).
std::string UriPath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '?' || c == '#' || c == '%') {
      absl::StrAppend(&out, "%", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}
}  // namespace

SqliteStore::~SqliteStore() {
  if (db_ != nullptr && !Exists(path_)) Rescue();
  Disconnect(/*release_lock=*/true);
}

absl::StatusOr<int> SqliteStore::TakeLock() const {
  const std::string lock_path = path_ + ".lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
    // A read-only directory: lock the file if it is there. Without it, nobody can write
    // here either, and Connect() opens the database read-only.
    fd = open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return -1;
  }
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open lock file ", lock_path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("database ", path_, " is in use by another flightpland (", lock_path, " is locked)"));
    }
    return absl::UnavailableError(absl::StrCat("cannot lock ", lock_path, ": ", std::strerror(err)));
  }
  return fd;
}

absl::Status SqliteStore::Connect(bool check) {
  if (lock_fd_ < 0) {
    absl::StatusOr<int> fd = TakeLock();
    if (!fd.ok()) return fd.status();
    lock_fd_ = *fd;
  }
  // Not writable (a read-only file system or directory, file modes): open read-only, serve
  // reads, refuse writes until CheckWritable() can reopen read-write. A WAL database with
  // no -wal file has every commit in the main file, and SQLite can read it on a read-only
  // directory only as immutable (it cannot create the -shm index there).
  const bool writable =
      access(Directory(path_).c_str(), W_OK) == 0 && (access(path_.c_str(), W_OK) == 0 || errno == ENOENT);
  int rc;
  if (!writable && Exists(path_) && !Exists(path_ + "-wal")) {
    const std::string uri = absl::StrCat("file:", UriPath(path_), "?immutable=1");
    rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  } else {
    rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  }
  if (rc != SQLITE_OK) {
    absl::Status st = SqliteError(db_, rc, absl::StrCat("cannot open database ", path_));
    Disconnect(/*release_lock=*/false);
    return absl::UnavailableError(st.message());
  }
  read_only_ = !writable || sqlite3_db_readonly(db_, "main") == 1 || lock_fd_ < 0;
  absl::Status st = Migrate(check);
  if (st.ok() && max_bytes_ > 0) {
    const std::string cap = absl::StrCat("PRAGMA max_page_count=", std::max<int64_t>(1, max_bytes_ / 4096));
    st = Exec(cap.c_str());
  }
  if (st.ok()) st = Exec(sync_ == Sync::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  if (st.ok()) st = Prepare();
  struct stat file {};
  if (st.ok() && stat(path_.c_str(), &file) != 0) {
    st = absl::UnavailableError(absl::StrCat("cannot stat ", path_, ": ", std::strerror(errno)));
  }
  if (!st.ok()) {
    Disconnect(/*release_lock=*/false);
    return st;
  }
  dev_ = file.st_dev;
  ino_ = file.st_ino;
  return absl::OkStatus();
}

void SqliteStore::Disconnect(bool release_lock) {
  // Statements first: sqlite3_close refuses while any is alive.
  for (std::unique_ptr<Statement>* s : prepared_) s->reset();
  prepared_.clear();
  if (db_ != nullptr) sqlite3_close(db_);
  db_ = nullptr;
  if (release_lock && lock_fd_ >= 0) {
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

absl::Status SqliteStore::CheckWritable() {
  if (db_ == nullptr) return Reconnect();  // a reconnect failed earlier: try again
  struct stat now {};
  if (stat(path_.c_str(), &now) != 0) {
    const int err = errno;
    if (err != ENOENT && err != ENOTDIR) {
      return absl::UnavailableError(absl::StrCat("cannot check ", path_, ": ", std::strerror(err)));
    }
    const std::string dir = Directory(path_);
    struct stat d {};
    if (stat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode)) {
      return absl::UnavailableError(
          absl::StrCat("database ", path_, " vanished (its directory ", dir,
                       " was removed); writes are refused until the directory exists again, then flightpland "
                       "restores the database into it from its open connection"));
    }
    return RestoreVanished();
  }
  if (now.st_dev != dev_ || now.st_ino != ino_) {
    return absl::UnavailableError(
        absl::StrCat("database ", path_,
                     " was replaced by another file while flightpland had it open; "
                     "writes are refused (they would go to the old file). Restart flightpland to use the new "
                     "one"));
  }
  if (!read_only_) return absl::OkStatus();
  if (access(path_.c_str(), W_OK) != 0 || access(Directory(path_).c_str(), W_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("database ", path_, " is read-only (", std::strerror(errno),
                     "); writes are refused until it and its directory are writable, reads are served"));
  }
  return Reconnect();
}

absl::Status SqliteStore::Reconnect() {
  // At most once a second: a failing reopen is not retried for every write.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_reconnect_) return absl::UnavailableError(reconnect_error_);
  next_reconnect_ = now + std::chrono::seconds(1);
  Disconnect(/*release_lock=*/false);
  absl::Status st = Connect(/*check=*/false);
  if (st.ok() && read_only_) {
    st = absl::UnavailableError(absl::StrCat("database ", path_, " is still read-only"));
  }
  if (!st.ok()) {
    reconnect_error_ = absl::StrCat("cannot reopen database ", path_, ": ", st.message());
    return absl::UnavailableError(reconnect_error_);
  }
  next_reconnect_ = std::chrono::steady_clock::time_point::min();
  std::fprintf(stderr, "flightpland: database %s is writable again\n", path_.c_str());
  return absl::OkStatus();
}

absl::Status SqliteStore::CopyTo(const std::string& file) {
  sqlite3* to = nullptr;
  int rc = sqlite3_open(file.c_str(), &to);
  if (rc == SQLITE_OK) {
    sqlite3_backup* backup = sqlite3_backup_init(to, "main", db_, "main");
    if (backup == nullptr) {
      rc = sqlite3_errcode(to);
    } else {
      rc = sqlite3_backup_step(backup, -1);
      sqlite3_backup_finish(backup);
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
  }
  // The copy commits in rollback-journal mode with synchronous=FULL: it is on disk here.
  absl::Status st = rc == SQLITE_OK ? absl::OkStatus() : SqliteError(to, rc, absl::StrCat("copy into ", file));
  sqlite3_close(to);
  if (!st.ok()) std::remove(file.c_str());
  return st;
}

absl::Status SqliteStore::RestoreVanished() {
  // The open connection still holds every committed page (the unlinked files stay open).
  // Lock the new directory first, so that a daemon started there meanwhile keeps it; copy
  // the database next to its path through the backup API; move it in place unless a file
  // appeared there; make the rename durable; then reopen.
  auto refuse = [&](const std::string& why) {
    return absl::UnavailableError(absl::StrCat("database ", path_, " vanished and cannot be restored yet: ", why));
  };
  // Only the file was deleted: the lock file is still the one this store holds.
  struct stat held {
  }, named{};
  const bool same_lock = lock_fd_ >= 0 && fstat(lock_fd_, &held) == 0 && stat((path_ + ".lock").c_str(), &named) == 0 &&
                         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
  absl::StatusOr<int> lock = same_lock ? absl::StatusOr<int>(lock_fd_) : TakeLock();
  if (!lock.ok()) return refuse(std::string(lock.status().message()));
  if (*lock < 0) return refuse("its directory is not writable");
  const std::string tmp = path_ + ".restoring";
  absl::Status st = CopyTo(tmp);
  if (st.ok() && renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) != 0) {
    st = absl::UnavailableError(errno == EEXIST
                                    ? absl::StrCat("a file appeared at ", path_, "; restart flightpland to use it")
                                    : absl::StrCat("cannot rename ", tmp, ": ", std::strerror(errno)));
    std::remove(tmp.c_str());
  }
  if (!st.ok()) {
    if (!same_lock) close(*lock);
    return refuse(std::string(st.message()));
  }
  if (const int dir = open(Directory(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    fsync(dir);
    close(dir);
  }
  const int64_t bytes = DatabaseBytes();
  // Close the old connection before opening the new file: SQLite does not checkpoint into
  // or remove the -wal and -shm of a database file that was unlinked. Any -wal or -shm left
  // at the path belonged to the old file (only the file was deleted) and its content is in
  // the copy: they go, so that the new connection starts clean.
  if (!same_lock) {
    close(lock_fd_);
    lock_fd_ = *lock;
  }
  Disconnect(/*release_lock=*/false);
  std::remove((path_ + "-wal").c_str());
  std::remove((path_ + "-shm").c_str());
  if (absl::Status opened = Connect(/*check=*/false); !opened.ok()) {
    return absl::UnavailableError(absl::StrCat("restored ", path_, " but cannot reopen it: ", opened.message()));
  }
  std::fprintf(stderr,
               "flightpland: database %s had vanished; restored it (%lld bytes) from the open "
               "connection\n",
               path_.c_str(), static_cast<long long>(bytes));
  return absl::OkStatus();
}

void SqliteStore::Rescue() {
  // Closing now would drop the only copy of a database whose directory was removed.
  if (RestoreVanished().ok()) return;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string file = absl::StrCat(tmpdir && *tmpdir ? tmpdir : "/tmp", "/flightplan-rescued-", getpid(), ".db");
  if (absl::Status st = CopyTo(file); st.ok()) {
    std::fprintf(stderr,
                 "flightpland: database %s vanished and its directory did not come back; saved "
                 "its contents to %s. Move that file to %s before starting again.\n",
                 path_.c_str(), file.c_str(), path_.c_str());
  } else {
    std::fprintf(stderr, "flightpland: database %s vanished and could not be saved: %s\n", path_.c_str(),
                 std::string(st.message()).c_str());
  }
}

absl::Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    absl::Status st = SqliteError(db_, rc, absl::StrCat(path_, ": ", sql));
    sqlite3_free(err);
    return st;
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Migrate(bool check) {
  auto pragma_int = [&](const char* sql) -> absl::StatusOr<int64_t> {
    absl::StatusOr<std::unique_ptr<Statement>> st = Statement::Make(db_, sql);
    if (!st.ok()) return st.status();
    absl::StatusOr<bool> row = (*st)->Step(sql);
    if (!row.ok()) return row.status();
    return *row ? (*st)->Int(0) : 0;
  };
  absl::StatusOr<int64_t> app = pragma_int("PRAGMA application_id");
  if (!app.ok() && app.status().code() == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrCat("cannot read database ", path_, ": ", app.status().message()));
  }
  if (!app.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(path_, " is not a flightplan database (", app.status().message(),
                                                      "); flightpland leaves it untouched. Point --db at a new file."));
  }
  absl::StatusOr<int64_t> tables = pragma_int("SELECT count(*) FROM sqlite_master");
  if (!tables.ok()) return tables.status();
  if (*app != kApplicationId && (*app != 0 || *tables > 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, " is not a flightplan database (application_id ", *app, ", ", *tables,
                     " schema objects); flightpland leaves it untouched. Point --db at a new file."));
  }
  absl::StatusOr<int64_t> version = pragma_int("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path_, " has schema version ", *version,
                                                      ", newer than this flightpland's ", kSchemaVersion,
                                                      "; upgrade flightpland (the database is left as it is)."));
  }
  if (check && *tables > 0) {
    // A damaged file is refused at start rather than discovered mid-run.
    absl::StatusOr<std::unique_ptr<Statement>> quick = Statement::Make(db_, "PRAGMA quick_check");
    if (!quick.ok()) return quick.status();
    absl::StatusOr<bool> row = (*quick)->Step("quick_check");
    const std::string verdict = row.ok() && *row ? (*quick)->Text(0) : "unreadable";
    if (verdict != "ok") {
      return absl::DataLossError(
          absl::StrCat(path_, " is damaged (PRAGMA quick_check: ", verdict.substr(0, 200),
                       "). Restore the latest backup (flightplan backup makes them) and start again; "
                       "the damaged file is left as it is."));
    }
  }
  if (absl::Status st = Exec("PRAGMA busy_timeout=5000"); !st.ok()) return st;
  if (read_only_) {
    if (*version == kSchemaVersion) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("database ", path_, " is read-only and ",
                                               *tables == 0 ? "not created yet" : "needs a schema upgrade",
                                               "; make it and its directory writable"));
  }
  if (absl::Status st = Exec("PRAGMA journal_mode=WAL"); !st.ok()) return st;
  if (*version == kSchemaVersion) return absl::OkStatus();

  if (absl::Status st = Exec("BEGIN IMMEDIATE"); !st.ok()) return st;
  for (int64_t v = *version; v < kSchemaVersion; ++v) {
    if (absl::Status st = Exec(Migrations()[static_cast<size_t>(v)]); !st.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return st;
    }
  }
  const std::string bump =
      absl::StrCat("PRAGMA application_id=", kApplicationId, "; PRAGMA user_version=", kSchemaVersion, ";");
  if (absl::Status st = Exec(bump.c_str()); !st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

// The columns of a forecast point, in PointFromRow's order.
#define FLIGHTPLAN_POINT_COLUMNS                                                       \
  "as_of_us, events, finish_p10_us, finish_p50_us, finish_p90_us, consumed_seconds, "  \
  "projected_at_finish_seconds, exhaustion_probability, burn_rate, finished, tokens, " \
  "productive_seconds, checkpoint_seconds, lost_seconds, startup_seconds, "            \
  "down_unplanned_seconds, down_planned_seconds, stalled_seconds, slowdown_seconds, "  \
  "capacity_seconds, custom_seconds, excluded_seconds"

absl::Status SqliteStore::Prepare() {
  struct Entry {
    std::unique_ptr<Statement>* slot;
    const char* sql;
  };
  const Entry entries[] = {
      {&begin_, "BEGIN"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&savepoint_, "SAVEPOINT request"},
      {&rollback_to_, "ROLLBACK TO request"},
      {&release_, "RELEASE request"},
      {&insert_run_, "INSERT INTO runs(name, created_us) VALUES(?1, ?2)"},
      {&insert_plan_, "INSERT INTO plans(run_id, revision, plan, created_us, effective_us) VALUES(?1, ?2, ?3, ?4, ?5)"},
      {&insert_event_,
       "INSERT INTO events(seq, run_id, key, time_us, event) VALUES(?5, ?1, ?2, ?3, ?4) "
       "ON CONFLICT(run_id, key) DO NOTHING"},
      {&existing_event_, "SELECT event FROM events WHERE run_id = ?1 AND key = ?2"},
      {&run_events_, "SELECT seq, key, event FROM events WHERE run_id = ?1 ORDER BY seq"},
      {&insert_retraction_, "INSERT INTO retractions(run_id, at_us, selector, reason) VALUES(?1, ?2, ?3, ?4)"},
      {&move_retracted_,
       "INSERT INTO retracted_events(seq, retraction_id, run_id, key, time_us, event) "
       "SELECT seq, ?3, run_id, key, time_us, event FROM events WHERE seq = ?1 AND run_id = ?2"},
      {&delete_event_, "DELETE FROM events WHERE seq = ?1 AND run_id = ?2"},
      {&read_plans_, "SELECT revision, plan, created_us, effective_us FROM plans WHERE run_id = ?1 ORDER BY revision"},
      {&delete_points_after_, "DELETE FROM forecast_history WHERE run_id = ?1 AND as_of_us > ?2"},
      {&save_snapshot_,
       "INSERT INTO snapshots(run_id, seq, state) VALUES(?1, ?2, ?3) "
       "ON CONFLICT(run_id) DO UPDATE SET seq = excluded.seq, state = excluded.state"},
      {&set_watermark_, "UPDATE meta SET value = ?1 WHERE key = 'snapshot_watermark'"},
      {&get_watermark_, "SELECT value FROM meta WHERE key = 'snapshot_watermark'"},
      {&page_count_, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"},
      {&insert_point_,
       "INSERT INTO forecast_history(run_id, as_of_us, events, finish_p10_us, finish_p50_us, "
       "  finish_p90_us, consumed_seconds, projected_at_finish_seconds, exhaustion_probability, "
       "  burn_rate, finished, tokens, productive_seconds, checkpoint_seconds, lost_seconds, "
       "  startup_seconds, down_unplanned_seconds, down_planned_seconds, stalled_seconds, slowdown_seconds, "
       "  capacity_seconds, custom_seconds, excluded_seconds) "
       "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
       "  ?21, ?22, ?23 "
       "WHERE NOT EXISTS("
       "  SELECT 1 FROM forecast_history WHERE run_id = ?1 AND as_of_us > ?2) "
       "ON CONFLICT(run_id, as_of_us) DO UPDATE SET events = excluded.events, "
       "  finish_p10_us = excluded.finish_p10_us, finish_p50_us = excluded.finish_p50_us, "
       "  finish_p90_us = excluded.finish_p90_us, consumed_seconds = excluded.consumed_seconds, "
       "  projected_at_finish_seconds = excluded.projected_at_finish_seconds, "
       "  exhaustion_probability = excluded.exhaustion_probability, "
       "  burn_rate = excluded.burn_rate, finished = excluded.finished, tokens = excluded.tokens, "
       "  productive_seconds = excluded.productive_seconds, "
       "  checkpoint_seconds = excluded.checkpoint_seconds, lost_seconds = excluded.lost_seconds, "
       "  startup_seconds = excluded.startup_seconds, "
       "  down_unplanned_seconds = excluded.down_unplanned_seconds, "
       "  down_planned_seconds = excluded.down_planned_seconds, stalled_seconds = excluded.stalled_seconds, "
       "  slowdown_seconds = excluded.slowdown_seconds, capacity_seconds = excluded.capacity_seconds, "
       "  custom_seconds = excluded.custom_seconds, excluded_seconds = excluded.excluded_seconds"},
      {&read_points_, "SELECT " FLIGHTPLAN_POINT_COLUMNS " FROM forecast_history WHERE run_id = ?1 "
                      "ORDER BY as_of_us"},
      {&last_point_, "SELECT " FLIGHTPLAN_POINT_COLUMNS " FROM forecast_history WHERE run_id = ?1 "
                     "ORDER BY as_of_us DESC LIMIT 1"},
      {&count_points_, "SELECT count(*) FROM forecast_history WHERE run_id = ?1"},
      // Every second point (by time) among the oldest ?2, the first one kept.
      {&thin_points_,
       "DELETE FROM forecast_history WHERE run_id = ?1 AND as_of_us IN ("
       "  SELECT as_of_us FROM (SELECT as_of_us, row_number() OVER (ORDER BY as_of_us) AS n"
       "                        FROM forecast_history WHERE run_id = ?1)"
       "  WHERE n % 2 = 0 AND n <= ?2)"},
  };
  for (const Entry& e : entries) {
    absl::StatusOr<std::unique_ptr<Statement>> st = Statement::Make(db_, e.sql);
    if (!st.ok()) return st.status();
    *e.slot = std::move(*st);
    prepared_.push_back(e.slot);
  }
  // Seqs only grow, also past retracted events (kept in retracted_events): SQLite would
  // hand out a deleted largest rowid again, and a reused seq would be skipped by recovery.
  absl::StatusOr<std::unique_ptr<Statement>> top =
      Statement::Make(db_,
                      "SELECT max(COALESCE((SELECT max(seq) FROM events), 0), "
                      "COALESCE((SELECT max(seq) FROM retracted_events), 0))");
  if (!top.ok()) return top.status();
  absl::StatusOr<bool> row = (*top)->Step("read the largest seq");
  if (!row.ok()) return row.status();
  next_seq_ = std::max(next_seq_, (*row ? (*top)->Int(0) : 0) + 1);
  return absl::OkStatus();
}
#undef FLIGHTPLAN_POINT_COLUMNS

std::string DefaultDatabasePath() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state) {
    return std::string(state) + "/flightplan/flightplan.db";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.local/state/flightplan/flightplan.db";
  }
  return "flightplan.db";
}

absl::Status SqliteStore::Backup(const std::string& source, const std::string& destination) {
  sqlite3* from = nullptr;
  sqlite3* to = nullptr;
  auto close = [&] {
    sqlite3_close(from);
    sqlite3_close(to);
  };
  if (int rc = sqlite3_open_v2(source.c_str(), &from, SQLITE_OPEN_READONLY, nullptr); rc != SQLITE_OK) {
    absl::Status st = SqliteError(from, rc, absl::StrCat("cannot open ", source));
    close();
    return st;
  }
  sqlite3_busy_timeout(from, 5000);
  const std::string tmp = destination + ".partial";
  if (int rc = sqlite3_open(tmp.c_str(), &to); rc != SQLITE_OK) {
    absl::Status st = SqliteError(to, rc, absl::StrCat("cannot create ", tmp));
    close();
    return st;
  }
  sqlite3_backup* backup = sqlite3_backup_init(to, "main", from, "main");
  if (backup == nullptr) {
    absl::Status st = SqliteError(to, sqlite3_errcode(to), "backup");
    close();
    return st;
  }
  int rc;
  // All pages in one step: the copy is of one consistent snapshot of the source.
  while ((rc = sqlite3_backup_step(backup, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(50);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    absl::Status st = SqliteError(to, rc, "backup");
    close();
    std::remove(tmp.c_str());
    return st;
  }
  close();
  if (std::rename(tmp.c_str(), destination.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", destination));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::ForEachRun(const std::function<void(const StoredRun&)>& fn) {
  static const char* kSql =
      "SELECT r.id, r.name, p.revision, p.plan, s.seq, s.state FROM runs r "
      "JOIN plans p ON p.run_id = r.id AND "
      "  p.revision = (SELECT MAX(revision) FROM plans WHERE run_id = r.id) "
      "LEFT JOIN snapshots s ON s.run_id = r.id ORDER BY r.id";
  absl::StatusOr<std::unique_ptr<Statement>> st = Statement::Make(db_, kSql);
  if (!st.ok()) return st.status();
  Statement& s = **st;
  while (true) {
    absl::StatusOr<bool> row = s.Step("read runs");
    if (!row.ok()) return row.status();
    if (!*row) break;
    StoredRun run;
    run.id = s.Int(0);
    run.name = s.Text(1);
    run.plan_revision = static_cast<uint32_t>(s.Int(2));
    run.plan = s.Text(3);
    if (!s.IsNull(4)) {
      run.snapshot_seq = s.Int(4);
      run.snapshot = s.Text(5);
    }
    fn(run);
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::ForEachEventAfter(
    int64_t after_seq, const std::function<absl::Status(int64_t, int64_t, const std::string&)>& fn) {
  absl::StatusOr<std::unique_ptr<Statement>> st =
      Statement::Make(db_, "SELECT seq, run_id, event FROM events WHERE seq > ?1 ORDER BY seq");
  if (!st.ok()) return st.status();
  Statement& s = **st;
  s.Bind(1, after_seq);
  while (true) {
    absl::StatusOr<bool> row = s.Step("read events");
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (absl::Status status = fn(s.Int(0), s.Int(1), s.Text(2)); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Begin() {
  if (absl::Status st = CheckWritable(); !st.ok()) return st;
  return begin_->Reset().Run("BEGIN");
}
absl::Status SqliteStore::Commit() {
  absl::Status st = commit_->Reset().Run("COMMIT");
  if (!st.ok() && !sqlite3_get_autocommit(db_)) Rollback();
  return st;
}
void SqliteStore::Rollback() {
  if (db_ != nullptr && !sqlite3_get_autocommit(db_)) rollback_->Reset().Run("ROLLBACK").IgnoreError();
}
absl::Status SqliteStore::Savepoint() {
  if (!InTransaction()) return absl::FailedPreconditionError("SAVEPOINT outside a transaction");
  return savepoint_->Reset().Run("SAVEPOINT");
}
absl::Status SqliteStore::RollbackToSavepoint() {
  if (absl::Status st = rollback_to_->Reset().Run("ROLLBACK TO"); !st.ok()) return st;
  return release_->Reset().Run("RELEASE");
}
bool SqliteStore::InTransaction() { return db_ != nullptr && sqlite3_get_autocommit(db_) == 0; }
absl::Status SqliteStore::ReleaseSavepoint() { return release_->Reset().Run("RELEASE"); }

absl::StatusOr<int64_t> SqliteStore::InsertRun(const std::string& name, absl::Time now) {
  absl::Status st = insert_run_->Reset().Bind(1, name).Bind(2, absl::ToUnixMicros(now)).Run("insert run");
  if (!st.ok()) return st;
  return sqlite3_last_insert_rowid(db_);
}

absl::Status SqliteStore::InsertPlan(int64_t run_id, uint32_t revision, const std::string& plan, absl::Time now,
                                     absl::Time effective) {
  return insert_plan_->Reset()
      .Bind(1, run_id)
      .Bind(2, int64_t{revision})
      .BindBlob(3, plan)
      .Bind(4, absl::ToUnixMicros(now))
      .BindTime(5, effective == absl::InfinitePast() ? std::nullopt : std::optional<absl::Time>(effective))
      .Run("insert plan");
}

absl::StatusOr<EventInsert> SqliteStore::InsertEvent(int64_t run_id, const std::string& key, absl::Time time,
                                                     const std::string& event) {
  absl::Status st = insert_event_->Reset()
                        .Bind(1, run_id)
                        .Bind(2, key)
                        .Bind(3, absl::ToUnixMicros(time))
                        .BindBlob(4, event)
                        .Bind(5, next_seq_)
                        .Run("insert event");
  if (!st.ok()) return st;
  EventInsert out;
  if (sqlite3_changes(db_) != 0) {
    out.seq = next_seq_++;  // a rolled-back transaction leaves a gap: harmless, seqs only order
    return out;
  }
  absl::StatusOr<bool> row = existing_event_->Reset().Bind(1, run_id).Bind(2, key).Step("read event");
  if (!row.ok()) return row.status();
  if (*row) out.existing = existing_event_->Text(0);
  existing_event_->Reset();
  return out;
}

absl::Status SqliteStore::ForEachRunEvent(
    int64_t run_id, const std::function<absl::Status(int64_t, const std::string&, const std::string&)>& fn) {
  Statement& s = run_events_->Reset().Bind(1, run_id);
  absl::Status status;
  while (status.ok()) {
    absl::StatusOr<bool> row = s.Step("read the run's events");
    if (!row.ok()) {
      status = row.status();
      break;
    }
    if (!*row) break;
    status = fn(s.Int(0), s.Text(1), s.Text(2));
  }
  s.Reset();
  return status;
}

absl::StatusOr<int64_t> SqliteStore::RetractEvents(int64_t run_id, const std::vector<int64_t>& seqs, absl::Time at,
                                                   const std::string& selector, const std::string& reason) {
  absl::Status st = insert_retraction_->Reset()
                        .Bind(1, run_id)
                        .Bind(2, absl::ToUnixMicros(at))
                        .Bind(3, selector)
                        .Bind(4, reason)
                        .Run("insert retraction");
  if (!st.ok()) return st;
  const int64_t id = sqlite3_last_insert_rowid(db_);
  for (int64_t seq : seqs) {
    st = move_retracted_->Reset().Bind(1, seq).Bind(2, run_id).Bind(3, id).Run("keep retracted event");
    if (!st.ok()) return st;
    if (sqlite3_changes(db_) != 1) {
      return absl::InternalError(absl::StrCat("event ", seq, " of run ", run_id, " is not stored"));
    }
    st = delete_event_->Reset().Bind(1, seq).Bind(2, run_id).Run("retract event");
    if (!st.ok()) return st;
  }
  return id;
}

absl::Status SqliteStore::ForEachPlan(int64_t run_id, const std::function<void(const StoredPlan&)>& fn) {
  Statement& s = read_plans_->Reset().Bind(1, run_id);
  while (true) {
    absl::StatusOr<bool> row = s.Step("read plans");
    if (!row.ok()) {
      s.Reset();
      return row.status();
    }
    if (!*row) break;
    StoredPlan p;
    p.revision = static_cast<uint32_t>(s.Int(0));
    p.plan = s.Text(1);
    p.created = absl::FromUnixMicros(s.Int(2));
    p.effective = s.Time(3);
    fn(p);
  }
  s.Reset();
  return absl::OkStatus();
}

absl::Status SqliteStore::DeleteForecastPointsAfter(int64_t run_id, absl::Time t) {
  return delete_points_after_->Reset().Bind(1, run_id).Bind(2, absl::ToUnixMicros(t)).Run("delete forecast points");
}

absl::Status SqliteStore::SaveSnapshot(int64_t run_id, int64_t seq, const std::string& state) {
  return save_snapshot_->Reset().Bind(1, run_id).Bind(2, seq).BindBlob(3, state).Run("save snapshot");
}

absl::Status SqliteStore::SetSnapshotWatermark(int64_t seq) {
  return set_watermark_->Reset().Bind(1, seq).Run("set snapshot watermark");
}

absl::StatusOr<int64_t> SqliteStore::SnapshotWatermark() {
  absl::StatusOr<bool> row = get_watermark_->Reset().Step("read snapshot watermark");
  if (!row.ok()) return row.status();
  const int64_t seq = *row ? get_watermark_->Int(0) : 0;
  get_watermark_->Reset();
  return seq;
}

absl::Status SqliteStore::InsertForecastPoint(int64_t run_id, const ForecastPoint& p) {
  absl::Status st = insert_point_->Reset()
                        .Bind(1, run_id)
                        .Bind(2, absl::ToUnixMicros(p.as_of))
                        .Bind(3, static_cast<int64_t>(p.events))
                        .BindTime(4, p.finish_p10)
                        .BindTime(5, p.finish_p50)
                        .BindTime(6, p.finish_p90)
                        .BindReal(7, p.consumed_seconds)
                        .BindReal(8, p.projected_at_finish_seconds)
                        .BindReal(9, p.exhaustion_probability)
                        .BindReal(10, p.burn_rate)
                        .Bind(11, int64_t{p.finished ? 1 : 0})
                        .Bind(12, p.tokens)
                        .BindReal(13, p.seconds[0])
                        .BindReal(14, p.seconds[1])
                        .BindReal(15, p.seconds[2])
                        .BindReal(16, p.seconds[3])
                        .BindReal(17, p.seconds[4])
                        .BindReal(18, p.seconds[5])
                        .BindReal(19, p.seconds[6])
                        .BindReal(20, p.slowdown_seconds)
                        .BindReal(21, p.seconds[7])
                        .BindReal(22, p.seconds[8])
                        .BindReal(23, p.seconds[9])
                        .Run("insert forecast point");
  if (!st.ok()) return st;
  if (sqlite3_changes(db_) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("forecast point as of ", absl::FormatTime(p.as_of),
                     " is before the run's latest one (the history is monotone in time)"));
  }
  return absl::OkStatus();
}

namespace {
// A row of FLIGHTPLAN_POINT_COLUMNS.
template <typename S>
ForecastPoint PointFromRow(S& s) {
  ForecastPoint p;
  p.as_of = absl::FromUnixMicros(s.Int(0));
  p.events = static_cast<uint64_t>(s.Int(1));
  p.finish_p10 = s.Time(2);
  p.finish_p50 = s.Time(3);
  p.finish_p90 = s.Time(4);
  p.consumed_seconds = s.Real(5);
  p.projected_at_finish_seconds = s.Real(6);
  p.exhaustion_probability = s.Real(7);
  p.burn_rate = s.Real(8);
  p.finished = s.Int(9) != 0;
  p.tokens = s.Int(10);
  for (int i = 0; i < 7; ++i) p.seconds[i] = s.Real(11 + i);
  p.slowdown_seconds = s.Real(18);
  for (int i = 7; i < 10; ++i) p.seconds[i] = s.Real(12 + i);
  return p;
}
}  // namespace

absl::Status SqliteStore::ForEachForecastPoint(int64_t run_id, const std::function<void(const ForecastPoint&)>& fn) {
  Statement& s = read_points_->Reset().Bind(1, run_id);
  while (true) {
    absl::StatusOr<bool> row = s.Step("read forecast history");
    if (!row.ok()) {
      s.Reset();
      return row.status();
    }
    if (!*row) break;
    fn(PointFromRow(s));
  }
  s.Reset();
  return absl::OkStatus();
}

absl::StatusOr<ForecastHistoryTail> SqliteStore::LastForecastPoint(int64_t run_id) {
  ForecastHistoryTail tail;
  absl::StatusOr<bool> row = count_points_->Reset().Bind(1, run_id).Step("count forecast history");
  if (!row.ok()) return row.status();
  tail.points = *row ? count_points_->Int(0) : 0;
  count_points_->Reset();
  row = last_point_->Reset().Bind(1, run_id).Step("read forecast history");
  if (!row.ok()) return row.status();
  if (*row) tail.last = PointFromRow(*last_point_);
  last_point_->Reset();
  return tail;
}

absl::StatusOr<int64_t> SqliteStore::ThinForecastHistory(int64_t run_id, int64_t keep_at_most) {
  absl::StatusOr<bool> row = count_points_->Reset().Bind(1, run_id).Step("count forecast history");
  if (!row.ok()) return row.status();
  const int64_t points = *row ? count_points_->Int(0) : 0;
  count_points_->Reset();
  if (points <= keep_at_most) return points;
  absl::Status st = thin_points_->Reset().Bind(1, run_id).Bind(2, points / 2).Run("thin forecast history");
  if (!st.ok()) return st;
  return points - sqlite3_changes(db_);
}

int64_t SqliteStore::DatabaseBytes() {
  if (page_count_ == nullptr) return 0;
  absl::StatusOr<bool> row = page_count_->Reset().Step("page count");
  const int64_t bytes = row.ok() && *row ? page_count_->Int(0) : 0;
  page_count_->Reset();
  return bytes;
}

}  // namespace flightplan::storage
