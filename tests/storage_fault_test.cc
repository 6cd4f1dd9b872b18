// The writer under storage faults: a RunStore wrapper injects a failure that aborts the
// whole SQLite transaction (as SQLITE_FULL or an I/O error can), and nothing of the
// group may then be acknowledged, stored, or folded into a run.
#include <sqlite3.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/plan_file.h"
#include "daemon/tracker.h"
#include "daemon/wire.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/event_log.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using testing::StartedAt;
using testing::StepsAt;

// Forwards to a real store; can hold the writer at InsertRun and fail the Nth InsertEvent.
class FaultyStore final : public storage::RunStore {
 public:
  explicit FaultyStore(std::unique_ptr<storage::RunStore> inner) : inner_(std::move(inner)) {}

  void HoldNextInsertRun() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  // Waits until the writer is held inside InsertRun.
  void WaitUntilHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  // The nth InsertEvent from now fails and takes the transaction with it (0: never).
  void FailInsertEvent(int nth) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_in_ = nth;
  }

  absl::Status ForEachRun(const std::function<void(const storage::StoredRun&)>& fn) override {
    return inner_->ForEachRun(fn);
  }
  absl::Status ForEachEventAfter(int64_t after,
                                 const std::function<absl::Status(int64_t, int64_t, const std::string&)>& fn) override {
    return inner_->ForEachEventAfter(after, fn);
  }
  absl::Status Begin() override { return inner_->Begin(); }
  absl::Status Commit() override { return inner_->Commit(); }
  void Rollback() override { inner_->Rollback(); }
  absl::Status Savepoint() override { return inner_->Savepoint(); }
  absl::Status RollbackToSavepoint() override { return inner_->RollbackToSavepoint(); }
  absl::Status ReleaseSavepoint() override { return inner_->ReleaseSavepoint(); }
  bool InTransaction() override { return inner_->InTransaction(); }
  absl::StatusOr<int64_t> InsertRun(const std::string& name, absl::Time now) override {
    std::unique_lock<std::mutex> lock(mu_);
    held_ = hold_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !hold_; });
    held_ = false;
    lock.unlock();
    return inner_->InsertRun(name, now);
  }
  absl::Status InsertPlan(int64_t run, uint32_t rev, const std::string& plan, absl::Time now,
                          absl::Time effective) override {
    return inner_->InsertPlan(run, rev, plan, now, effective);
  }
  absl::StatusOr<storage::EventInsert> InsertEvent(int64_t run, const std::string& key, absl::Time time,
                                                   const std::string& event) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fail_in_ > 0 && --fail_in_ == 0) {
        inner_->Rollback();  // what SQLite does to the transaction on SQLITE_FULL
        return absl::UnavailableError("database or disk is full (injected)");
      }
    }
    return inner_->InsertEvent(run, key, time, event);
  }
  absl::Status ForEachRunEvent(
      int64_t run, const std::function<absl::Status(int64_t, const std::string&, const std::string&)>& fn) override {
    return inner_->ForEachRunEvent(run, fn);
  }
  absl::StatusOr<int64_t> RetractEvents(int64_t run, const std::vector<int64_t>& seqs, absl::Time at,
                                        const std::string& selector, const std::string& reason) override {
    return inner_->RetractEvents(run, seqs, at, selector, reason);
  }
  absl::Status ForEachPlan(int64_t run, const std::function<void(const storage::StoredPlan&)>& fn) override {
    return inner_->ForEachPlan(run, fn);
  }
  absl::Status DeleteForecastPointsAfter(int64_t run, absl::Time t) override {
    return inner_->DeleteForecastPointsAfter(run, t);
  }
  absl::Status SaveSnapshot(int64_t run, int64_t seq, const std::string& state) override {
    return inner_->SaveSnapshot(run, seq, state);
  }
  absl::Status InsertForecastPoint(int64_t run, const storage::ForecastPoint& point) override {
    return inner_->InsertForecastPoint(run, point);
  }
  absl::Status ForEachForecastPoint(int64_t run,
                                    const std::function<void(const storage::ForecastPoint&)>& fn) override {
    return inner_->ForEachForecastPoint(run, fn);
  }
  absl::StatusOr<storage::ForecastHistoryTail> LastForecastPoint(int64_t run) override {
    return inner_->LastForecastPoint(run);
  }
  absl::StatusOr<int64_t> ThinForecastHistory(int64_t run, int64_t keep_at_most) override {
    return inner_->ThinForecastHistory(run, keep_at_most);
  }
  absl::Status SetSnapshotWatermark(int64_t seq) override { return inner_->SetSnapshotWatermark(seq); }
  absl::StatusOr<int64_t> SnapshotWatermark() override { return inner_->SnapshotWatermark(); }
  int64_t DatabaseBytes() override { return inner_->DatabaseBytes(); }

 private:
  std::unique_ptr<storage::RunStore> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  bool held_ = false;
  int fail_in_ = 0;
};

int64_t CountEvents(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &stmt, nullptr);
  sqlite3_step(stmt);
  const int64_t n = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

