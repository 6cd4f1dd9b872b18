// flightpland end to end in-process: a real SQLite file, a real gRPC server on
// 127.0.0.1 port 0, real clients.
#include "daemon/daemon.h"

#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/client_commands.h"
#include "cli/plan_file.h"
#include "cli/status_print.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "daemon/auth.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "forecast/simulator.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"
#include "proto/grpc/reflection/v1alpha/reflection_min.pb.h"
#include "tests/event_log.h"
#include "tests/history_check.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using testing::CheckpointAt;
using testing::InterruptedAt;
using testing::StartedAt;
using testing::StepsAt;
using testing::TempDir;

const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

v1::Plan FlagshipPlan() {
  absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(kFlagship);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// The flagship in two phases: `first` tokens at 8K sequences, the rest at 16K on cp 2 (slower
// per token: the attention term doubles).
v1::Plan TwoPhaseFlagship(uint64_t first) {
  v1::Plan plan = FlagshipPlan();
  v1::Phase* a = plan.add_phases();
  a->set_name("8K");
  a->set_tokens(first);
  v1::Phase* b = plan.add_phases();
  b->set_name("16K");
  b->set_tokens(10'000'000'000'000 - first);
  b->mutable_model()->set_seq_len(16384);
  b->mutable_layout()->set_cp(2);
  return plan;
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  void Start(daemon::TrackerOptions tracker = {}, bool events_clock = true) {
    daemon::DaemonOptions options;
    options.listen = "127.0.0.1:0";
    options.metrics = "";
    options.db = db_path_;
    tracker.events_clock = events_clock;  // by default a deterministic "now": the latest event
    options.tracker = tracker;
    absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(options);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", daemon_->grpc_port()), grpc::InsecureChannelCredentials());
    stub_ = v1::Tracker::NewStub(channel_);
  }

  void Restart(daemon::TrackerOptions tracker = {}, bool events_clock = true) {
    stub_.reset();
    channel_.reset();
    daemon_->Shutdown();
    daemon_.reset();
    Start(tracker, events_clock);
  }

  // A client on its own channel whose receive window stays at its default size (no BDP
  // probing growing it): what the transport buffers for a client that does not read is
  // bounded and small.
  std::unique_ptr<v1::Tracker::Stub> FixedWindowStub() const {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    return v1::Tracker::NewStub(grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", daemon_->grpc_port()),
                                                          grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status Create(const v1::Plan& plan, v1::CreateRunResponse* response = nullptr, const std::string& run = "") {
    grpc::ClientContext ctx;
    v1::CreateRunRequest request;
    request.set_run(run);
    *request.mutable_plan() = plan;
    v1::CreateRunResponse local;
    return stub_->CreateRun(&ctx, request, response ? response : &local);
  }

  grpc::Status Report(const std::vector<v1::Event>& events, v1::BatchAck* ack = nullptr) {
    grpc::ClientContext ctx;
    v1::EventBatch batch;
    for (const v1::Event& e : events) *batch.add_events() = e;
    v1::BatchAck local;
    return stub_->ReportBatch(&ctx, batch, ack ? ack : &local);
  }

  // The run's status once its forecast has caught up with its events (forecasts run off
  // the ingest path), so that two statuses of the same history compare equal.
  v1::RunStatus Status(const std::string& run = "dense-70b-10t") {
    v1::RunStatus status;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      grpc::ClientContext ctx;
      v1::GetStatusRequest request;
      request.set_run(run);
      grpc::Status st = stub_->GetStatus(&ctx, request, &status);
      EXPECT_TRUE(st.ok()) << st.error_message();
      if (!st.ok() || !status.forecast().forecast_stale()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    status.clear_as_of();
    return status;
  }

  // The status right now, whatever its forecast's state.
  v1::RunStatus StatusNow(const std::string& run = "dense-70b-10t") {
    grpc::ClientContext ctx;
    v1::GetStatusRequest request;
    request.set_run(run);
    v1::RunStatus status;
    const grpc::Status st = stub_->GetStatus(&ctx, request, &status);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return status;
  }

  grpc::Status History(const std::string& run, v1::ForecastHistory* history) {
    grpc::ClientContext ctx;
    v1::GetHistoryRequest request;
    request.set_run(run);
    return stub_->GetHistory(&ctx, request, history);
  }

  // `flightplan status` against this daemon: its output, and how long it took.
  std::string CliStatus(double wait_seconds, bool json, double* seconds) {
    cli::ClientOptions client;
    client.server = absl::StrCat("127.0.0.1:", daemon_->grpc_port());
    cli::StatusOptions options;
    options.run = "dense-70b-10t";
    options.json = json;
    options.wait_seconds = wait_seconds;
    std::ostringstream out, err;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(cli::RunStatus(client, options, out, err), 0) << err.str();
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out.str();
  }

  TempDir dir_;
  std::string db_path_ = dir_.path() + "/flightplan.db";
  std::unique_ptr<daemon::Daemon> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> stub_;
};

const char kRun[] = "dense-70b-10t";

// A unary call with raw bytes, as a client with no (or the wrong) .proto would make it.
struct RawResult {
  grpc::Status status;
  std::string response;
};
RawResult RawUnary(const std::shared_ptr<grpc::Channel>& channel, const std::string& method, const std::string& bytes) {
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  RawResult result;
  generic.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status st) {
    std::lock_guard<std::mutex> lock(mu);
    result.status = st;
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) {
    result.status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no answer in 10 s");
    ctx.TryCancel();
    cv.wait(lock, [&] { return done; });
    return result;
  }
  std::vector<grpc::Slice> slices;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) result.response.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return result;
}

TEST_F(DaemonTest, CreateRunIsIdempotentAndKeepsPlanRevisions) {
  v1::CreateRunResponse r;
  ASSERT_TRUE(Create(FlagshipPlan(), &r).ok());
  EXPECT_TRUE(r.created());
  EXPECT_EQ(r.plan_revision(), 1u);
  EXPECT_GT(r.report().schedule().total_seconds(), 0);
  ASSERT_TRUE(Create(FlagshipPlan(), &r).ok());
  EXPECT_FALSE(r.created());

  v1::Plan other = FlagshipPlan();
  other.mutable_fleet()->set_gpus(8192);
  other.mutable_layout()->set_dp(256);
  EXPECT_EQ(Create(other).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  grpc::ClientContext ctx;
  v1::UpdatePlanRequest update;
  update.set_run(kRun);
  *update.mutable_plan() = other;
  v1::UpdatePlanResponse updated;
  ASSERT_TRUE(stub_->UpdatePlan(&ctx, update, &updated).ok());
  EXPECT_EQ(updated.plan_revision(), 2u);
  EXPECT_EQ(Status().plan_revision(), 2u);
  // Kept across a restart.
  Restart();
  EXPECT_EQ(Status().plan_revision(), 2u);

  // GetPlan: the current revision by default, an older one by number, NOT_FOUND for an
  // unknown run or revision.
  auto get_plan = [&](const std::string& run, uint32_t revision, v1::PlanRevision& out) {
    grpc::ClientContext c;
    v1::GetPlanRequest request;
    request.set_run(run);
    request.set_revision(revision);
    return stub_->GetPlan(&c, request, &out);
  };
  v1::PlanRevision current, first, none;
  ASSERT_TRUE(get_plan(kRun, 0, current).ok());
  EXPECT_EQ(current.revision(), 2u);
  EXPECT_EQ(current.plan().fleet().gpus(), 8192u);
  ASSERT_TRUE(get_plan(kRun, 1, first).ok());
  EXPECT_EQ(first.plan().fleet().gpus(), 4096u);
  // Each revision comes with its own report: twice the replicas, twice the batch.
  EXPECT_EQ(current.report().batch().tokens_per_step(), 2 * first.report().batch().tokens_per_step());
  const grpc::Status missing = get_plan(kRun, 3, none);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(missing.error_message().find("no plan revision 3 (it has 2)"), std::string::npos)
      << missing.error_message();
  EXPECT_EQ(get_plan("nope", 0, none).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(DaemonTest, RunsBeyondTheLimitAreRefused) {
  daemon::TrackerOptions two;
  two.max_runs = 2;
  Restart(two);
  EXPECT_TRUE(Create(FlagshipPlan(), nullptr, "a").ok());
  EXPECT_TRUE(Create(FlagshipPlan(), nullptr, "b").ok());
  const grpc::Status st = Create(FlagshipPlan(), nullptr, "c");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(st.error_message().find("--max-runs 2"), std::string::npos) << st.error_message();
  EXPECT_TRUE(Create(FlagshipPlan(), nullptr, "a").ok());  // an existing run is no new run
}

TEST_F(DaemonTest, PlanThatFailsItsOwnChecksIsRefusedWithTheFindings) {
  v1::Plan bad = FlagshipPlan();
  bad.mutable_data()->set_token_dtype("uint16");
  grpc::Status st = Create(bad);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("TOKEN_DTYPE_OVERFLOW"), std::string::npos) << st.error_message();
  grpc::ClientContext ctx;
  v1::ListRunsResponse runs;
  ASSERT_TRUE(stub_->ListRuns(&ctx, v1::ListRunsRequest(), &runs).ok());
  EXPECT_EQ(runs.runs_size(), 0);
  EXPECT_EQ(Create(FlagshipPlan(), nullptr, "bad name!").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DaemonTest, AccountsACrashToTheSecondAndSurvivesARestart) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  // The crash of tests/accounting_test.cc, over gRPC, in two batches, the second out of order.
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 300, 100, 1000), StepsAt(kRun, 360, 110, 1100),
                      StepsAt(kRun, 420, 120, 1200), CheckpointAt(kRun, 430, 120, 10)})
                  .ok());
  v1::BatchAck ack;
  ASSERT_TRUE(Report({StepsAt(kRun, 1060, 140, 1400), StepsAt(kRun, 490, 130, 1300), InterruptedAt(kRun, 580, "gpu"),
                      StepsAt(kRun, 550, 140, 1400), StartedAt(kRun, 880, 2, 120), StepsAt(kRun, 1000, 130, 1300)},
                     &ack)
                  .ok());
  EXPECT_EQ(ack.accepted(), 6u);
  v1::RunStatus s = Status();
  EXPECT_EQ(s.state(), "running");
  EXPECT_EQ(s.progress().tokens(), 1400);
  EXPECT_DOUBLE_EQ(s.time_seconds().productive(), 240);
  EXPECT_DOUBLE_EQ(s.time_seconds().checkpoint(), 10);
  EXPECT_DOUBLE_EQ(s.time_seconds().lost(), 150);
  EXPECT_DOUBLE_EQ(s.time_seconds().startup(), 360);
  EXPECT_DOUBLE_EQ(s.time_seconds().down_unplanned(), 300);
  EXPECT_DOUBLE_EQ(s.time_seconds().elapsed(), 1060);
  ASSERT_EQ(s.interruptions_size(), 1);
  EXPECT_EQ(s.interruptions(0).cause(), "gpu");
  EXPECT_DOUBLE_EQ(s.failure_budget().consumed_seconds(), 510);
  EXPECT_GT(s.throughput().plan_tokens_per_second(), 3e6);
  // Cost: the flagship reserves 4,096 + 24 x 8 spare GPUs at $2.50 an hour, power included:
  // 1,060 s cost 4,288 x 2.5 x 1,060 / 3,600; badput is all but the 240 productive seconds.
  const v1::RunCost& cost = s.cost();
  EXPECT_DOUBLE_EQ(cost.reserved_gpus(), 4288);
  EXPECT_NEAR(cost.spent_dollars(), 4288 * 2.5 * 1060 / 3600, 1e-6);
  EXPECT_NEAR(cost.badput_dollars(), 4288 * 2.5 * (1060 - 240) / 3600.0, 1e-6);
  ASSERT_EQ(cost.categories_size(), 7);
  EXPECT_EQ(cost.categories(4).category(), "down_unplanned");
  EXPECT_NEAR(cost.categories(4).dollars(), 4288 * 2.5 * 300 / 3600, 1e-6);
  EXPECT_GT(cost.categories(0).energy_joules() / 240, cost.categories(4).energy_joules() / 300);  // idle draws less
  EXPECT_GT(cost.projected_dollars_p90(), cost.projected_dollars_p50());
  EXPECT_GT(cost.projected_dollars_p50(), 1e7);  // ~41 days of 4,288 GPUs at $2.50

  Restart();
  EXPECT_EQ(Status().DebugString(), s.DebugString());
}

