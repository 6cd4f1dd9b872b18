#include "forecast/event.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flightplan::forecast {

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kJobStarted:
      return "job_started";
    case EventKind::kSteps:
      return "steps";
    case EventKind::kCheckpointSaved:
      return "checkpoint_saved";
    case EventKind::kInterruption:
      return "interruption";
    case EventKind::kRunFinished:
      return "run_finished";
  }
  return "unknown";
}

int KindRank(EventKind k) {
  switch (k) {
    case EventKind::kJobStarted:
      return 0;
    case EventKind::kSteps:
      return 1;
    case EventKind::kCheckpointSaved:
      return 2;
    case EventKind::kInterruption:
      return 3;
    case EventKind::kRunFinished:
      return 4;
  }
  return 5;
}

std::string EventKey(const Event& e, uint32_t attempt) {
  if (!e.id.empty()) return e.id;
  switch (e.kind) {
    case EventKind::kJobStarted:
      return absl::StrCat("~js/a", e.attempt);
    case EventKind::kSteps:
      return absl::StrCat("~st/a", attempt, "/s", e.step);
    case EventKind::kCheckpointSaved:
      return absl::StrCat("~ck/a", attempt, "/s", e.step);
    case EventKind::kInterruption:
      return absl::StrCat("~in/a", attempt, "/t", absl::ToUnixMicros(e.time));
    case EventKind::kRunFinished:
      return "~fin";
  }
  return "~";
}

bool SameEvent(const Event& a, uint32_t attempt_a, const Event& b, uint32_t attempt_b) {
  return a.time == b.time && a.kind == b.kind && attempt_a == attempt_b && a.restored_step == b.restored_step &&
         a.step == b.step && a.tokens == b.tokens && a.rank_spread == b.rank_spread &&
         a.blocking_seconds == b.blocking_seconds && a.cause == b.cause && a.planned == b.planned &&
         a.source == b.source && a.launch == b.launch && a.gpus == b.gpus && a.slowest_rank == b.slowest_rank &&
         (a.kind == EventKind::kInterruption || a.nodes == b.nodes);
}

std::string FormatUtc(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone()); }

std::string Describe(const Event& e) {
  std::string out = EventKindName(e.kind);
  switch (e.kind) {
    case EventKind::kJobStarted:
      absl::StrAppend(&out, " attempt ", e.attempt, " restored step ", e.restored_step);
      if (e.gpus > 0) absl::StrAppend(&out, " on ", e.gpus, " GPUs");
      if (!e.nodes.empty()) absl::StrAppend(&out, " on ", e.nodes.size(), e.nodes.size() == 1 ? " node" : " nodes");
      break;
    case EventKind::kSteps:
      absl::StrAppend(&out, " step ", e.step, " tokens ", e.tokens);
      break;
    case EventKind::kCheckpointSaved:
      absl::StrAppend(&out, " step ", e.step, " blocking ", e.blocking_seconds, " s");
      break;
    case EventKind::kInterruption:
      absl::StrAppend(&out, " cause ", e.cause.empty() ? "unknown" : e.cause, e.planned ? " (planned)" : "");
      if (!e.nodes.empty()) absl::StrAppend(&out, " on ", absl::StrJoin(e.nodes, ","));
      break;
    case EventKind::kRunFinished:
      break;
  }
  if (e.kind != EventKind::kJobStarted && e.attempt != 0) absl::StrAppend(&out, " of attempt ", e.attempt);
  absl::StrAppend(&out, " at ", FormatUtc(e.time));
  return out;
}

}  // namespace flightplan::forecast
