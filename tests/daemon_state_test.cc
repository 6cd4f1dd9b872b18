// flightpland in-process (tests/daemon_fixture.h): snapshots and restarts, the forecast's
// freshness, its history and backfills, a full or damaged database, tokens.
#include "tests/daemon_fixture.h"

namespace flightplan {
namespace {

using namespace testing;  // NOLINT(build/namespaces): the fixture and the event helpers

TEST_F(DaemonTest, SnapshotsMakeARestartFoldOnlyTheTail) {
  daemon::TrackerOptions often;
  often.snapshot_every_events = 100;
  Restart(often);
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 3000, 7);
  for (size_t i = 0; i < log.size(); i += 250) {
    std::vector<v1::Event> batch(log.begin() + static_cast<long>(i),
                                 log.begin() + static_cast<long>(std::min(log.size(), i + 250)));
    ASSERT_TRUE(Report(batch).ok());
  }
  const v1::RunStatus s = Status();
  EXPECT_EQ(s.events(), log.size());
  EXPECT_EQ(s.state(), "finished");
  Restart(often);
  EXPECT_EQ(Status().DebugString(), s.DebugString());
  // The restart found a snapshot and a watermark near the end of the log: it folded only
  // the events after it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT (SELECT value FROM meta WHERE key = 'snapshot_watermark'), "
                               "(SELECT max(seq) FROM events), (SELECT count(*) FROM snapshots)",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const int64_t watermark = sqlite3_column_int64(stmt, 0);
  const int64_t max_seq = sqlite3_column_int64(stmt, 1);
  EXPECT_EQ(sqlite3_column_int64(stmt, 2), 1);
  EXPECT_GT(watermark, 0);
  EXPECT_LE(max_seq - watermark, 350);  // at most one batch past a 100-event round
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  // And with snapshots every 100 events, a database written by the restart is read the same
  // by a daemon that snapshots rarely.
  Restart();
  EXPECT_EQ(Status().DebugString(), s.DebugString());
}

// Fresh or labelled, the busy case: a burst of events lands while the forecaster may not
// simulate the run again for an hour. Every read then shows the new state with the old
// forecast, and says so: in the proto, in the watch, and in the text.
TEST_F(DaemonTest, AStaleForecastIsLabelledNeverPresentedAsFresh) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 600, 3);
  ASSERT_TRUE(Report(std::vector<v1::Event>(log.begin(), log.begin() + 100)).ok());
  ASSERT_EQ(Status().forecast().forecast_events(), 100u);  // caught up
  daemon::TrackerOptions slow;
  slow.forecast_min_interval = absl::Hours(1);
  Restart(slow);  // a restart simulates every run once, then at most hourly
  const v1::RunStatus before = Status();
  ASSERT_FALSE(before.forecast().forecast_stale());
  ASSERT_EQ(before.forecast().forecast_events(), 100u);

  ASSERT_TRUE(Report(std::vector<v1::Event>(log.begin() + 100, log.begin() + 400)).ok());
  const v1::RunStatus s = StatusNow();
  EXPECT_EQ(s.events(), 400u);
  const v1::Forecast& fc = s.forecast();
  EXPECT_EQ(fc.forecast_stale(), fc.forecast_events() != s.events());
  EXPECT_TRUE(fc.forecast_stale());
  EXPECT_EQ(fc.forecast_events(), 100u);
  EXPECT_EQ(fc.forecast_as_of().seconds(), before.forecast().forecast_as_of().seconds());
  // The run's time moved on (event clock): the age is the gap between the two states.
  EXPECT_NEAR(fc.forecast_age_seconds(), static_cast<double>(s.as_of().seconds() - fc.forecast_as_of().seconds()), 1);
  EXPECT_GT(fc.forecast_age_seconds(), 0);
  const std::string text = cli::FormatRunStatus(s);
  EXPECT_NE(text.find("forecast as of"), std::string::npos) << text;
  EXPECT_NE(text.find(" 100 events (300 behind), "), std::string::npos) << text;

  // A watch shows the same label.
  grpc::ClientContext ctx;
  v1::GetStatusRequest request;
  request.set_run(kRun);
  auto reader = stub_->WatchStatus(&ctx, request);
  v1::RunStatus watched;
  ASSERT_TRUE(reader->Read(&watched));
  EXPECT_TRUE(watched.forecast().forecast_stale());
  EXPECT_EQ(watched.forecast().forecast_events(), 100u);
  ctx.TryCancel();
  while (reader->Read(&watched)) {
  }

  // `flightplan status` waits its bound, then prints the old forecast, labelled; --no-wait
  // prints it at once.
  double seconds = 0;
  std::string out = CliStatus(0.5, /*json=*/false, &seconds);
  EXPECT_GE(seconds, 0.5);
  EXPECT_LT(seconds, 5);
  EXPECT_NE(out.find("(300 behind)"), std::string::npos) << out;
  out = CliStatus(0, /*json=*/true, &seconds);
  EXPECT_LT(seconds, 0.5);
  v1::RunStatus json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &json).ok()) << out;
  EXPECT_TRUE(json.forecast().forecast_stale());
  EXPECT_NE(out.find("\"forecast_stale\": true"), std::string::npos) << out;
}