TEST_F(DaemonTest, ThePlanLineFollowsThePlansPhases) {
  // The flagship in two halves, the second at 16K sequences on cp 2 (slower per token: the
  // attention term doubles), so its share of the schedule is more than half.
  const v1::Plan plan = TwoPhaseFlagship(5'000'000'000'000);
  ASSERT_TRUE(Create(plan).ok());
  const planner::PlanReport report = planner::ComputePlan(convert::PlanFromProto(plan));
  ASSERT_EQ(report.phases.size(), 2u);
  const double end1 = report.phases[0].schedule_end_seconds, end2 = report.phases[1].schedule_end_seconds;
  ASSERT_LT(end1, 0.49 * end2);  // not the straight line's half
  // At the first phase's end the plan line stands at its 5e12 tokens; halfway through the
  // second, at 7.5e12.
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, end1, 1, 1000)}).ok());
  EXPECT_NEAR(static_cast<double>(Status().progress().plan_tokens()), 5e12, 1);
  ASSERT_TRUE(Report({StepsAt(kRun, (end1 + end2) / 2, 2, 2000)}).ok());
  EXPECT_NEAR(static_cast<double>(Status().progress().plan_tokens()), 7.5e12, 1e3);
}

TEST_F(DaemonTest, APlanPhasesNewPaceIsNotASlowdown) {
  // A first phase of 0.5e12 tokens at 8K, then 16K on cp 2, the tokens per step the same:
  // the run slows per token where the plan says it will. The daemon gives the fold the
  // plan's phase ends (FoldSettings), so the slowdown detector starts its reference again
  // there, before and after a restart (the snapshot and the events after it).
  const v1::Plan plan = TwoPhaseFlagship(500'000'000'000);
  ASSERT_TRUE(Create(plan).ok());
  const planner::PlanReport report = planner::ComputePlan(convert::PlanFromProto(plan));
  ASSERT_EQ(report.phases.size(), 2u);
  const double r1 = report.phases[0].tokens_per_second, r2 = report.phases[1].tokens_per_second;
  ASSERT_LT(r2, 0.97 * r1);  // a change the detector would otherwise signal
  const int64_t per_step = 16 << 20;
  std::vector<v1::Event> batch = {StartedAt(kRun, 0, 1, 0)};
  double t = 60;
  int64_t step = 0;
  // Reports every 100 steps until 1.5 days past the phase's end.
  double after_end = -1;
  while (after_end < 0 || t < after_end + 36 * 3600) {
    const double rate = static_cast<double>(step * per_step) < 5e11 ? r1 : r2;
    step += 100;
    t += 100.0 * static_cast<double>(per_step) / rate;
    if (after_end < 0 && static_cast<double>(step * per_step) >= 5e11) after_end = t;
    batch.push_back(StepsAt(kRun, t, step, step * per_step));
    if (batch.size() == 200) {
      ASSERT_TRUE(Report(batch).ok());
      batch.clear();
    }
  }
  ASSERT_TRUE(Report(batch).ok());
  v1::RunStatus s = Status();
  EXPECT_EQ(s.slowdown().count(), 0u) << s.slowdown().DebugString();
  EXPECT_NEAR(s.slowdown().reference_tokens_per_second(), r2, 0.01 * r2);
  Restart();
  batch.clear();
  for (int i = 0; i < 24 * 12; ++i) {  // 12 h more at the second phase's pace
    step += 100;
    t += 100.0 * static_cast<double>(per_step) / r2;
    batch.push_back(StepsAt(kRun, t, step, step * per_step));
  }
  ASSERT_TRUE(Report(batch).ok());
  s = Status();
  EXPECT_EQ(s.slowdown().count(), 0u) << s.slowdown().DebugString();
  EXPECT_NEAR(s.slowdown().reference_tokens_per_second(), r2, 0.01 * r2);
}

TEST_F(DaemonTest, DuplicatesAreAcknowledgedAndIgnored) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  v1::Event started = StartedAt(kRun, 0, 1, 0);
  started.set_id("a1");
  v1::Event steps = StepsAt(kRun, 60, 10, 100);
  steps.set_id("s10");
  ASSERT_TRUE(Report({started, steps}).ok());
  const v1::RunStatus before = Status();
  v1::BatchAck ack;
  // Same ids; and an event without id whose natural key repeats.
  v1::Event no_id = StepsAt(kRun, 120, 20, 200);
  ASSERT_TRUE(Report({started, steps, no_id}, &ack).ok());
  EXPECT_EQ(ack.accepted(), 1u);
  EXPECT_EQ(ack.duplicates(), 2u);
  ASSERT_TRUE(Report({no_id, steps}, &ack).ok());
  EXPECT_EQ(ack.accepted(), 0u);
  EXPECT_EQ(ack.duplicates(), 2u);
  const v1::RunStatus after = Status();
  EXPECT_EQ(after.events(), before.events() + 1);
  EXPECT_EQ(after.progress().tokens(), 200);
}

