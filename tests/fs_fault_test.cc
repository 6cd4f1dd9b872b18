// flightpland on a real file system that fails under it: the database directory removed
// while it runs, a read-only directory, a full disk. Each write the fault touches answers
// UNAVAILABLE and names the cause, reads keep working, writes resume once the fault
// clears, and after a restart every acknowledged event is stored exactly once.
//
// Mounts (a read-only bind mount, a small tmpfs) need root: main() moves this process into
// a private mount namespace first, so nothing mounted here is seen outside it or outlives
// it. Without root, the read-only case uses file modes and the disk-full case is skipped.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/event_log.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using testing::Batches;
using testing::DaemonProcess;
using testing::kRun;
using testing::SendBatch;
using testing::StoredKeys;
using testing::TempDir;

const std::string kCli = FLIGHTPLAN_BIN;
const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

// Set by main(): mounts made by this process are private to it.
bool g_private_mounts = false;
std::string g_why_no_mounts;

void CreateRun(const std::string& address) {
  const testing::ProcessResult r = testing::RunProcess({kCli, "--server", address, "create", kFlagship});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Sends batches [from, to) and remembers what was acknowledged; stops at the first refusal
// and returns it (OK when all went through).
grpc::Status SendRange(const std::string& address, const std::vector<v1::EventBatch>& batches, size_t from, size_t to,
                       std::set<std::string>& acknowledged, size_t* next) {
  for (*next = from; *next < to; ++*next) {
    grpc::Status st = SendBatch(address, batches[*next]);
    if (!st.ok()) return st;
    for (const auto& e : batches[*next].events()) acknowledged.insert(e.id());
  }
  return grpc::Status::OK;
}

// After the daemon stopped: every acknowledged event stored exactly once.
void ExpectStoredExactlyOnce(const std::string& db, const std::set<std::string>& acknowledged) {
  int64_t rows = 0;
  const std::set<std::string> stored = StoredKeys(db, &rows);
  EXPECT_EQ(static_cast<size_t>(rows), stored.size()) << "an event stored twice";
  size_t lost = 0;
  for (const std::string& id : acknowledged) lost += stored.count(id) == 0;
  EXPECT_EQ(lost, 0u) << "of " << acknowledged.size() << " acknowledged events";
}

void Stop(DaemonProcess& d) {
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
}

TEST(FsFault, VanishedDirectoryRefusesWritesServesReadsAndIsRestoredWhenItReturns) {
  TempDir dir;
  const std::string state = dir.path() + "/state";
  std::filesystem::create_directories(state);
  const std::string db = state + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 600, 5), 20);
  std::set<std::string> acknowledged;
  size_t next = 0;
  {
    DaemonProcess d(db, dir.path() + "/d.log");
    CreateRun(d.address());
    ASSERT_TRUE(SendRange(d.address(), batches, 0, batches.size() / 2, acknowledged, &next).ok());

    // An operator's `rm -rf` of the state directory: SQLite's open files live on, unlinked,
    // so without a check every later write would be acknowledged into a file that is gone.
    std::filesystem::remove_all(state);
    grpc::Status st = SendBatch(d.address(), batches[next]);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_NE(st.error_message().find("vanished"), std::string::npos) << st.error_message();
    EXPECT_NE(st.error_message().find(state), std::string::npos) << st.error_message();
    EXPECT_EQ(d.Events(), acknowledged.size()) << "reads are served from memory";

    // The directory is back (empty): the database is restored into it from the open
    // connection, and the refused batch goes through when resent.
    std::filesystem::create_directories(state);
    ASSERT_TRUE(SendRange(d.address(), batches, next, batches.size(), acknowledged, &next).ok());
    EXPECT_TRUE(std::filesystem::exists(db));
    EXPECT_NE(d.child().WaitForLog("restored it", 5).find("had vanished"), std::string::npos);
    Stop(d);
  }
  ExpectStoredExactlyOnce(db, acknowledged);
  DaemonProcess again(db, dir.path() + "/again.log");
  EXPECT_EQ(again.Events(), acknowledged.size());
}

