// flightpland as a child process on free loopback ports, for tests that need the real
// binary (kill -9, storage faults). The run they query is kRun (the flagship plan's name).
#ifndef FLIGHTPLAN_TESTS_DAEMON_PROCESS_H_
#define FLIGHTPLAN_TESTS_DAEMON_PROCESS_H_

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sqlite3.h"
#include "tests/subprocess.h"

namespace flightplan::testing {

inline constexpr char kRun[] = "dense-70b-10t";

// A flightpland child on a free port, with the event clock.
// Runs the flightplan command line against `server` and waits for it.
inline ProcessResult Cli(const std::string& server, std::vector<std::string> args) {
  std::vector<std::string> argv = {FLIGHTPLAN_BIN, "--server", server};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

class DaemonProcess {
 public:
  DaemonProcess(const std::string& db, const std::string& log, bool metrics = false,
                std::vector<std::string> extra = {})
      : child_(Args(db, metrics, std::move(extra)), log) {
    const std::string text = child_.WaitForLog("serving gRPC on", 20);
    std::smatch m;
    static const std::regex kPort("serving gRPC on 127\\.0\\.0\\.1:([0-9]+)");
    if (std::regex_search(text, m, kPort)) address_ = "127.0.0.1:" + m[1].str();
    static const std::regex kMetrics("metrics on http://127\\.0\\.0\\.1:([0-9]+)/metrics");
    if (std::regex_search(text, m, kMetrics)) metrics_port_ = std::stoi(m[1].str());
  }
  const std::string& address() const { return address_; }
  int metrics_port() const { return metrics_port_; }

  static std::vector<std::string> Args(const std::string& db, bool metrics, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        FLIGHTPLAN_DAEMON_BIN,        "--db",    db,      "--listen", "127.0.0.1:0", "--metrics",
        metrics ? "127.0.0.1:0" : "", "--clock", "events"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  Child& child() { return child_; }

  // The run's status once its forecast has caught up with its events (forecasts run off
  // the ingest path), so that two statuses of the same history compare equal. After a
  // replay that means every backfill state simulated first (a fresh status implies the
  // history holds its point): 10-15 s under ASan, over 20 s with both cores loaded besides,
  // hence a bound of 90 s, which a forecast that never catches up fails loudly.
  v1::RunStatus Status() const {
    auto stub = v1::Tracker::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    v1::RunStatus status;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    do {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      v1::GetStatusRequest request;
      request.set_run(kRun);
      const grpc::Status st = stub->GetStatus(&ctx, request, &status);
      EXPECT_TRUE(st.ok()) << st.error_message();
      if (!st.ok() || !status.forecast().forecast_stale()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_FALSE(status.forecast().forecast_stale()) << "the forecast did not catch up in 90 s";
    return status;
  }

  // The status right now, whatever the forecast's state.
  uint64_t Events() const {
    auto stub = v1::Tracker::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetStatusRequest request;
    request.set_run(kRun);
    v1::RunStatus status;
    EXPECT_TRUE(stub->GetStatus(&ctx, request, &status).ok());
    return status.events();
  }

 private:
  Child child_;
  std::string address_;
  int metrics_port_ = 0;
};

// The natural keys of every stored event (read straight from the file); *rows counts
// rows, so rows > keys.size() would mean an event stored twice.
inline std::set<std::string> StoredKeys(const std::string& db, int64_t* rows) {
  std::set<std::string> keys;
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(h, "SELECT key FROM events", -1, &stmt, nullptr);
  *rows = 0;
  while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
    keys.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    ++*rows;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(h);
  return keys;
}

// One batch through ReportBatch.
inline grpc::Status SendBatch(const std::string& address, const v1::EventBatch& batch, v1::BatchAck* ack = nullptr) {
  auto stub = v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::BatchAck local;
  return stub->ReportBatch(&ctx, batch, ack ? ack : &local);
}

// `events` cut into batches of `size`.
inline std::vector<v1::EventBatch> Batches(const std::vector<v1::Event>& events, size_t size) {
  std::vector<v1::EventBatch> out;
  for (size_t i = 0; i < events.size(); i += size) {
    v1::EventBatch b;
    for (size_t j = i; j < std::min(events.size(), i + size); ++j) *b.add_events() = events[j];
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_DAEMON_PROCESS_H_