TEST_F(DaemonTest, EventsWithoutIdsAreIdempotentAcrossARelaunch) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  // No ids: natural keys. Attempt 1 runs, crashes, attempt 2 restarts from scratch.
  const std::vector<v1::Event> log = {StartedAt(kRun, 0, 1, 0),        StepsAt(kRun, 100, 10, 100),
                                      InterruptedAt(kRun, 150, "gpu"), StartedAt(kRun, 200, 2, 0),
                                      StepsAt(kRun, 300, 10, 100),     StepsAt(kRun, 400, 20, 200)};
  for (const v1::Event& e : log) ASSERT_TRUE(Report({e}).ok());
  const v1::RunStatus before = Status();
  // A client retrying everything: every event is recognised, nothing is refused.
  v1::BatchAck ack;
  ASSERT_TRUE(Report(log, &ack).ok());
  EXPECT_EQ(ack.accepted(), 0u);
  EXPECT_EQ(ack.duplicates(), log.size());
  EXPECT_EQ(Status().DebugString(), before.DebugString());
}

struct BadBatch {
  const char* name;
  std::vector<v1::Event> events;
  grpc::StatusCode code;
  const char* says;
};

v1::Event NoTime() {
  v1::Event e = StepsAt(kRun, 500, 31, 310);
  e.clear_time();
  return e;
}
v1::Event NoKind() {
  v1::Event e = StepsAt(kRun, 500, 31, 310);
  e.clear_steps();
  return e;
}
v1::Event FromAttempt(v1::Event e, uint32_t attempt) {
  e.set_attempt(attempt);
  return e;
}

