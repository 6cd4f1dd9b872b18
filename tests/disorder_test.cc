// True accounting under disorder (issue 12), through the real daemon and the real command
// line: per-job log files of one run, reused ids and attempts, late-filed failures, a
// typo'd date and its retraction, a host clock that runs fast, a small batch limit, and a
// randomized delivery of one run from two sources that must account exactly as the
// time-ordered log.
#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/event_log.h"
#include "tests/http_get.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using testing::Cli;
using testing::DaemonProcess;
using testing::InterruptedAt;
using testing::kRun;
using testing::StartedAt;
using testing::StepsAt;
using testing::TempDir;

const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

std::unique_ptr<v1::Tracker::Stub> Stub(const std::string& address) {
  return v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

grpc::Status Send(v1::Tracker::Stub& stub, const std::vector<v1::Event>& events) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::EventBatch batch;
  for (const v1::Event& e : events) *batch.add_events() = e;
  v1::BatchAck ack;
  return stub.ReportBatch(&ctx, batch, &ack);
}

v1::RunStatus StatusOf(v1::Tracker::Stub& stub, const std::string& run) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetStatusRequest request;
  request.set_run(run);
  v1::RunStatus status;
  EXPECT_TRUE(stub.GetStatus(&ctx, request, &status).ok());
  return status;
}

void CreateRun(const std::string& address, const std::string& run = kRun) {
  const testing::ProcessResult r = Cli(address, {"create", kFlagship, "--run", run});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

v1::Event WithId(v1::Event e, const std::string& id) {
  e.set_id(id);
  return e;
}

v1::Event OfAttempt(v1::Event e, uint32_t attempt) {
  e.set_attempt(attempt);
  return e;
}

// The accounting two statuses must agree on.
void ExpectSameAccounting(const v1::RunStatus& got, const v1::RunStatus& want, const std::string& what) {
  const v1::TimeSeconds& a = got.time_seconds();
  const v1::TimeSeconds& b = want.time_seconds();
  EXPECT_NEAR(a.productive(), b.productive(), 1e-6) << what;
  EXPECT_NEAR(a.checkpoint(), b.checkpoint(), 1e-6) << what;
  EXPECT_NEAR(a.lost(), b.lost(), 1e-6) << what;
  EXPECT_NEAR(a.startup(), b.startup(), 1e-6) << what;
  EXPECT_NEAR(a.down_unplanned(), b.down_unplanned(), 1e-6) << what;
  EXPECT_NEAR(a.down_planned(), b.down_planned(), 1e-6) << what;
  EXPECT_NEAR(a.stalled(), b.stalled(), 1e-6) << what;
  EXPECT_EQ(got.state(), want.state()) << what;
  EXPECT_EQ(got.attempt(), want.attempt()) << what;
  EXPECT_EQ(got.events(), want.events()) << what;
  EXPECT_EQ(got.progress().step(), want.progress().step()) << what;
  EXPECT_EQ(got.progress().tokens(), want.progress().tokens()) << what;
  EXPECT_NEAR(got.failure_budget().consumed_seconds(), want.failure_budget().consumed_seconds(), 1e-6) << what;
  ASSERT_EQ(got.interruptions_size(), want.interruptions_size()) << what;
  for (int i = 0; i < got.interruptions_size(); ++i) {
    EXPECT_EQ(got.interruptions(i).cause(), want.interruptions(i).cause()) << what;
    EXPECT_EQ(got.interruptions(i).planned(), want.interruptions(i).planned()) << what;
    EXPECT_EQ(got.interruptions(i).count(), want.interruptions(i).count()) << what;
  }
}

// 1. Restarts stitch: SLURM writes one log per job; each is tailed by its own process.
TEST(Disorder, PerJobLogFilesAndRestartedTailersContinueOneRun) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log");
  CreateRun(d.address());
  // The Megatron-LM core_v0.19.0 fixture, cut where the second job starts (its second
  // "using world size" line): two per-job files, each with its arguments dump.
  std::ifstream in(std::string(FLIGHTPLAN_LOGS_DIR) + "/megatron-core_v0.19.0.log");
  std::string line, job1, job2;
  int launches = 0;
  while (std::getline(in, line)) {
    if (line.rfind("using world size", 0) == 0) ++launches;
    (launches <= 1 ? job1 : job2) += line + "\n";
  }
  const std::string first = dir.Write("slurm-1001.out", job1);
  const std::string second = dir.Write("slurm-1002.out", job2);
  auto tail = [&](const std::string& file) {
    return Cli(d.address(), {"tail", "--run", kRun, "--from-start", "--exit-at-eof", file});
  };
  testing::ProcessResult r = tail(first);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = tail(second);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The second job's launch is the run's attempt 2, not "attempt 1 again, duplicate".
  // Start, 4 iterations, 2 saves, the exit.
  EXPECT_NE(r.out.find("1 launch (the run's attempt 2): 8 events accepted, 0 duplicates"), std::string::npos) << r.out;
  auto stub = Stub(d.address());
  const v1::RunStatus s = StatusOf(*stub, kRun);
  EXPECT_EQ(s.attempt(), 2u);
  EXPECT_EQ(s.progress().step(), 100);
  EXPECT_EQ(s.progress().tokens(), 6400 * 4096);  // the logs' own seq_length, not the plan's
  ASSERT_EQ(s.interruptions_size(), 2);           // the first job's silent death, the second's exit
  // The 24 minutes between the jobs (00:16:03 to 00:40:00) are downtime of an incident,
  // not a stall.
  EXPECT_DOUBLE_EQ(s.time_seconds().down_unplanned(), 1437);
  EXPECT_LT(s.time_seconds().stalled(), 1);
  EXPECT_NEAR(s.time_seconds().lost(), 201, 1e-6);  // worked out in log_events_test.cc
  // Restarted tailers, on either file: the same launches, every event a duplicate.
  for (const std::string& file : {first, second}) {
    r = tail(file);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(" 0 events accepted,"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" 0 rejected"), std::string::npos) << r.out;
  }
  ExpectSameAccounting(StatusOf(*stub, kRun), s, "after re-tails");
}