// Fresh or labelled, the quiet case: once the forecaster caught up, the status is fresh and
// says nothing about staleness; `flightplan status` right after a burst waits (well inside
// its bound) for the fresh one.
TEST_F(DaemonTest, ACaughtUpForecastIsFreshAndTheCliWaitsForIt) {
  daemon::TrackerOptions options;
  options.forecast_min_interval = absl::Milliseconds(200);
  Restart(options);
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 600, 3);
  ASSERT_TRUE(Report(std::vector<v1::Event>(log.begin(), log.begin() + 300)).ok());
  // Whatever the race: either caught up, or labelled.
  v1::RunStatus s = StatusNow();
  EXPECT_EQ(s.forecast().forecast_stale(),
            !s.forecast().has_forecast_as_of() || s.forecast().forecast_events() != s.events());
  EXPECT_EQ(cli::FormatForecastFreshness(s).empty(), !s.forecast().forecast_stale());

  double seconds = 0;
  std::string out = CliStatus(2, /*json=*/false, &seconds);
  EXPECT_LT(seconds, 2);
  EXPECT_EQ(out.find("forecast as of"), std::string::npos) << out;
  EXPECT_NE(out.find("finish forecast        P10 "), std::string::npos) << out;

  s = StatusNow();
  EXPECT_FALSE(s.forecast().forecast_stale());
  EXPECT_EQ(s.forecast().forecast_events(), s.events());
  EXPECT_EQ(s.forecast().forecast_age_seconds(), 0);  // event clock, no event since
  EXPECT_EQ(s.forecast().forecast_as_of().seconds(), s.as_of().seconds());
  EXPECT_EQ(cli::FormatForecastFreshness(s), "");
  out = CliStatus(2, /*json=*/true, &seconds);
  EXPECT_LT(seconds, 1);
  EXPECT_NE(out.find("\"forecast_stale\": false"), std::string::npos) << out;
}