TEST_F(DaemonTest, BadInputGetsItsCodeAndChangesNothing) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 100, 10, 100), InterruptedAt(kRun, 150, "gpu"),
                      StartedAt(kRun, 200, 2, 0), StepsAt(kRun, 300, 20, 200), CheckpointAt(kRun, 310, 20, 10),
                      StepsAt(kRun, 400, 30, 300)})
                  .ok());
  const v1::RunStatus before = Status();
  const BadBatch cases[] = {
      {"unknown run", {StepsAt("nope", 500, 31, 310)}, grpc::StatusCode::NOT_FOUND, "run 'nope' does not exist"},
      {"no time", {NoTime()}, grpc::StatusCode::INVALID_ARGUMENT, "event.time is required"},
      {"no kind", {NoKind()}, grpc::StatusCode::INVALID_ARGUMENT, "event has no kind"},
      {"negative tokens",
       {StepsAt(kRun, 500, 31, -5)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "steps.tokens -5 is negative"},
      {"tokens backwards", {StepsAt(kRun, 500, 31, 250)}, grpc::StatusCode::FAILED_PRECONDITION, "without a restore"},
      {"superseded attempt",
       {FromAttempt(StepsAt(kRun, 500, 31, 310), 1)},
       grpc::StatusCode::FAILED_PRECONDITION,
       "which attempt 2 superseded"},
      // One bad event spoils its batch: the good one before it is not stored either.
      {"good then bad",
       {StepsAt(kRun, 500, 31, 310), StepsAt(kRun, 510, 32, 100)},
       grpc::StatusCode::FAILED_PRECONDITION,
       "events[1]"},
      {"bad run name", {StepsAt("a/b", 500, 31, 310)}, grpc::StatusCode::INVALID_ARGUMENT, "run name"},
      {"attempt contradicts job_started",
       {FromAttempt(StartedAt(kRun, 500, 3, 0), 4)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "contradicts job_started.attempt"},
  };
  for (const BadBatch& c : cases) {
    grpc::Status st = Report(c.events);
    EXPECT_EQ(st.error_code(), c.code) << c.name << ": " << st.error_message();
    EXPECT_NE(st.error_message().find(c.says), std::string::npos) << c.name << ": " << st.error_message();
    EXPECT_EQ(Status().DebugString(), before.DebugString()) << c.name;
  }
  // Over the batch limit: its own refusal (split it), not the queue's (wait), with the limit.
  std::vector<v1::Event> huge(10001, StepsAt(kRun, 500, 31, 310));
  const grpc::Status oversized = Report(huge);
  EXPECT_EQ(oversized.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(oversized.error_message().find("batch of 10001 events is over the limit of 10000"), std::string::npos)
      << oversized.error_message();
  // For programs, the limit in the trailing metadata, not in the prose.
  {
    grpc::ClientContext ctx;
    v1::EventBatch batch;
    for (const v1::Event& e : huge) *batch.add_events() = e;
    v1::BatchAck ack;
    ASSERT_EQ(stub_->ReportBatch(&ctx, batch, &ack).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    const auto& trailers = ctx.GetServerTrailingMetadata();
    auto it = trailers.find("flightplan-max-batch-events");
    ASSERT_NE(it, trailers.end());
    EXPECT_EQ(std::string(it->second.data(), it->second.size()), "10000");
  }
  EXPECT_EQ(Status().DebugString(), before.DebugString());
}

TEST_F(DaemonTest, RestoreToAStepNeverCheckpointedIsAcceptedAndFlagged) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 100, 10, 100), StepsAt(kRun, 200, 20, 200),
                      InterruptedAt(kRun, 210, "gpu"), StartedAt(kRun, 300, 2, 15)})
                  .ok());
  const v1::RunStatus s = Status();
  ASSERT_EQ(s.flags_size(), 1);
  EXPECT_NE(s.flags(0).find("never checkpointed"), std::string::npos);
}

