#include "forecast/outage.h"

#include <algorithm>

namespace flightplan::forecast {

double OutageAllowanceSeconds(double detect_seconds, double restart_seconds) {
  return std::max(detect_seconds + restart_seconds, kMinOutageAllowanceSeconds);
}

OutageReport OutageOf(const RunState& s, absl::Time plan_start, double allowance_seconds, absl::Time now) {
  OutageReport out;
  out.allowance_seconds = allowance_seconds;
  if (s.phase == Phase::kDown && s.last_stop_unplanned && !s.interruption_marks.empty()) {
    out.since = s.interruption_marks.back().time;
  } else if (s.phase == Phase::kNew && now > plan_start) {
    out.since = plan_start;
  }
  if (out.since != absl::InfinitePast()) out.seconds = std::max(0.0, absl::ToDoubleSeconds(now - out.since));
  if (out.seconds == 0) out.since = absl::InfinitePast();
  return out;
}

CheckpointReport CheckpointsOf(const RunState& s, const RunSnapshot& snap) {
  CheckpointReport out;
  out.last = s.last_checkpoint_time;
  out.observed_interval_seconds = s.typical_checkpoint_gap;
  // The newest save the lineage still stands on (a restore keeps the marks at or below it).
  double saved = 0;
  for (auto it = s.checkpoints.rbegin(); it != s.checkpoints.rend(); ++it) {
    if (it->step <= s.step) {
      saved = it->productive_seconds;
      break;
    }
  }
  out.unsaved_work_seconds = std::max(0.0, snap.seconds.productive - saved);
  return out;
}

}  // namespace flightplan::forecast
