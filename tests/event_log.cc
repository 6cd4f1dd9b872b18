#include "tests/event_log.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace flightplan::testing {
namespace {

v1::Event Base(const std::string& run, double t) {
  v1::Event e;
  e.set_run(run);
  const double whole = static_cast<double>(static_cast<int64_t>(t));
  e.mutable_time()->set_seconds(T0() + static_cast<int64_t>(t));
  e.mutable_time()->set_nanos(static_cast<int32_t>((t - whole) * 1e9));
  return e;
}

}  // namespace

int64_t T0() { return 1799020800; }

v1::Event StartedAt(const std::string& run, double t, uint32_t attempt, int64_t restored) {
  v1::Event e = Base(run, t);
  e.mutable_job_started()->set_attempt(attempt);
  e.mutable_job_started()->set_restored_step(restored);
  return e;
}

v1::Event StepsAt(const std::string& run, double t, int64_t step, int64_t tokens) {
  v1::Event e = Base(run, t);
  e.mutable_steps()->set_step(step);
  e.mutable_steps()->set_tokens(tokens);
  return e;
}

v1::Event CheckpointAt(const std::string& run, double t, int64_t step, double blocking) {
  v1::Event e = Base(run, t);
  e.mutable_checkpoint_saved()->set_step(step);
  e.mutable_checkpoint_saved()->set_blocking_seconds(blocking);
  return e;
}

v1::Event InterruptedAt(const std::string& run, double t, const std::string& cause, bool planned) {
  v1::Event e = Base(run, t);
  e.mutable_interruption()->set_cause(cause);
  e.mutable_interruption()->set_planned(planned);
  return e;
}

v1::Event FinishedAt(const std::string& run, double t) {
  v1::Event e = Base(run, t);
  e.mutable_run_finished();
  return e;
}

std::vector<v1::Event> SyntheticRun(const std::string& run, int64_t steps, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> crash_gap(400, 1000);
  std::vector<v1::Event> out;
  double t = 0;
  uint32_t attempt = 1;
  int64_t step = 0, last_checkpoint = 0;
  int64_t next_crash = crash_gap(rng);
  bool maintenance_done = false;
  int n = 0;
  auto add = [&](v1::Event e) {
    e.set_id(absl::StrCat("e", ++n));
    out.push_back(std::move(e));
  };
  add(StartedAt(run, t, attempt, 0));
  t += 120;  // startup
  while (step < steps) {
    ++step;
    add(StepsAt(run, t, step, step * 1000));
    if (step % 50 == 0) {
      t += 5;
      add(CheckpointAt(run, t, step, 5));
      last_checkpoint = step;
    }
    if (step == next_crash && step < steps) {
      const bool reported = rng() % 3 != 0;
      t += 7;
      if (reported) add(InterruptedAt(run, t, rng() % 2 ? "gpu" : "nccl"));
      t += 300 + rng() % 600;  // down
      step = last_checkpoint;
      add(StartedAt(run, t, ++attempt, step));
      t += 120;
      next_crash = step + crash_gap(rng);
      continue;
    }
    if (!maintenance_done && step >= steps / 2 && step % 50 == 0) {
      maintenance_done = true;
      add(InterruptedAt(run, t, "maintenance", true));
      t += 3600;
      add(StartedAt(run, t, ++attempt, step));
      t += 120;
      continue;
    }
    t += 10;
  }
  add(FinishedAt(run, t));
  return out;
}

std::string ToJsonLines(const std::vector<v1::Event>& events) {
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  std::string out;
  for (const v1::Event& e : events) {
    std::string line;
    (void)google::protobuf::util::MessageToJsonString(e, &line, print);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace flightplan::testing