TEST(Disorder, AnIdNamesOneEventAndAnAttemptOneLaunch) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log");
  CreateRun(d.address());
  auto stub = Stub(d.address());
  ASSERT_TRUE(
      Send(*stub, {StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 600, 10, 10000), InterruptedAt(kRun, 700, "gpu")}).ok());
  const v1::RunStatus down = StatusOf(*stub, kRun);
  ASSERT_EQ(down.state(), "down");
  // A hand-reported relaunch that reuses attempt 1: refused, naming the current attempt.
  testing::ProcessResult r = Cli(d.address(), {"report", kRun, "--time", "2027-01-04T00:20:00Z", "--started", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ALREADY_EXISTS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the run's current attempt is 1; a relaunch is attempt 2"), std::string::npos) << r.err;
  // The same with an explicit id: the same rule, the same code.
  r = Cli(d.address(), {"report", kRun, "--time", "2027-01-04T00:20:00Z", "--started", "1", "--id", "relaunch"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ALREADY_EXISTS"), std::string::npos) << r.err;
  ExpectSameAccounting(StatusOf(*stub, kRun), down, "after refused relaunches");
  // Three lines sharing one id with different bodies: the first is stored, the two others
  // are refused (never "duplicates"), so the interruption is not silently gone.
  const std::string lines =
      testing::ToJsonLines({WithId(StartedAt(kRun, 1200, 2, 0), "x"), WithId(StepsAt(kRun, 1800, 5, 5000), "x"),
                            WithId(InterruptedAt(kRun, 1900, "ecc"), "x")});
  r = Cli(d.address(), {"replay", dir.Write("x.jsonl", lines)});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("1 accepted, 0 duplicates, 2 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("line 3: ALREADY_EXISTS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("id x is already recorded for another event: job_started attempt 2"), std::string::npos)
      << r.out;
  // The same body again is a duplicate, not a conflict.
  r = Cli(d.address(),
          {"replay", dir.Write("y.jsonl", testing::ToJsonLines({WithId(StartedAt(kRun, 1200, 2, 0), "x")}))});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 accepted, 1 duplicate, 0 rejected"), std::string::npos) << r.out;
}

// 2. The relaunch reports before anyone files the old attempt's failure.
TEST(Disorder, ALateFailureIsChargedToItsOwnAttempt) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log");
  CreateRun(d.address(), "ordered");
  CreateRun(d.address(), "late");
  CreateRun(d.address(), "filed-now");
  auto stub = Stub(d.address());
  auto job = [](const std::string& run) {
    return std::vector<v1::Event>{
        StartedAt(run, 0, 1, 0),       StepsAt(run, 600, 10, 10000), testing::CheckpointAt(run, 610, 10, 10),
        StepsAt(run, 1200, 20, 20000), StartedAt(run, 3000, 2, 10),  StepsAt(run, 3600, 20, 20000),
        StepsAt(run, 4200, 30, 30000)};
  };
  // The reference: the failure filed in time.
  std::vector<v1::Event> ordered = job("ordered");
  ordered.insert(ordered.begin() + 4, InterruptedAt("ordered", 1300, "gpu"));
  ASSERT_TRUE(Send(*stub, ordered).ok());
  // The relaunch and its steps first, the failure (dated when it happened) an hour later.
  for (const v1::Event& e : job("late")) ASSERT_TRUE(Send(*stub, {e}).ok());
  const v1::RunStatus before = StatusOf(*stub, "late");
  ASSERT_EQ(before.interruptions(0).cause(), "unknown");  // inferred from the relaunch
  const grpc::Status late = Send(*stub, {InterruptedAt("late", 1300, "gpu")});
  ASSERT_TRUE(late.ok()) << late.error_message();
  // The running attempt is untouched; the failure counts once, with its cause.
  const v1::RunStatus after = StatusOf(*stub, "late");
  EXPECT_EQ(after.state(), "running");
  EXPECT_EQ(after.attempt(), 2u);
  ExpectSameAccounting(after, StatusOf(*stub, "ordered"), "late failure");
  // Steps of the running attempt keep flowing.
  EXPECT_TRUE(Send(*stub, {StepsAt("late", 4800, 40, 40000)}).ok());
  // Filed with the filing time but naming attempt 1: still attempt 1's, placed at its last
  // sign of life (the step at 1,200 s), never the running attempt's.
  for (const v1::Event& e : job("filed-now")) ASSERT_TRUE(Send(*stub, {e}).ok());
  ASSERT_TRUE(Send(*stub, {OfAttempt(InterruptedAt("filed-now", 4300, "gpu"), 1)}).ok());
  const v1::RunStatus filed = StatusOf(*stub, "filed-now");
  EXPECT_EQ(filed.state(), "running");
  ASSERT_EQ(filed.interruptions_size(), 1);
  EXPECT_EQ(filed.interruptions(0).cause(), "gpu");
  EXPECT_EQ(filed.interruptions(0).count(), 1u);
  // A late event that would contradict what is stored is refused and changes nothing:
  // steps of attempt 1 dated after attempt 2 launched.
  const v1::RunStatus settled = StatusOf(*stub, "late");
  const grpc::Status zombie = Send(*stub, {OfAttempt(StepsAt("late", 3100, 25, 25000), 1)});
  EXPECT_EQ(zombie.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << zombie.error_message();
  EXPECT_NE(zombie.error_message().find("steps from attempt 1, which attempt 2 superseded"), std::string::npos)
      << zombie.error_message();
  // A launch cannot go into the past (later events would change attempts).
  const grpc::Status past = Send(*stub, {StartedAt("late", 3500, 3, 10)});
  EXPECT_EQ(past.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << past.error_message();
  EXPECT_NE(past.error_message().find("a launch cannot be inserted into the past"), std::string::npos)
      << past.error_message();
  ExpectSameAccounting(StatusOf(*stub, "late"), settled, "after the refusals");
}

// 3. One bad timestamp: refused when it is far off, retractable when it got in.
TEST(Disorder, ATypoedDateIsRefusedOrRetractedAndTheRunFoldsBack) {
  TempDir dir;
  const std::string db = dir.path() + "/f.db";
  DaemonProcess d(db, dir.path() + "/d.log");
  CreateRun(d.address());
  auto stub = Stub(d.address());
  ASSERT_TRUE(Send(*stub, {WithId(StartedAt(kRun, 0, 1, 0), "a"), WithId(StepsAt(kRun, 600, 10, 10000), "b"),
                           WithId(StepsAt(kRun, 1200, 20, 20000), "c")})
                  .ok());
  const v1::RunStatus good = StatusOf(*stub, kRun);
  // The year 3000: past --max-event-gap (30 days), refused, naming the gap.
  testing::ProcessResult r =
      Cli(d.address(), {"report", kRun, "--time", "3000-01-04T00:30:00Z", "--step", "30", "--tokens", "30000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-event-gap"), std::string::npos) << r.err;
  // A typo within the bound (the 24th for the 4th) gets in: 20 days stalled...
  r = Cli(d.address(),
          {"report", kRun, "--time", "2027-01-24T00:30:00Z", "--step", "30", "--tokens", "30000", "--id", "typo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(StatusOf(*stub, kRun).time_seconds().stalled(), 19 * 86400);
  // ...and later real events are still taken (late, folded in time order).
  ASSERT_TRUE(Send(*stub, {WithId(StepsAt(kRun, 1800, 30, 30000), "d")}).ok());
  // The operator looks, then retracts everything after the last good event.
  r = Cli(d.address(), {"retract", kRun, "--after", "2027-01-04T00:40:00Z", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("typo  steps step 30 tokens 30000 at 2027-01-24T00:30:00Z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would retract 1 event"), std::string::npos) << r.out;
  EXPECT_EQ(StatusOf(*stub, kRun).events(), 5u) << "a dry run changed the run";
  r = Cli(d.address(), {"retract", kRun, "--id", "typo", "--reason", "typo: 24th for the 4th"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("retracted 1 event"), std::string::npos) << r.out;
  // The run is what it would have been without the typo.
  std::vector<v1::Event> clean = {StartedAt("clean", 0, 1, 0), StepsAt("clean", 600, 10, 10000),
                                  StepsAt("clean", 1200, 20, 20000), StepsAt("clean", 1800, 30, 30000)};
  CreateRun(d.address(), "clean");
  ASSERT_TRUE(Send(*stub, clean).ok());
  ExpectSameAccounting(StatusOf(*stub, kRun), StatusOf(*stub, "clean"), "after the retraction");
  // Unknown ids and a retraction that would leave events without their launch are refused.
  r = Cli(d.address(), {"retract", kRun, "--id", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
  r = Cli(d.address(), {"retract", kRun, "--id", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("before any job_started"), std::string::npos) << r.err;
  r = Cli(d.address(), {"retract", kRun});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // The run goes on; the next event's seq is past the retracted one's (a reused seq would
  // be skipped by recovery). Killed without a drain, the restarted daemon has it all.
  ASSERT_TRUE(Send(*stub, {WithId(StepsAt(kRun, 2400, 40, 40000), "e")}).ok());
  ASSERT_TRUE(Send(*stub, {StepsAt("clean", 2400, 40, 40000)}).ok());
  const v1::RunStatus retracted = StatusOf(*stub, kRun);
  ExpectSameAccounting(retracted, StatusOf(*stub, "clean"), "the run after the retraction goes on");
  d.child().Signal(SIGKILL);
  d.child().Wait();
  DaemonProcess again(db, dir.path() + "/d2.log");
  auto stub2 = Stub(again.address());
  ExpectSameAccounting(StatusOf(*stub2, kRun), retracted, "after a kill -9 and a restart");
  // Nothing is lost: the retracted event and its audit row are in the database.
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(handle,
                               "SELECT r.reason, e.key FROM retracted_events e JOIN retractions r "
                               "ON r.id = e.retraction_id",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))), "typo: 24th for the 4th");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1))), "typo");
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
}

TEST(Disorder, AHostClockThatRunsFastIsRefusedUnderTheWallClock) {
  TempDir dir;
  testing::Child child({FLIGHTPLAN_DAEMON_BIN, "--db", dir.path() + "/f.db", "--listen", "127.0.0.1:0", "--metrics", "",
                        "--clock", "wall"},
                       dir.path() + "/d.log");
  std::smatch m;
  const std::string text = child.WaitForLog("serving gRPC on", 20);
  ASSERT_TRUE(std::regex_search(text, m, std::regex("serving gRPC on (127\\.0\\.0\\.1:[0-9]+)")));
  const std::string address = m[1].str();
  CreateRun(address);
  const absl::Time now = absl::Now();
  auto at = [](absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone()); };
  testing::ProcessResult r = Cli(address, {"report", kRun, "--time", at(now - absl::Minutes(30)), "--started", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two hours fast: refused, naming the skew and the flag; nothing counted.
  r = Cli(address, {"report", kRun, "--time", at(now + absl::Hours(2)), "--step", "10", "--tokens", "10000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ahead of flightpland's clock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-clock-skew allows 5m"), std::string::npos) << r.err;
  // A minute fast is within the tolerance.
  r = Cli(address, {"report", kRun, "--time", at(now + absl::Minutes(1)), "--step", "10", "--tokens", "10000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// 5. A small batch limit: the clients split, nothing is rejected, nothing alerts.
TEST(Disorder, ASmallBatchLimitIsSplitByTheClientsNotRejected) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log", true, {"--max-batch-events", "100"});
  CreateRun(d.address());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 2000, 3);
  testing::ProcessResult r = Cli(d.address(), {"replay", dir.Write("e.jsonl", testing::ToJsonLines(log))});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" 0 rejected"), std::string::npos) << r.out;
  auto stub = Stub(d.address());
  std::set<std::string> ids;
  for (const v1::Event& e : log) ids.insert(e.id());
  EXPECT_EQ(StatusOf(*stub, kRun).events(), ids.size());
  const std::string metrics = testing::HttpGet(d.metrics_port(), "/metrics");
  // The oversized batches were counted as retried; no event was rejected (the
  // FlightplandRejectingEvents alert reads rejected_events).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      metrics, m, std::regex("flightplan_ingest_retried_events_total\\{code=\"invalid_argument\"\\} ([0-9.e+]+)")));
  EXPECT_GT(std::stod(m[1].str()), 0);
  for (const char* code : {"invalid_argument", "failed_precondition", "already_exists", "not_found"}) {
    ASSERT_TRUE(std::regex_search(metrics, m,
                                  std::regex(std::string("flightplan_ingest_rejected_events_total\\{code=\"") + code +
                                             "\",run=\"\"\\} ([0-9.e+]+)")));
    EXPECT_EQ(std::stod(m[1].str()), 0) << code;
  }
}

// 6. A plan update that doubles the fleet moves the forecast, and the revisions are listed.
TEST(Disorder, APlanThatDoublesTheFleetDoublesTheForecastRateAndIsListed) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log");
  CreateRun(d.address());
  auto stub = Stub(d.address());
  std::vector<v1::Event> log = testing::SyntheticRun(kRun, 3000, 5);
  while (log.back().has_run_finished()) log.pop_back();  // a run still under way
  ASSERT_TRUE(Send(*stub, log).ok());
  const v1::RunStatus before = d.Status();
  const double rate_before = before.forecast().forecast_tokens_per_second();
  ASSERT_GT(rate_before, 0);
  // Twice the GPUs, twice the data parallelism, half the accumulation: the same batch.
  std::ifstream in(kFlagship);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  for (auto [from, to] : {std::pair<std::string, std::string>{"gpus: 4096", "gpus: 8192"},
                          {"dp: 128", "dp: 256"},
                          {"grad_accum: 16", "grad_accum: 8"}}) {
    const size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    yaml.replace(at, from.size(), to);
  }
  testing::ProcessResult r = Cli(d.address(), {"create", "--update", dir.Write("doubled.yaml", yaml)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const v1::RunStatus after = d.Status();
  EXPECT_EQ(after.plan_revision(), 2u);
  // The run's own rate, scaled by the plan's rate over the old one, until it shows its
  // own under the new plan. Twice the GPUs, but half the micro-batches per step: the
  // interleaved pipeline's bubble (pp 4, 5 virtual stages) grows from 3/83 to 3/43.
  const double plan_ratio = 2.0 * (1 - 3.0 / 43) / (1 - 3.0 / 83);
  EXPECT_NEAR(after.forecast().forecast_tokens_per_second() / rate_before, plan_ratio, 0.02);
  EXPECT_LT(absl::ToDoubleSeconds(absl::FromUnixSeconds(after.forecast().finish_p50().seconds()) -
                                  absl::FromUnixSeconds(before.forecast().finish_p50().seconds())),
            -86400.0 * 10)
      << "the P50 finish did not come forward";
  r = Cli(d.address(), {"plans", kRun});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 revisions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   8,192"), std::string::npos) << r.out;
  // Revision 2 took effect at the run's latest event (the events clock).
  EXPECT_NE(r.out.find("2         2027-01-0"), std::string::npos) << r.out;
}

// Two sources, one run: the job reports its launches, steps and checkpoints as they
// happen; an operator files the failures, each up to an hour late, interleaved at random.
// The run must account exactly as the time-ordered log.
struct TwoSources {
  std::vector<v1::Event> ordered;                      // the whole log in time order
  std::vector<std::pair<double, v1::Event>> delivery;  // (when it reaches the daemon, event)
};

TwoSources MakeTwoSources(const std::string& run, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  TwoSources out;
  double t = 0;
  uint32_t attempt = 1;
  int64_t step = 0, checkpoint = 0;
  int n = 0;
  auto emit = [&](v1::Event e, double delay) {
    e.set_id(absl::StrCat("s", seed, "-", ++n));
    const double when =
        absl::ToDoubleSeconds(absl::FromUnixSeconds(e.time().seconds()) + absl::Nanoseconds(e.time().nanos()) -
                              absl::FromUnixSeconds(testing::T0()));
    out.ordered.push_back(e);
    out.delivery.push_back({when + delay, e});
  };
  emit(StartedAt(run, t, attempt, 0), 0);
  t += 100 + 100 * u(rng);
  while (step < 400) {
    ++step;
    emit(StepsAt(run, t, step, step * 1000), 0);
    if (step % 20 == 0) {
      t += 2 + u(rng);
      emit(testing::CheckpointAt(run, t, step, 2), 0);
      checkpoint = step;
    }
    t += 8 + 4 * u(rng);
    const double roll = u(rng);
    if (roll < 0.03 || (roll < 0.04 && step > 100)) {
      // A failure (or a planned stop): filed by the operator up to an hour late, naming
      // the attempt or not.
      const bool planned = roll >= 0.03;
      const double failed_at = t + 3 * u(rng);
      v1::Event stop =
          InterruptedAt(run, failed_at, planned ? "maintenance" : (u(rng) < 0.5 ? "gpu" : "nccl"), planned);
      if (u(rng) < 0.5) stop.set_attempt(attempt);
      emit(stop, 3600 * u(rng));
      t = failed_at + 60 + 3000 * u(rng);
      ++attempt;
      step = checkpoint;
      emit(StartedAt(run, t, attempt, checkpoint), 0);
      t += 60 + 200 * u(rng);
    }
  }
  std::stable_sort(out.ordered.begin(), out.ordered.end(), [](const v1::Event& a, const v1::Event& b) {
    return std::make_pair(a.time().seconds(), a.time().nanos()) < std::make_pair(b.time().seconds(), b.time().nanos());
  });
  std::stable_sort(out.delivery.begin(), out.delivery.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

TEST(Disorder, TwoSourcesInterleavedAtRandomAccountAsTheTimeOrderedLog) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log", true);
  auto stub = Stub(d.address());
  int late_runs = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const std::string ordered_run = absl::StrCat("ordered-", seed);
    const std::string mixed_run = absl::StrCat("mixed-", seed);
    CreateRun(d.address(), ordered_run);
    CreateRun(d.address(), mixed_run);
    TwoSources ordered = MakeTwoSources(ordered_run, seed);
    TwoSources mixed = MakeTwoSources(mixed_run, seed);
    ASSERT_TRUE(Send(*stub, ordered.ordered).ok());
    // Delivered in arrival order, in batches of 1 to 4 events.
    std::mt19937 rng(seed);
    std::vector<v1::Event> batch;
    for (size_t i = 0; i < mixed.delivery.size(); ++i) {
      batch.push_back(mixed.delivery[i].second);
      if (batch.size() >= 1 + rng() % 4 || i + 1 == mixed.delivery.size()) {
        const grpc::Status st = Send(*stub, batch);
        ASSERT_TRUE(st.ok()) << "seed " << seed << ": " << st.error_message();
        batch.clear();
      }
    }
    const v1::RunStatus want = StatusOf(*stub, ordered_run);
    const v1::RunStatus got = StatusOf(*stub, mixed_run);
    ASSERT_GT(want.interruptions_size(), 0) << "seed " << seed << " has no failure to deliver late";
    ExpectSameAccounting(got, want, absl::StrCat("seed ", seed));
    late_runs += 1;
  }
  // The late failures did take the refold path.
  const std::string metrics = testing::HttpGet(d.metrics_port(), "/metrics");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex("flightplan_ingest_refolds_total ([0-9.e+]+)")));
  EXPECT_GE(std::stod(m[1].str()), late_runs);
}

}  // namespace
}  // namespace flightplan
