// Forecast history: which forecasts a run keeps (daemon/forecast_history.h), and the
// SQLite table that keeps them (storage/sqlite_store.cc, schema version 2), on real files.
#include <sqlite3.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/forecast_history.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using daemon::HistoryOptions;
using daemon::ShouldRecord;
using storage::ForecastPoint;
using testing::TempDir;

const absl::Time kT0 = absl::FromUnixSeconds(1798848000);  // 2027-01-01

// A point `minutes` into the run, 50 days before its P50 finish plus `p50_shift_hours`.
ForecastPoint At(double minutes, uint64_t events, double p50_shift_hours = 0, double exhausted = 0.2,
                 bool finished = false) {
  ForecastPoint p;
  p.as_of = kT0 + absl::Minutes(minutes);
  p.events = events;
  p.finish_p10 = kT0 + absl::Hours(24 * 45);
  p.finish_p50 = kT0 + absl::Hours(24 * 50 + p50_shift_hours);
  p.finish_p90 = kT0 + absl::Hours(24 * 58);
  p.consumed_seconds = 3600 + minutes;
  p.projected_at_finish_seconds = 40000;
  p.exhaustion_probability = exhausted;
  p.burn_rate = 1.1;
  p.finished = finished;
  return p;
}

TEST(ForecastHistoryPolicy, KeepsAPointPerTenMinutesLargeMovesAndTheFinish) {
  const HistoryOptions options;  // 10 min; moves: 1% of the time to P50 and a tenth of the
                                 // band, or 0.1 of P(exhausted)
  const ForecastPoint last = At(0, 100);
  // 50 days to P50: 1% is 12 h.
  struct Case {
    const char* what;
    std::optional<ForecastPoint> last;
    ForecastPoint next;
    bool keep;
  } cases[] = {
      {"the first point of a run with events", std::nullopt, At(0, 1), true},
      {"never one of a run without events", std::nullopt, At(0, 0), false},
      {"9 minutes later, nothing moved", last, At(9, 150), false},
      {"10 minutes later", last, At(10, 160), true},
      {"before the latest: never", last, At(-5, 200, 100), false},
      {"same moment, not finished", last, At(0, 120, 100), false},
      // The band is 13 days: a tenth of it is 31.2 h.
      {"P50 moved 32 h (> 1% of 50 days, > a tenth of the band) after 2 min", last, At(2, 130, 32), true},
      {"P50 moved 13 h (> 1%, but inside the Monte Carlo noise)", last, At(2, 130, 13), false},
      {"P50 moved 11 h (< 1%) after 2 minutes", last, At(2, 130, -11), false},
      {"a large move, but 30 s after the latest", last, At(0.5, 130, 48), false},
      {"P(exhausted) +0.1 after 2 minutes", last, At(2, 130, 0, 0.3), true},
      {"P(exhausted) +0.05 after 2 minutes", last, At(2, 130, 0, 0.25), false},
      {"finished, 1 minute later", last, At(1, 140, 0, 0.2, true), true},
      {"finished at the latest's moment, with more events", last, At(0, 101, 0, 0.2, true), true},
      {"nothing after the finished point", At(0, 100, 0, 0.2, true), At(600, 100, 0, 0.2, true), false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShouldRecord(c.last, c.next, options), c.keep) << c.what;
  }
}

TEST(ForecastHistoryPolicy, PointOfAForecastLeavesOutUnrepresentableFinishes) {
  forecast::Forecast f;
  f.as_of = kT0;
  f.events = 7;
  f.finish_p10 = kT0 + absl::Hours(1);
  f.finish_p50 = kT0 + absl::Hours(2);
  f.finish_p90 = absl::InfiniteFuture();  // a run that would take forever at its rate
  f.consumed_seconds = 5;
  f.burn_rate = 2;
  const ForecastPoint p = daemon::PointFromForecast(f);
  EXPECT_EQ(p.as_of, kT0);
  EXPECT_EQ(p.events, 7u);
  EXPECT_EQ(p.finish_p50, kT0 + absl::Hours(2));
  EXPECT_FALSE(p.finish_p90.has_value());
  EXPECT_EQ(p.burn_rate, 2);
}