// Forecast history of a run reported a couple of minutes at a time, with a fresh forecast
// after each report: a point per 10 minutes of the run's time and its large moves, in time
// order, ending at the finish, and the same after a restart.
TEST_F(DaemonTest, HistoryKeepsAPointPerTenMinutesAndLargeMovesAndSurvivesARestart) {
  daemon::TrackerOptions options;
  options.forecast_min_interval = absl::Milliseconds(1);
  options.forecast_draws = 1000;
  Restart(options);
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  v1::ForecastHistory history;
  ASSERT_TRUE(History(kRun, &history).ok());
  EXPECT_EQ(history.points_size(), 0);  // no events, no point
  // The synthetic run at the plan's pace (2^25 tokens per 10-second step, ~3.4M tokens/s),
  // so that its forecast moves as a real run's does, not by leaps.
  std::vector<v1::Event> log = testing::SyntheticRun(kRun, 2400, 5);
  for (v1::Event& e : log) {
    if (e.has_steps()) e.mutable_steps()->set_tokens(e.steps().step() * (int64_t{1} << 25));
  }
  size_t forecasts = 0;
  for (size_t i = 0; i < log.size(); i += 12) {  // about 2 minutes of the run each
    ASSERT_TRUE(Report(std::vector<v1::Event>(log.begin() + static_cast<long>(i),
                                              log.begin() + static_cast<long>(std::min(log.size(), i + 12))))
                    .ok());
    Status();  // until the forecast caught up: one candidate point per report
    ++forecasts;
  }
  const v1::RunStatus final_status = StatusNow();
  ASSERT_EQ(final_status.state(), "finished");
  ASSERT_TRUE(History(kRun, &history).ok());
  const double run_seconds =
      static_cast<double>(final_status.last_event_time().seconds() - final_status.first_event_time().seconds());
  std::printf("history: %d points of %zu forecasts, %zu events, %.1f h of the run\n", history.points_size(), forecasts,
              log.size(), run_seconds / 3600);
  EXPECT_EQ(history.run(), kRun);
  EXPECT_TRUE(testing::MonotoneAndThinned(history));
  // Thinned: about one point per 10 minutes of the run, far fewer than the forecasts made.
  EXPECT_GE(history.points_size(), static_cast<int>(run_seconds / 600) / 2);
  EXPECT_LT(history.points_size(), static_cast<int>(forecasts) / 2);
  // The last point is the final status's forecast.
  EXPECT_TRUE(testing::EndsAtFinalStatus(history, final_status));

  Restart(options);
  Status();  // the restart's simulation adds nothing: the run finished
  v1::ForecastHistory again;
  ASSERT_TRUE(History(kRun, &again).ok());
  EXPECT_EQ(again.DebugString(), history.DebugString());

  EXPECT_EQ(History("nope", &again).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(History("bad name!", &again).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// A backfill: a month of a run's events sent at full speed, as `flightplan replay` and
// `flightplan tail --from-start` send them. The history afterwards covers the run's whole
// life, as it would have live: points a couple of hours of the run's time apart (the
// writer keeps the state every hour the forecaster has not seen, the queue thinned to 512
// at most), each with the run's tokens and time by category as they stood then.
class BackfillTest : public DaemonTest, public ::testing::WithParamInterface<bool> {};

TEST_P(BackfillTest, AMonthSentAtFullSpeedKeepsTheRunsWholeHistory) {
  const bool events_clock = GetParam();
  Restart({}, events_clock);
  v1::Plan plan = FlagshipPlan();
  // Under the wall clock the month must be past: it ends half an hour ago, as a log tailed
  // from its start catches up with the run.
  const absl::Time start = events_clock ? absl::FromUnixSeconds(plan.start_time().seconds())
                                        : absl::Now() - absl::Hours(24 * 30) - absl::Minutes(30);
  *plan.mutable_start_time() = convert::TimeToProto(start);
  ASSERT_TRUE(Create(plan).ok());
  const planner::PlanSpec spec = convert::PlanFromProto(plan);
  forecast::SimulationOptions sim;
  sim.seed = 5;
  std::vector<v1::Event> log;
  for (const forecast::Event& e : forecast::SimulateRun(spec, planner::ComputePlan(spec), sim)) {
    if (e.time > start + absl::Hours(24 * 30)) break;
    log.push_back(convert::EventToProto(e, kRun));
  }
  ASSERT_GT(log.size(), 8000u);
  const auto sent = std::chrono::steady_clock::now();
  for (size_t i = 0; i < log.size(); i += 1000) {
    ASSERT_TRUE(Report(std::vector<v1::Event>(log.begin() + static_cast<long>(i),
                                              log.begin() + static_cast<long>(std::min(log.size(), i + 1000))))
                    .ok());
  }
  const double send_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  // Until the forecaster has worked through the backfill: the history stops growing, for
  // 8 polls in a row (1.2 s: one poll's wait is shorter than a simulation on a loaded
  // machine, under the sanitizers).
  v1::ForecastHistory history;
  int last = -1, steady = 0;
  for (int i = 0; i < 400 && (steady < 8 || history.points_size() == 0); ++i) {
    last = history.points_size();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    Status();
    ASSERT_TRUE(History(kRun, &history).ok());
    steady = history.points_size() == last ? steady + 1 : 0;
  }
  const double first = static_cast<double>(log.front().time().seconds());
  const double end = static_cast<double>(log.back().time().seconds());
  std::vector<double> gaps;
  for (int i = 1; i < history.points_size(); ++i) {
    gaps.push_back(testing::Seconds(history.points(i).as_of()) - testing::Seconds(history.points(i - 1).as_of()));
  }
  ASSERT_FALSE(gaps.empty());
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%s clock: %zu events sent in %.2f s; history of %d points, gaps median %.2f h, max %.2f h\n",
              events_clock ? "events" : "wall", log.size(), send_seconds, history.points_size(),
              sorted[sorted.size() / 2] / 3600, sorted.back() / 3600);
  EXPECT_TRUE(testing::MonotoneAndThinned(history));
  // From the run's first hours to its end (under the wall clock, the point of now).
  EXPECT_LT(testing::Seconds(history.points(0).as_of()) - first, 4 * 3600);
  EXPECT_GE(testing::Seconds(history.points(history.points_size() - 1).as_of()), end);
  // Spread over its life: a point every couple of hours, none more than half a day apart
  // (the plan's maintenance windows are 8 hours without an event).
  EXPECT_GE(history.points_size(), 200);
  EXPECT_LE(sorted[sorted.size() / 2], 3 * 3600);
  EXPECT_LE(sorted.back(), 12 * 3600);
  // Each point is the run as it stood then: its tokens, and the time by category adding
  // up to the time since the first event (the points a backfill made, at an event).
  int64_t tokens_before = 0;
  int rising = 0;
  for (int i = 0; i + 1 < history.points_size(); ++i) {
    const v1::ForecastPoint& p = history.points(i);
    ASSERT_GT(p.tokens(), 0) << "point " << i << " of " << history.points_size() << ": " << p.DebugString()
                             << "first event at " << first;
    rising += p.tokens() > tokens_before ? 1 : 0;
    tokens_before = p.tokens();
    EXPECT_NEAR(p.time_seconds().elapsed(), testing::Seconds(p.as_of()) - first, 1) << i;
    ASSERT_TRUE(p.has_finish_p50()) << i;
  }
  EXPECT_GT(rising, history.points_size() * 3 / 4);
}

INSTANTIATE_TEST_SUITE_P(Clocks, BackfillTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "EventsClock" : "WallClock";
                         });

TEST_F(DaemonTest, AFullDatabaseAcknowledgesNothingItDidNotStoreAndKeepsServingReads) {
  // A 200 kB cap: writes fail as on a full disk.
  Restart();
  daemon_->Shutdown();
  daemon_.reset();
  {
    daemon::DaemonOptions options;
    options.listen = "127.0.0.1:0";
    options.metrics = "";
    options.db = db_path_;
    options.max_db_bytes = 200 * 1024;
    options.tracker.events_clock = true;
    auto d = daemon::Daemon::Start(options);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", daemon_->grpc_port()), grpc::InsecureChannelCredentials());
    stub_ = v1::Tracker::NewStub(channel_);
  }
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 20000, 3);
  size_t acknowledged = 0;
  grpc::Status refused;
  for (size_t i = 0; i < log.size(); i += 100) {
    std::vector<v1::Event> batch(log.begin() + static_cast<long>(i),
                                 log.begin() + static_cast<long>(std::min(log.size(), i + 100)));
    v1::BatchAck ack;
    refused = Report(batch, &ack);
    if (!refused.ok()) break;
    acknowledged += ack.accepted();
  }
  ASSERT_FALSE(refused.ok()) << "the cap was never reached";
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message().find("full"), std::string::npos) << refused.error_message();
  // Reads go on, and hold exactly what was acknowledged.
  EXPECT_EQ(Status().events(), acknowledged);
  // The fault clears (a bigger cap): the same events go in, the acknowledged ones as duplicates.
  Restart();
  v1::BatchAck ack;
  ASSERT_TRUE(
      Report(std::vector<v1::Event>(log.begin(), log.begin() + static_cast<long>(acknowledged + 100)), &ack).ok());
  EXPECT_EQ(ack.duplicates(), acknowledged);
  EXPECT_EQ(ack.accepted(), 100u);
  EXPECT_EQ(Status().events(), acknowledged + 100);
}

