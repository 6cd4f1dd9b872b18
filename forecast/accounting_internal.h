// What the accounting's files share: the stall split, flags, productive and custom charges
// (here), and each file's part of the fold (accounting.cc: the fold of one event, ApplyEvent;
// lineage.cc: the lineage's marks, its restores and saves; samples.cc: the samples the
// forecasts read, and the snapshot). Not the interface: that is forecast/accounting.h.
#ifndef FLIGHTPLAN_FORECAST_ACCOUNTING_INTERNAL_H_
#define FLIGHTPLAN_FORECAST_ACCOUNTING_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"

namespace flightplan::forecast::accounting_internal {

constexpr size_t kMaxFlags = 32;

// Seconds past the stall threshold are `stalled`; below it, all of the gap is work.
struct Split {
  double work = 0;
  double stalled = 0;
};

inline Split SplitStall(double gap, double typical) {
  if (typical <= 0) {
    if (gap <= kStallUnknownSeconds) return {gap, 0};
    return {kStallUnknownSeconds, gap - kStallUnknownSeconds};
  }
  const double threshold = std::max(kStallFactor * typical, kStallMinSeconds);
  if (gap <= threshold) return {gap, 0};
  return {typical, gap - typical};
}

inline void AddFlag(RunState& s, std::string flag) {
  if (s.flags.size() >= kMaxFlags) s.flags.erase(s.flags.begin());
  s.flags.push_back(std::move(flag));
}

// The share of a productive second that the launch's GPUs make: 1 on the plan's fleet (or
// when either count is unknown), gpus / plan's below it.
inline double CapacityShare(const RunState& s) {
  const uint32_t plan = s.settings.plan_gpus;
  return s.gpus > 0 && plan > 0 && s.gpus < plan ? static_cast<double>(s.gpus) / plan : 1.0;
}

// Productive seconds of the launch: the missing GPUs' share is `capacity`.
inline void ChargeProductive(const RunState& s, TimeSeconds& x, double seconds) {
  const double share = CapacityShare(s);
  x.productive += seconds * share;
  x.capacity += seconds * (1 - share);
}

inline void AddCustom(std::vector<SpanSeconds>& by_kind, const std::string& kind, double seconds) {
  for (SpanSeconds& k : by_kind) {
    if (k.kind == kind) {
      k.seconds += seconds;
      return;
    }
  }
  if (by_kind.size() + 1 >= kMaxSpanKinds && kind != "other") {
    AddCustom(by_kind, "other", seconds);
    return;
  }
  by_kind.push_back({kind, seconds});
}

// lineage.cc: a launch's restore; a step report and a save remembered; a save ahead of the
// reports.
void Restore(RunState& s, int64_t step, uint32_t attempt);
void AddStepMark(RunState& s);
void AddMark(RunState& s, int64_t step);
void SaveAhead(RunState& s, int64_t step);

// samples.cc: the samples each event adds (wall tokens, the failure budget, the evidence),
// and each step report (throughput).
void PushTokenSample(RunState& s, absl::Time t);
void PushBudgetSample(RunState& s, absl::Time t);
void PushEvidence(RunState& s, absl::Time t);
void PushSample(RunState& s, absl::Time t);

}  // namespace flightplan::forecast::accounting_internal

#endif  // FLIGHTPLAN_FORECAST_ACCOUNTING_INTERNAL_H_