class ForecastHistoryStore : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<storage::SqliteStore>> s = storage::SqliteStore::Open(path_, storage::Sync::kNormal);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  int64_t NewRun(const std::string& name) {
    EXPECT_TRUE(store_->Begin().ok());
    absl::StatusOr<int64_t> id = store_->InsertRun(name, kT0);
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(store_->InsertPlan(*id, 1, "plan", kT0, kT0).ok());
    EXPECT_TRUE(store_->Commit().ok());
    return *id;
  }
  std::vector<ForecastPoint> Read(int64_t run) {
    std::vector<ForecastPoint> out;
    EXPECT_TRUE(store_->ForEachForecastPoint(run, [&](const ForecastPoint& p) { out.push_back(p); }).ok());
    return out;
  }

  TempDir dir_;
  std::string path_ = dir_.path() + "/history.db";
  std::unique_ptr<storage::SqliteStore> store_;
};

TEST_F(ForecastHistoryStore, PointsComeBackInTimeOrderPerRunAndSurviveAReopen) {
  const int64_t a = NewRun("a"), b = NewRun("b");
  ASSERT_TRUE(store_->Begin().ok());
  ForecastPoint unbounded = At(0, 10);
  unbounded.finish_p90.reset();
  ASSERT_TRUE(store_->InsertForecastPoint(a, unbounded).ok());
  ASSERT_TRUE(store_->InsertForecastPoint(b, At(5, 3)).ok());
  ASSERT_TRUE(store_->InsertForecastPoint(a, At(10, 20, 2.5, 0.4)).ok());
  ASSERT_TRUE(store_->InsertForecastPoint(a, At(20, 30, 0, 0.1, true)).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Open();
  const std::vector<ForecastPoint> points = Read(a);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].as_of, kT0);
  EXPECT_FALSE(points[0].finish_p90.has_value());
  EXPECT_EQ(points[1].events, 20u);
  EXPECT_EQ(points[1].finish_p50, kT0 + absl::Hours(24 * 50 + 2.5));
  EXPECT_DOUBLE_EQ(points[1].exhaustion_probability, 0.4);
  EXPECT_DOUBLE_EQ(points[1].consumed_seconds, 3610);
  EXPECT_DOUBLE_EQ(points[1].burn_rate, 1.1);
  EXPECT_DOUBLE_EQ(points[1].projected_at_finish_seconds, 40000);
  EXPECT_TRUE(points[2].finished);
  EXPECT_EQ(Read(b).size(), 1u);
  absl::StatusOr<storage::ForecastHistoryTail> tail = store_->LastForecastPoint(a);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->points, 3);
  ASSERT_TRUE(tail->last.has_value());
  EXPECT_EQ(tail->last->as_of, kT0 + absl::Minutes(20));
  tail = store_->LastForecastPoint(NewRun("empty"));
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->points, 0);
  EXPECT_FALSE(tail->last.has_value());
}

TEST_F(ForecastHistoryStore, IsMonotoneInTimeAndTheSameMomentReplacesTheLatest) {
  const int64_t a = NewRun("a");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertForecastPoint(a, At(10, 10)).ok());
  const absl::Status earlier = store_->InsertForecastPoint(a, At(5, 11));
  EXPECT_EQ(earlier.code(), absl::StatusCode::kInvalidArgument) << earlier;
  EXPECT_TRUE(store_->InTransaction());  // a refused point does not end the transaction
  ASSERT_TRUE(store_->InsertForecastPoint(a, At(10, 12, 0, 0.2, true)).ok());
  ASSERT_TRUE(store_->Commit().ok());
  const std::vector<ForecastPoint> points = Read(a);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].events, 12u);
  EXPECT_TRUE(points[0].finished);
}

TEST_F(ForecastHistoryStore, ThinningHalvesTheOlderHalfAndKeepsTheFirstAndTheLatest) {
  const int64_t a = NewRun("a");
  ASSERT_TRUE(store_->Begin().ok());
  for (int i = 0; i < 101; ++i) ASSERT_TRUE(store_->InsertForecastPoint(a, At(10.0 * i, i + 1)).ok());
  absl::StatusOr<int64_t> left = store_->ThinForecastHistory(a, 101);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, 101);  // at the bound: nothing to do
  left = store_->ThinForecastHistory(a, 100);
  ASSERT_TRUE(left.ok()) << left.status();
  ASSERT_TRUE(store_->Commit().ok());
  // The oldest 50 lose every second point (25); the newest 51 stay.
  EXPECT_EQ(*left, 76);
  const std::vector<ForecastPoint> points = Read(a);
  ASSERT_EQ(points.size(), 76u);
  EXPECT_EQ(points.front().events, 1u);
  EXPECT_EQ(points[1].events, 3u);
  EXPECT_EQ(points.back().events, 101u);
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i - 1].as_of, points[i].as_of);
}

