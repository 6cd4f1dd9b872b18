#include "forecast/event.h"

#include "absl/strings/str_cat.h"

namespace flightplan::forecast {

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kJobStarted: return "job_started";
    case EventKind::kSteps: return "steps";
    case EventKind::kCheckpointSaved: return "checkpoint_saved";
    case EventKind::kInterruption: return "interruption";
    case EventKind::kRunFinished: return "run_finished";
  }
  return "unknown";
}

std::string EventKey(const Event& e, uint32_t attempt) {
  if (!e.id.empty()) return e.id;
  switch (e.kind) {
    case EventKind::kJobStarted: return absl::StrCat("~js/a", e.attempt);
    case EventKind::kSteps: return absl::StrCat("~st/a", attempt, "/s", e.step);
    case EventKind::kCheckpointSaved: return absl::StrCat("~ck/a", attempt, "/s", e.step);
    case EventKind::kInterruption:
      return absl::StrCat("~in/a", attempt, "/t", absl::ToUnixMicros(e.time));
    case EventKind::kRunFinished: return "~fin";
  }
  return "~";
}

}  // namespace flightplan::forecast
