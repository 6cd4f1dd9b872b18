// The in-process daemon the daemon tests share (daemon_test.cc: ingest, errors, streams,
// watchers, health; daemon_state_test.cc: snapshots, freshness, history, backfills, storage,
// auth): a real SQLite file and a real gRPC server on 127.0.0.1 port 0, with real clients.
#ifndef FLIGHTPLAN_TESTS_DAEMON_FIXTURE_H_
#define FLIGHTPLAN_TESTS_DAEMON_FIXTURE_H_

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
#include "daemon/daemon.h"
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

namespace flightplan::testing {

inline const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

inline v1::Plan FlagshipPlan() {
  absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(kFlagship);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// The flagship in two phases: `first` tokens at 8K sequences, the rest at 16K on cp 2 (slower
// per token: the attention term doubles).
inline v1::Plan TwoPhaseFlagship(uint64_t first) {
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
    options.metrics = metrics_;
    options.node_info_metrics = node_info_metrics_;
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

  // The HTTP side ("" none; "127.0.0.1:0" a free port, daemon_->metrics_port()) and
  // --node-info-metrics, for the next Start.
  std::string metrics_;
  bool node_info_metrics_ = false;

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
inline RawResult RawUnary(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& bytes) {
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

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_DAEMON_FIXTURE_H_