TEST(FsFault, ADeletedDatabaseFileIsRestoredAtTheNextWrite) {
  TempDir dir;
  const std::string db = dir.path() + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 400, 9), 20);
  std::set<std::string> acknowledged;
  size_t next = 0;
  {
    DaemonProcess d(db, dir.path() + "/d.log");
    CreateRun(d.address());
    ASSERT_TRUE(SendRange(d.address(), batches, 0, batches.size() / 2, acknowledged, &next).ok());
    // Only the file goes (its -wal and -shm stay, belonging to the deleted file): the
    // directory is there, so the next write restores the database and goes through.
    ASSERT_EQ(std::remove(db.c_str()), 0);
    ASSERT_TRUE(SendRange(d.address(), batches, next, batches.size(), acknowledged, &next).ok());
    EXPECT_NE(d.child().WaitForLog("restored it", 5).find("had vanished"), std::string::npos);
    Stop(d);
  }
  ExpectStoredExactlyOnce(db, acknowledged);
  DaemonProcess again(db, dir.path() + "/again.log");
  EXPECT_EQ(again.Events(), acknowledged.size());
}

TEST(FsFault, AFileReplacedUnderTheDaemonRefusesWrites) {
  TempDir dir;
  const std::string db = dir.path() + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 200, 11), 20);
  std::set<std::string> acknowledged;
  size_t next = 0;
  DaemonProcess d(db, dir.path() + "/d.log");
  CreateRun(d.address());
  ASSERT_TRUE(SendRange(d.address(), batches, 0, 3, acknowledged, &next).ok());
  // Someone moves another file into its place (a restore done while it runs): writes would
  // go to the old, now nameless file, so they are refused.
  const std::string other = dir.path() + "/other.db";
  std::filesystem::copy_file(db, other);
  ASSERT_EQ(std::rename(other.c_str(), db.c_str()), 0);
  grpc::Status st = SendBatch(d.address(), batches[next]);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_NE(st.error_message().find("replaced"), std::string::npos) << st.error_message();
  EXPECT_EQ(d.Events(), acknowledged.size());
}

TEST(FsFault, StoppedWhileTheDirectoryIsGoneTheDatabaseIsSavedAndNamed) {
  TempDir dir;
  const std::string state = dir.path() + "/state";
  std::filesystem::create_directories(state);
  const std::string db = state + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 300, 10), 20);
  std::set<std::string> acknowledged;
  size_t next = 0;
  // Where the daemon saves what it holds (its environment is this process's).
  struct Tmpdir {
    explicit Tmpdir(const std::string& path) { setenv("TMPDIR", path.c_str(), 1); }
    ~Tmpdir() { unsetenv("TMPDIR"); }
  } tmpdir(dir.path());
  DaemonProcess d(db, dir.path() + "/d.log");
  CreateRun(d.address());
  ASSERT_TRUE(SendRange(d.address(), batches, 0, batches.size(), acknowledged, &next).ok());
  std::filesystem::remove_all(state);
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
  const std::string log = d.child().WaitForLog("saved its contents to", 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("saved its contents to (\\S+)\\. Move"))) << log;
  EXPECT_EQ(m[1].str(), absl::StrCat(dir.path(), "/flightplan-rescued-", d.child().pid(), ".db"));
  ExpectStoredExactlyOnce(m[1].str(), acknowledged);
}