// Implausible progress is accepted (the job said so) but flagged in the status (issue 12).
TEST_F(DaemonTest, ProgressBeyondTheTargetAndTheFleetIsAcceptedAndFlagged) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  // 2e13 tokens in 1,000 s: twice the 10e12 target, at 2e10 tokens/s (the plan: 3.3e6).
  ASSERT_TRUE(
      Report({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 100, 10, 100), StepsAt(kRun, 1100, 20, 20'000'000'000'000)})
          .ok());
  const v1::RunStatus s = Status();
  EXPECT_EQ(s.progress().tokens(), 20'000'000'000'000);
  ASSERT_EQ(s.flags_size(), 3) << s.DebugString();
  // The fold's, at the step (issue 37), then the status's on the whole run.
  EXPECT_NE(s.flags(0).find("arrived faster than the plan's fleet trains them"), std::string::npos) << s.flags(0);
  EXPECT_NE(s.flags(0).find("up to step 20"), std::string::npos) << s.flags(0);
  EXPECT_NE(s.flags(1).find("200% of the target"), std::string::npos) << s.flags(1);
  EXPECT_NE(s.flags(2).find("100% MFU"), std::string::npos) << s.flags(2);
}

TEST_F(DaemonTest, GarbageOnTheWireIsRefusedAndTheDaemonServesOn) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  const RawResult r =
      RawUnary(channel_, "/flightplan.v1.Tracker/ReportBatch", "\xff\xff\xff\xff\x0f this is not a protobuf");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(Status().events(), 0u);
  EXPECT_TRUE(Report({StartedAt(kRun, 0, 1, 0)}).ok());
}

