// What the benchmarks that drive the real flightpland share: its memory from /proc, a
// percentile, a client that streams batches with the daemon's back-pressure, run creation,
// and the daemon started as a child on free loopback ports.
#ifndef FLIGHTPLAN_BENCH_BENCH_SUPPORT_H_
#define FLIGHTPLAN_BENCH_BENCH_SUPPORT_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/subprocess.h"

namespace flightplan::bench {

namespace v1 = flightplan::v1;
using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Resident and peak resident memory of a process, in MiB (/proc/PID/status).
struct Memory {
  double rss = 0, peak = 0;
};
inline Memory MemoryOf(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  Memory m;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss = std::strtod(line.c_str() + 6, nullptr) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) m.peak = std::strtod(line.c_str() + 6, nullptr) / 1024;
  }
  return m;
}

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct StreamStats {
  uint64_t accepted = 0, duplicates = 0, exhausted = 0, aborted = 0, other = 0, streams = 0;
};

// Streams `batches` (sequence = index + 1) on ReportEvents as fast as flow control allows.
// After a refusal the client stops writing, half-closes and reads the acks still due for
// the batches before it; then it backs off and resends from the first batch not
// acknowledged, in order, on a new stream (as flightplan replay does).
inline void StreamAll(v1::Tracker::Stub& stub, const std::vector<v1::EventBatch>& batches, StreamStats& stats,
                      std::atomic<uint64_t>& progress) {
  size_t next = 0;
  int backoff_ms = 1;
  std::vector<bool> acked(batches.size(), false);
  int fruitless = 0;  // streams in a row that ended with no ack and no refusal
  while (next < batches.size()) {
    ++stats.streams;
    grpc::ClientContext ctx;
    auto stream = stub.ReportEvents(&ctx);
    const size_t first = next;
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      for (size_t i = first; i < batches.size() && !stop; ++i) {
        if (!stream->Write(batches[i])) break;
      }
      stream->WritesDone();
    });
    v1::BatchAck ack;
    bool refused = false;
    while (stream->Read(&ack)) {
      if (ack.code() == 0) {
        stats.accepted += ack.accepted();
        stats.duplicates += ack.duplicates();
        progress += ack.accepted();
        if (ack.sequence() >= 1 && ack.sequence() <= batches.size()) acked[ack.sequence() - 1] = true;
        continue;
      }
      if (ack.code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
        ++stats.exhausted;
      else if (ack.code() == grpc::StatusCode::ABORTED)
        ++stats.aborted;
      else
        ++stats.other;
      refused = true;
      stop = true;
    }
    stop = true;
    writer.join();
    stream->Finish().IgnoreError();
    const size_t before = next;
    while (next < batches.size() && acked[next]) ++next;
    // A daemon gone (its streams end without an ack, again and again): give up, counted.
    fruitless = next == before && !refused ? fruitless + 1 : 0;
    if (fruitless >= 20) {
      ++stats.other;
      return;
    }
    if (refused) {
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms = std::min(backoff_ms * 2, 200);
    } else {
      backoff_ms = 1;
    }
  }
}

inline bool CreateRun(v1::Tracker::Stub& stub, v1::Plan plan, const std::string& name) {
  grpc::ClientContext ctx;
  v1::CreateRunRequest create;
  plan.set_name(name);
  *create.mutable_plan() = plan;
  create.set_run(name);
  v1::CreateRunResponse response;
  const grpc::Status st = stub.CreateRun(&ctx, create, &response);
  if (!st.ok()) std::fprintf(stderr, "create %s: %s\n", name.c_str(), st.error_message().c_str());
  return st.ok();
}

// flightpland as a child process on free loopback ports (gRPC and metrics), with `extra`
// flags; address() is empty when it did not start (its log is printed).
class DaemonChild {
 public:
  DaemonChild(const std::string& db, const std::string& log, const std::vector<std::string>& extra)
      : child_(Args(db, extra), log) {
    const std::string text = child_.WaitForLog("serving gRPC on", 20);
    std::smatch m;
    if (std::regex_search(text, m, std::regex("serving gRPC on (127\\.0\\.0\\.1:[0-9]+)"))) {
      address_ = m[1].str();
    } else {
      std::fprintf(stderr, "flightpland did not start:\n%s\n", text.c_str());
    }
    if (std::regex_search(text, m, std::regex("metrics on http://127\\.0\\.0\\.1:([0-9]+)"))) {
      metrics_port_ = std::stoi(m[1].str());
    }
  }
  const std::string& address() const { return address_; }
  int metrics_port() const { return metrics_port_; }
  int pid() const { return child_.pid(); }
  testing::Child& child() { return child_; }
  std::unique_ptr<v1::Tracker::Stub> Stub() const {
    return v1::Tracker::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }

 private:
  static std::vector<std::string> Args(const std::string& db, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {FLIGHTPLAN_DAEMON_BIN, "--db",      db,           "--listen",
                                     "127.0.0.1:0",         "--metrics", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  testing::Child child_;
  std::string address_;
  int metrics_port_ = 0;
};

}  // namespace flightplan::bench

#endif  // FLIGHTPLAN_BENCH_BENCH_SUPPORT_H_