TEST(DaemonStorage, ADamagedDatabaseIsRefusedWithTheWayOut) {
  TempDir dir;
  daemon::DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics = "";
  options.db = dir.path() + "/f.db";
  options.tracker.events_clock = true;  // the synthetic run is dated 2027
  {
    auto d = daemon::Daemon::Start(options);
    ASSERT_TRUE(d.ok());
    auto stub = v1::Tracker::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*d)->grpc_port()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::CreateRunRequest request;
    *request.mutable_plan() = FlagshipPlan();
    v1::CreateRunResponse response;
    ASSERT_TRUE(stub->CreateRun(&ctx, request, &response).ok());
    const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 3000, 1);
    grpc::ClientContext ctx2;
    v1::EventBatch batch;
    for (const auto& e : log) *batch.add_events() = e;
    v1::BatchAck ack;
    ASSERT_TRUE(stub->ReportBatch(&ctx2, batch, &ack).ok());
    (*d)->Shutdown();
  }
  // Checkpoint the WAL into the file, then scribble over a page in the middle.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(options.db.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  {
    // Page headers (type byte, cell counts) of a few pages: the b-trees no longer parse.
    std::fstream f(options.db, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(64, '\x5a');
    for (int page : {2, 3, 4, 5}) {
      f.seekp(4096 * page);
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  auto d = daemon::Daemon::Start(options);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(d.status().message()).find("Restore the latest backup"), std::string::npos) << d.status();
}