// A Tracker on a real SQLite file behind a FaultyStore.
class StorageFaults : public ::testing::Test {
 protected:
  void Start(daemon::TrackerOptions options = {}) {
    // The wall clock, with the synthetic run's 2027 dates: no skew bound here.
    options.max_clock_skew = absl::InfiniteDuration();
    path_ = dir_.path() + "/f.db";
    auto sqlite = storage::SqliteStore::Open(path_, storage::Sync::kNormal);
    ASSERT_TRUE(sqlite.ok()) << sqlite.status();
    auto owned = std::make_unique<FaultyStore>(std::move(*sqlite));
    faulty_ = owned.get();
    auto tracker = daemon::Tracker::Start(std::move(owned), &clock_, nullptr, options);
    ASSERT_TRUE(tracker.ok()) << tracker.status();
    tracker_ = std::move(*tracker);
    absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
    ASSERT_TRUE(plan.ok());
    plan_ = *plan;
  }

  std::future<daemon::CreateResult> Create(const std::string& run) {
    auto done = std::make_shared<std::promise<daemon::CreateResult>>();
    EXPECT_TRUE(tracker_
                    ->SubmitCreateRun(run, daemon::PlanInputFromProto(plan_),
                                      [done](daemon::CreateResult r) { done->set_value(r); })
                    .ok());
    return done->get_future();
  }

  std::future<daemon::BatchResult> Submit(std::vector<v1::Event> events) {
    auto done = std::make_shared<std::promise<daemon::BatchResult>>();
    EXPECT_TRUE(
        tracker_
            ->SubmitEvents(daemon::IngestEventsFromProto(events), [done](daemon::BatchResult r) { done->set_value(r); })
            .ok());
    return done->get_future();
  }

  testing::TempDir dir_;
  std::string path_;
  daemon::WallClock clock_;
  FaultyStore* faulty_ = nullptr;
  std::unique_ptr<daemon::Tracker> tracker_;
  v1::Plan plan_;
};

TEST_F(StorageFaults, AnAbortedTransactionAcknowledgesAndKeepsNothingOfItsGroup) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_TRUE(Create("r").get().status.ok());

  // Hold the writer inside another request, so that the next three queue up and land in
  // one group.
  faulty_->HoldNextInsertRun();
  auto blocker = Create("blocker");
  faulty_->WaitUntilHeld();
  auto a = Submit({StartedAt("r", 0, 1, 0)});
  auto b = Submit({StepsAt("r", 100, 10, 100)});
  auto c = Submit({StepsAt("r", 200, 20, 200)});
  faulty_->FailInsertEvent(2);  // b's insert fails and aborts the transaction
  faulty_->Release();
  EXPECT_TRUE(blocker.get().status.ok());  // its own group, committed before the fault
  // a was stored and folded before b's fault aborted the transaction: it is refused too,
  // and so is c, which came after (it must not be committed on its own).
  EXPECT_EQ(a.get().status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(b.get().status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(c.get().status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(tracker_->Find("r")->state.events, 0u);
  EXPECT_EQ(CountEvents(path_), 0);

  // The fault clears; the client's retry is stored and folded.
  auto retry = Submit({StartedAt("r", 0, 1, 0), StepsAt("r", 100, 10, 100), StepsAt("r", 200, 20, 200)});
  const daemon::BatchResult r = retry.get();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 3u);
  EXPECT_EQ(tracker_->Find("r")->state.tokens, 200);
  tracker_->Stop();
  EXPECT_EQ(CountEvents(path_), 3);
}

// Single reports go ahead of stream batches, but cannot starve them: every group that
// finds stream batches waiting takes at least one.
TEST_F(StorageFaults, SingleReportsGoFirstButDoNotStarveStreams) {
  daemon::TrackerOptions options;
  options.max_group_requests = 1;  // one request per group, unless a stream batch waits
  ASSERT_NO_FATAL_FAILURE(Start(options));
  ASSERT_TRUE(Create("live").get().status.ok());
  ASSERT_TRUE(Create("replay").get().status.ok());

  std::mutex mu;
  std::vector<std::string> order;  // completions, in the order the writer made them
  auto note = [&](std::string what) {
    return [&, what](daemon::BatchResult r) {
      EXPECT_TRUE(r.status.ok()) << what << ": " << r.status;
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(what);
    };
  };
  faulty_->HoldNextInsertRun();
  auto blocker = Create("blocker");
  faulty_->WaitUntilHeld();
  // Queued while the writer is held: one stream batch, then twenty single reports.
  ASSERT_TRUE(tracker_
                  ->SubmitEvents(daemon::IngestEventsFromProto(std::vector<v1::Event>{StartedAt("replay", 0, 1, 0)}),
                                 note("stream"), std::make_shared<daemon::OrderedStream>(), 1)
                  .ok());
  ASSERT_TRUE(tracker_
                  ->SubmitEvents(daemon::IngestEventsFromProto(std::vector<v1::Event>{StartedAt("live", 0, 1, 0)}),
                                 note("single 0"))
                  .ok());
  for (int i = 1; i < 20; ++i) {
    ASSERT_TRUE(tracker_
                    ->SubmitEvents(daemon::IngestEventsFromProto(
                                       std::vector<v1::Event>{StepsAt("live", 60.0 * i, 10 * i, 100 * i)}),
                                   note(absl::StrCat("single ", i)))
                    .ok());
  }
  faulty_->Release();
  ASSERT_TRUE(blocker.get().status.ok());
  tracker_->Stop();
  ASSERT_EQ(order.size(), 21u);
  // The first single report goes first (its lane is ahead), the stream batch rides along
  // in the same group rather than waiting for all twenty.
  EXPECT_EQ(order[0], "single 0");
  EXPECT_EQ(order[1], "stream");
}

}  // namespace
}  // namespace flightplan