// Makes `dir` read-only for the daemon: a read-only bind mount when this process may mount
// (root ignores file modes), else file modes. Undo() makes it writable again.
class ReadOnly {
 public:
  explicit ReadOnly(std::string dir) : dir_(std::move(dir)) {
    if (g_private_mounts) {
      mounted_ = mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
                 mount(nullptr, dir_.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0;
      EXPECT_TRUE(mounted_) << "read-only bind mount of " << dir_ << ": " << std::strerror(errno);
    } else {
      for (const auto& f : std::filesystem::directory_iterator(dir_)) chmod(f.path().c_str(), 0444);
      chmod(dir_.c_str(), 0555);
    }
  }
  ~ReadOnly() { Undo(); }
  void Undo() {
    if (undone_) return;
    undone_ = true;
    if (g_private_mounts) {
      if (mounted_) {
        EXPECT_EQ(umount2(dir_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
      }
    } else {
      chmod(dir_.c_str(), 0755);
      for (const auto& f : std::filesystem::directory_iterator(dir_)) chmod(f.path().c_str(), 0644);
    }
  }

 private:
  std::string dir_;
  bool mounted_ = false;
  bool undone_ = false;
};

TEST(FsFault, ReadOnlyDirectoryServesReadsRefusesWritesAndRecovers) {
  if (!g_private_mounts && geteuid() == 0) {
    GTEST_SKIP() << "root ignores file modes, and a read-only mount is unavailable: " << g_why_no_mounts;
  }
  TempDir dir;
  const std::string state = dir.path() + "/state";
  std::filesystem::create_directories(state);
  const std::string db = state + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 600, 6), 20);
  std::set<std::string> acknowledged;
  size_t next = 0;
  {
    DaemonProcess d(db, dir.path() + "/first.log");
    CreateRun(d.address());
    ASSERT_TRUE(SendRange(d.address(), batches, 0, batches.size() / 2, acknowledged, &next).ok());
    Stop(d);
  }
  ReadOnly read_only(state);
  {
    // Started on a read-only directory (a file system remounted read-only after disk
    // errors, a wrong ReadOnlyPaths=): it starts, says so, and serves what is stored.
    DaemonProcess d(db, dir.path() + "/ro.log");
    ASSERT_FALSE(d.address().empty()) << "the daemon did not start on a read-only directory";
    EXPECT_NE(d.child().WaitForLog("read-only", 1).find("refusing writes"), std::string::npos);
    EXPECT_EQ(d.Events(), acknowledged.size());
    grpc::Status st = SendBatch(d.address(), batches[next]);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_NE(st.error_message().find("read-only"), std::string::npos) << st.error_message();
    EXPECT_EQ(d.Events(), acknowledged.size()) << "a refused batch changed the run";

    read_only.Undo();
    const grpc::Status resent = SendRange(d.address(), batches, next, batches.size(), acknowledged, &next);
    ASSERT_TRUE(resent.ok()) << resent.error_message();
    EXPECT_EQ(d.Events(), acknowledged.size());
    Stop(d);
  }
  ExpectStoredExactlyOnce(db, acknowledged);
}

TEST(FsFault, FullDiskRefusesWritesServesReadsAndRecoversWhenSpaceReturns) {
  if (!g_private_mounts) GTEST_SKIP() << "a real full disk needs a tmpfs mount: " << g_why_no_mounts;
  TempDir dir;
  const std::string state = dir.path() + "/state";
  std::filesystem::create_directories(state);
  // A 1 MiB file system: full after some thousands of events.
  ASSERT_EQ(mount("tmpfs", state.c_str(), "tmpfs", 0, "size=1m"), 0) << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{state};
  const std::string db = state + "/flightplan.db";
  const std::vector<v1::EventBatch> batches = Batches(testing::SyntheticRun(kRun, 20000, 8), 50);
  std::set<std::string> acknowledged;
  size_t next = 0;
  {
    DaemonProcess d(db, dir.path() + "/d.log");
    CreateRun(d.address());
    grpc::Status st = SendRange(d.address(), batches, 0, batches.size(), acknowledged, &next);
    ASSERT_LT(next, batches.size()) << "1 MiB held " << acknowledged.size() << " events";
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_NE(st.error_message().find("full"), std::string::npos) << st.error_message();
    EXPECT_GT(acknowledged.size(), 100u);
    EXPECT_EQ(d.Events(), acknowledged.size()) << "reads are served, the refused batch left no trace";

    // Space returns (the file system grows, as when an operator frees a disk).
    ASSERT_EQ(mount(nullptr, state.c_str(), nullptr, MS_REMOUNT, "size=64m"), 0) << std::strerror(errno);
    ASSERT_TRUE(SendRange(d.address(), batches, next, batches.size(), acknowledged, &next).ok());
    EXPECT_EQ(d.Events(), acknowledged.size());
    Stop(d);
  }
  ExpectStoredExactlyOnce(db, acknowledged);
  DaemonProcess again(db, dir.path() + "/again.log");
  EXPECT_EQ(again.Events(), acknowledged.size());
}

}  // namespace
}  // namespace flightplan

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Before any thread exists (unshare refuses a process whose threads share its mounts).
  if (geteuid() != 0) {
    flightplan::g_why_no_mounts = "not root";
  } else if (unshare(CLONE_NEWNS) != 0) {
    flightplan::g_why_no_mounts = absl::StrCat("unshare(CLONE_NEWNS): ", std::strerror(errno));
  } else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    flightplan::g_why_no_mounts = absl::StrCat("making / private: ", std::strerror(errno));
  } else {
    flightplan::g_private_mounts = true;
  }
  return RUN_ALL_TESTS();
}
