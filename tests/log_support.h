// What the log converter tests share: a fixture's lines (tests/logs), fed to one LogEvents as
// `flightplan tail --from-start --exit-at-eof` feeds them, and folded as the daemon folds
// the events; the core_v0.19.0 fixture dying of an NCCL error.
#ifndef FLIGHTPLAN_TESTS_LOG_SUPPORT_H_
#define FLIGHTPLAN_TESTS_LOG_SUPPORT_H_

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "cli/log_events.h"
#include "convert/event_convert.h"
#include "forecast/accounting.h"
#include "gtest/gtest.h"

namespace flightplan::cli {

inline std::vector<std::string> ReadLines(const std::string& name) {
  std::ifstream in(std::string(FLIGHTPLAN_LOGS_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The fixture's lines through one converter, as `tail --from-start --exit-at-eof` feeds them.
struct Tailed {
  std::vector<v1::Event> events;
  uint64_t unused = 0;
  absl::Status status;  // the first error (the caller stops there)
};

inline Tailed Feed(const std::vector<std::string>& lines, LogOptions options,
                   const std::function<absl::Time(const std::string&)>& read = nullptr) {
  options.run = "r";
  LogEvents converter(options);
  Tailed t;
  const absl::Time fixed = absl::FromUnixSeconds(1900000000);
  for (const std::string& line : lines) {
    t.status = converter.Feed(line, read ? read(line) : fixed, t.events);
    if (!t.status.ok()) return t;
  }
  converter.Finish(t.events);
  t.unused = converter.unused();
  return t;
}

inline absl::Time T(const char* text) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime("%Y-%m-%d %H:%M:%E*S", text, &t, &err)) << err;
  return t;
}

// The fixtures' scenarios start at 2027-01-04 00:00:00 (tests/logs/make_fixtures.py).
inline absl::Time At(double seconds) { return T("2027-01-04 00:00:00") + absl::Seconds(seconds); }

struct Kinds {
  std::vector<v1::Event> starts, steps, saves, stops;
};
inline Kinds Split(const std::vector<v1::Event>& events) {
  Kinds k;
  for (const v1::Event& e : events) {
    if (e.has_job_started()) k.starts.push_back(e);
    if (e.has_steps()) k.steps.push_back(e);
    if (e.has_checkpoint_saved()) k.saves.push_back(e);
    if (e.has_interruption()) k.stops.push_back(e);
  }
  return k;
}

// The run's accounting of the events, as the daemon folds them.
inline forecast::RunState Fold(const std::vector<v1::Event>& events) {
  forecast::RunState state;
  for (const v1::Event& e : events) {
    absl::StatusOr<forecast::Event> fe = convert::EventFromProto(e);
    EXPECT_TRUE(fe.ok()) << fe.status();
    if (!fe.ok()) continue;
    const absl::Status st = forecast::ApplyEvent(state, *fe);
    EXPECT_TRUE(st.ok()) << st << " at " << e.DebugString();
  }
  return state;
}

// Launch 1 of the core_v0.19.0 fixture dies silently; here it dies as a real job does, with
// the lines quoted in NVIDIA/nccl#2076 (PyTorch's NCCL error and its detail line) and
// torchrun's knock-on lines (hpcaitech/ColossalAI#3514). The interruption carries the cause,
// in the whole log and in per-job files alike.
inline std::vector<std::string> MegatronDyingOfNccl() {
  std::vector<std::string> lines;
  int headers = 0;
  for (const std::string& line : ReadLines("megatron-core_v0.19.0.log")) {
    if (absl::StartsWith(line, "using world size") && ++headers == 2) {
      lines.push_back(
          "[rank3]: torch.distributed.DistBackendError: NCCL error in: "
          "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or there was a "
          "network error, NCCL version 2.21.5");
      lines.push_back(
          "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process "
          "exiting prematurely.");
      lines.push_back(
          "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing signal "
          "SIGTERM");
      lines.push_back(
          "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 3 (pid: "
          "812917) of binary: /usr/bin/python");
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_TESTS_LOG_SUPPORT_H_