TEST(DaemonAuth, TokensGuardWritesAndOptionallyReads) {
  TempDir dir;
  daemon::DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics = "";
  options.db = dir.path() + "/f.db";
  options.write_token = "w-7c2e9f";
  options.read_token = "r-41aa0b";
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(options);
  ASSERT_TRUE(d.ok()) << d.status();
  auto stub = v1::Tracker::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*d)->grpc_port()), grpc::InsecureChannelCredentials()));
  auto create = [&](const std::string& token) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::CreateRunRequest request;
    *request.mutable_plan() = FlagshipPlan();
    v1::CreateRunResponse response;
    return stub->CreateRun(&ctx, request, &response);
  };
  auto status = [&](const std::string& token) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::GetStatusRequest request;
    request.set_run(kRun);
    v1::RunStatus response;
    return stub->GetStatus(&ctx, request, &response);
  };
  grpc::Status st = create("");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  st = create("w-7c2e9e");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(st.error_message().find("w-7c2e9"), std::string::npos);                 // never echoed
  EXPECT_EQ(create("r-41aa0b").error_code(), grpc::StatusCode::PERMISSION_DENIED);  // reads only
  EXPECT_TRUE(create("w-7c2e9f").ok());
  EXPECT_EQ(status("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(status("r-41aa0b").ok());
  EXPECT_TRUE(status("w-7c2e9f").ok());  // the write token reads too
  // The stream is refused before any batch.
  grpc::ClientContext ctx;
  auto stream = stub->ReportEvents(&ctx);
  v1::EventBatch batch;
  *batch.add_events() = StartedAt(kRun, 0, 1, 0);
  stream->Write(batch);
  stream->WritesDone();
  v1::BatchAck ack;
  EXPECT_FALSE(stream->Read(&ack));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext ctx2;
  ctx2.AddMetadata("authorization", "Bearer r-41aa0b");
  v1::RunStatus s;
  v1::GetStatusRequest request;
  request.set_run(kRun);
  ASSERT_TRUE(stub->GetStatus(&ctx2, request, &s).ok());
  EXPECT_EQ(s.events(), 0u);  // nothing got in
}

TEST(DaemonAuth, ConstantTimeEquals) {
  EXPECT_TRUE(daemon::ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(daemon::ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(daemon::ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(daemon::ConstantTimeEquals("", "a"));
}

TEST(DaemonStorage, RefusesAFileThatIsNotOursAndANewerSchema) {
  TempDir dir;
  daemon::DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics = "";
  options.db = dir.Write("notes.db", "these are my notes, not a database");
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(options);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(d.status().message()).find("is not a flightplan database"), std::string::npos);
  std::ifstream in(options.db);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "these are my notes, not a database");  // untouched

  // Another application's SQLite file.
  options.db = dir.path() + "/other.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(options.db.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  d = daemon::Daemon::Start(options);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("is not a flightplan database"), std::string::npos);

  // Ours, but from a newer flightpland.
  options.db = dir.path() + "/newer.db";
  d = daemon::Daemon::Start(options);
  ASSERT_TRUE(d.ok()) << d.status();
  (*d)->Shutdown();
  d->reset();
  ASSERT_EQ(sqlite3_open(options.db.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  d = daemon::Daemon::Start(options);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("schema version 99, newer"), std::string::npos) << d.status();
}

TEST(DaemonStorage, ASecondDaemonOnTheSameFileFailsAtOnce) {
  TempDir dir;
  daemon::DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics = "";
  options.db = dir.path() + "/f.db";
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> first = daemon::Daemon::Start(options);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> second = daemon::Daemon::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(std::string(second.status().message()).find("in use by another flightpland"), std::string::npos);
}

}  // namespace
}  // namespace flightplan