TEST_F(DaemonTest, StreamAcknowledgesEachBatchInOrder) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  grpc::ClientContext ctx;
  auto stream = stub_->ReportEvents(&ctx);
  v1::EventBatch b1, b2, b3;
  b1.set_sequence(1);
  *b1.add_events() = StartedAt(kRun, 0, 1, 0);
  *b1.add_events() = StepsAt(kRun, 60, 10, 100);
  b2.set_sequence(2);
  *b2.add_events() = StepsAt(kRun, 120, 5, 50);  // backwards: refused
  b3.set_sequence(3);
  *b3.add_events() = StepsAt(kRun, 120, 20, 200);
  ASSERT_TRUE(stream->Write(b1));
  ASSERT_TRUE(stream->Write(b2));
  ASSERT_TRUE(stream->Write(b3));
  stream->WritesDone();
  std::vector<v1::BatchAck> acks;
  v1::BatchAck ack;
  while (stream->Read(&ack)) acks.push_back(ack);
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(acks.size(), 3u);
  EXPECT_EQ(acks[0].sequence(), 1u);
  EXPECT_EQ(acks[0].accepted(), 2u);
  EXPECT_EQ(acks[1].sequence(), 2u);
  EXPECT_EQ(acks[1].code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  EXPECT_NE(acks[1].message().find("goes backwards"), std::string::npos);
  // The stream is an ordered log: the batch after a refused one is refused too (ABORTED),
  // so that a client resending from the refusal keeps its events in order.
  EXPECT_EQ(acks[2].code(), static_cast<int>(grpc::StatusCode::ABORTED));
  EXPECT_NE(acks[2].message().find("batch 2 of this stream was refused"), std::string::npos);
  EXPECT_EQ(Status().progress().tokens(), 100);
  v1::BatchAck resent;
  ASSERT_TRUE(Report({StepsAt(kRun, 120, 20, 200)}, &resent).ok());
  EXPECT_EQ(Status().progress().tokens(), 200);
}