// Schema 5: a point keeps the run's tokens and time by category; a schema-4 point reads
// back with zeros.
TEST_F(ForecastHistoryStore, PointsKeepTokensAndTimeByCategory) {
  const int64_t a = NewRun("a");
  storage::ForecastPoint p = At(0, 1);
  p.tokens = 123456789012;
  for (int i = 0; i < 7; ++i) p.seconds[i] = 10.5 * (i + 1);
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertForecastPoint(a, p).ok());
  ASSERT_TRUE(store_->Commit().ok());
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  // What flightpland 4 wrote: no such columns yet.
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO forecast_history(run_id, as_of_us, events, consumed_seconds, "
                         "projected_at_finish_seconds, exhaustion_probability, burn_rate, finished) "
                         "VALUES(1, 9999999999999999, 2, 0, 0, 0, 0, 0)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Open();
  const std::vector<storage::ForecastPoint> points = Read(a);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].tokens, 123456789012);
  for (int i = 0; i < 7; ++i) EXPECT_DOUBLE_EQ(points[0].seconds[i], 10.5 * (i + 1));
  EXPECT_EQ(points[1].tokens, 0);
  EXPECT_DOUBLE_EQ(points[1].seconds[0], 0);
}

TEST_F(ForecastHistoryStore, ADatabaseOfSchemaOneGainsTheTableAndKeepsItsRuns) {
  const int64_t a = NewRun("a");
  store_.reset();
  // What a flightpland before the history left: schema 1, no forecast_history.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE forecast_history; DROP TABLE retracted_events; DROP TABLE retractions; "
                         "ALTER TABLE plans DROP COLUMN effective_us; "
                         "PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Open();
  int runs = 0;
  ASSERT_TRUE(store_->ForEachRun([&](const storage::StoredRun& r) { runs += r.name == "a"; }).ok());
  EXPECT_EQ(runs, 1);
  ASSERT_TRUE(store_->Begin().ok());
  storage::ForecastPoint point = At(0, 1);
  point.slowdown_seconds = 42.5;  // schema 6's column, added by the migration
  point.seconds[7] = 1.5;         // schema 7's capacity, custom and excluded
  point.seconds[8] = 2.5;
  point.seconds[9] = 3.5;
  EXPECT_TRUE(store_->InsertForecastPoint(a, point).ok());
  ASSERT_TRUE(store_->Commit().ok());
  ASSERT_EQ(Read(a).size(), 1u);
  EXPECT_EQ(Read(a)[0].slowdown_seconds, 42.5);
  EXPECT_EQ(Read(a)[0].seconds[7], 1.5);
  EXPECT_EQ(Read(a)[0].seconds[8], 2.5);
  EXPECT_EQ(Read(a)[0].seconds[9], 3.5);
  store_.reset();
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), storage::kSchemaVersion);
  EXPECT_EQ(storage::kSchemaVersion, 7);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// The figure behind "~83 bytes per point" (daemon/forecast_history.h, docs/tracker.md).
TEST_F(ForecastHistoryStore, APointCostsUnderAHundredBytes) {
  const int64_t a = NewRun("a");
  const int64_t before = store_->DatabaseBytes();
  constexpr int kPoints = 20000;
  ASSERT_TRUE(store_->Begin().ok());
  for (int i = 0; i < kPoints; ++i) {
    ASSERT_TRUE(store_->InsertForecastPoint(a, At(10.0 * i, 100 + 7 * i, i * 0.01, 0.2 + i * 1e-5)).ok());
  }
  ASSERT_TRUE(store_->Commit().ok());
  const double per_point = static_cast<double>(store_->DatabaseBytes() - before) / kPoints;
  std::printf("forecast history: %.1f bytes per point, %.2f MB for %d points\n", per_point, per_point * kPoints / 1e6,
              kPoints);
  EXPECT_GT(per_point, 40);
  EXPECT_LT(per_point, 100);
}

}  // namespace
}  // namespace flightplan