// An oversized batch on a stream: its ack carries the limit for the client to split by
// (max_batch_events), and an ordinary refusal carries none.
TEST_F(DaemonTest, AStreamBatchOverTheLimitSaysTheLimitInItsAck) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  grpc::ClientContext ctx;
  auto stream = stub_->ReportEvents(&ctx);
  v1::EventBatch big, bad;
  big.set_sequence(1);
  for (int i = 0; i < 10001; ++i) *big.add_events() = StartedAt(kRun, 0, 1, 0);
  ASSERT_TRUE(stream->Write(big));
  stream->WritesDone();
  v1::BatchAck ack;
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(ack.max_batch_events(), 10000u);
  while (stream->Read(&ack)) {
  }
  stream->Finish().IgnoreError();
  grpc::ClientContext ctx2;
  auto second = stub_->ReportEvents(&ctx2);
  bad.set_sequence(1);
  *bad.add_events() = StepsAt("a/b", 1, 1, 1);
  ASSERT_TRUE(second->Write(bad));
  second->WritesDone();
  ASSERT_TRUE(second->Read(&ack));
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(ack.max_batch_events(), 0u);
  while (second->Read(&ack)) {
  }
  second->Finish().IgnoreError();
  EXPECT_EQ(Status().events(), 0u);
}

TEST_F(DaemonTest, WatchPushesWhenTheRunChanges) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0)}).ok());
  grpc::ClientContext ctx;
  v1::GetStatusRequest request;
  request.set_run(kRun);
  auto reader = stub_->WatchStatus(&ctx, request);
  v1::RunStatus s;
  ASSERT_TRUE(reader->Read(&s));
  EXPECT_EQ(s.events(), 1u);
  ASSERT_TRUE(Report({StepsAt(kRun, 60, 10, 100)}).ok());
  // Coalesced pushes: read until the change shows (bounded by the test's own timeout).
  while (s.events() < 2 && reader->Read(&s)) {
  }
  EXPECT_EQ(s.events(), 2u);
  EXPECT_EQ(s.progress().tokens(), 100);
  ctx.TryCancel();
  v1::RunStatus rest;
  while (reader->Read(&rest)) {
  }
  // An unknown run ends the watch with NOT_FOUND.
  grpc::ClientContext ctx2;
  request.set_run("nope");
  auto missing = stub_->WatchStatus(&ctx2, request);
  EXPECT_FALSE(missing->Read(&s));
  EXPECT_EQ(missing->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// A watcher that stops reading holds one status in flight and one "changed" flag on the
// server, not a backlog: when it reads again it gets a few statuses the transport had
// buffered, then the latest, never one per change.
TEST_F(DaemonTest, SlowWatcherGetsTheLatestStatusNotABacklog) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  ASSERT_TRUE(Report({StartedAt(kRun, 0, 1, 0)}).ok());
  // The client's receive window stays at its default (no BDP probing growing it), so what
  // the transport can buffer for the sleeping reader is bounded and small.
  auto stub = FixedWindowStub();
  grpc::ClientContext ctx;
  v1::GetStatusRequest request;
  request.set_run(kRun);
  auto reader = stub->WatchStatus(&ctx, request);
  v1::RunStatus s;
  ASSERT_TRUE(reader->Read(&s));
  const int changes = 2000;
  for (int i = 1; i <= changes; ++i) {
    ASSERT_TRUE(Report({StepsAt(kRun, 60.0 * i, 10 * i, 1000 * i)}).ok());
  }
  int received = 0;
  while (s.events() < static_cast<uint64_t>(changes) + 1 && reader->Read(&s)) ++received;
  EXPECT_EQ(s.events(), static_cast<uint64_t>(changes) + 1);
  EXPECT_LT(received, changes / 4) << "the watcher was sent a status per change";
  std::printf("slow watcher: %d statuses for %d changes\n", received, changes);
  ctx.TryCancel();
  while (reader->Read(&s)) {
  }
}

// A client that floods a stream without reading its acks makes the server stop reading
// (bounded memory per stream); when that client then goes away, the stream must still end:
// otherwise it leaks and the daemon's drain never finishes.
TEST_F(DaemonTest, AFloodingClientThatVanishesDoesNotHangTheDrain) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  auto stub = FixedWindowStub();  // a fixed receive window fills with unread acks
  grpc::ClientContext ctx;
  auto stream = stub->ReportEvents(&ctx);
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 8000, 3);
  std::thread writer([&] {
    for (size_t i = 0; i < log.size(); ++i) {
      v1::EventBatch b;
      b.set_sequence(i + 1);
      *b.add_events() = log[i];
      if (!stream->Write(b)) break;
    }
  });
  // Until the server stops reading: no event is accepted for a while.
  uint64_t events = 0;
  for (int still = 0; still < 10;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now = Status().events();
    still = now == events ? still + 1 : 0;
    events = now;
  }
  EXPECT_LT(events, log.size()) << "the server read everything: the stream never paused";
  ctx.TryCancel();
  writer.join();
  auto drained = std::async(std::launch::async, [this] { daemon_->Shutdown(absl::Seconds(2)); });
  if (drained.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "the daemon's drain hangs on the abandoned stream";
    std::fflush(stdout);
    std::_Exit(1);
  }
  stream->Finish().IgnoreError();
}

// The label limit is for metrics only: the status keeps every cause, also after a
// restart (issue 12; exporters_test checks that /metrics sums those past it as "other").
TEST_F(DaemonTest, InterruptionCausesPastTheLabelLimitAreOtherOnlyOnMetrics) {
  daemon::TrackerOptions limited;
  limited.max_label_values = 2;
  Restart(limited);
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  std::vector<v1::Event> events = {StartedAt(kRun, 0, 1, 0)};
  const char* causes[] = {"gpu", "nccl", "hang", "oom", "gpu"};
  double t = 0;
  for (uint32_t i = 0; i < 5; ++i) {
    events.push_back(StepsAt(kRun, t += 600, 10 * (i + 1), 1000 * (i + 1)));
    events.push_back(InterruptedAt(kRun, t += 10, causes[i]));
    events.push_back(StartedAt(kRun, t += 300, i + 2, 10 * (i + 1)));
  }
  ASSERT_TRUE(Report(events).ok());
  auto status_counts = [&] {
    std::map<std::string, uint32_t> counts;
    const v1::RunStatus status = Status();
    for (const auto& c : status.interruptions()) counts[c.cause()] += c.count();
    return counts;
  };
  EXPECT_EQ(status_counts(), (std::map<std::string, uint32_t>{{"gpu", 2}, {"nccl", 1}, {"hang", 1}, {"oom", 1}}));
  Restart(limited);  // after a restart too, and for a cause first seen after it
  ASSERT_TRUE(Report({StepsAt(kRun, t += 600, 60, 6000), InterruptedAt(kRun, t += 10, "ecc")}).ok());
  EXPECT_EQ(status_counts(),
            (std::map<std::string, uint32_t>{{"gpu", 2}, {"nccl", 1}, {"hang", 1}, {"oom", 1}, {"ecc", 1}}));
}

TEST_F(DaemonTest, HealthServiceServes) {
  // HealthCheckRequest{service: ""} encodes to nothing; the answer is status SERVING (1).
  const RawResult r = RawUnary(channel_, "/grpc.health.v1.Health/Check", "");
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.response, std::string("\x08\x01", 2));
}

TEST_F(DaemonTest, ReflectionListsTheServices) {
  namespace refl = ::flightplan::testing::reflection;
  const grpc::internal::RpcMethod method("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                         grpc::internal::RpcMethod::BIDI_STREAMING, channel_);
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>> stream(
      grpc::internal::ClientReaderWriterFactory<refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(
          channel_.get(), method, &ctx));
  refl::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  refl::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::set<std::string> names;
  for (const auto& s : response.list_services_response().service()) names.insert(s.name());
  EXPECT_TRUE(names.count("flightplan.v1.Tracker"));
  EXPECT_TRUE(names.count("grpc.health.v1.Health"));
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

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
