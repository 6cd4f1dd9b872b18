#include "forecast/event.h"

#include <iterator>

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
    case EventKind::kSpanStarted:
      return "span_started";
    case EventKind::kSpanEnded:
      return "span_ended";
    case EventKind::kExcluded:
      return "excluded";
  }
  return "unknown";
}

int KindRank(EventKind k) { return static_cast<int>(k); }

int KindOrder(int rank) {
  // Indexed by the code: job_started, steps, checkpoint_saved, interruption, run_finished,
  // span_started, span_ended, excluded.
  static constexpr int kOrder[] = {0, 3, 4, 6, 7, 5, 2, 1};
  return rank >= 0 && rank < static_cast<int>(std::size(kOrder)) ? kOrder[rank] : 8;
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
    case EventKind::kSpanStarted:
      return absl::StrCat("~ss/a", attempt, "/t", absl::ToUnixMicros(e.time));
    case EventKind::kSpanEnded:
      return absl::StrCat("~se/a", attempt, "/t", absl::ToUnixMicros(e.time));
    case EventKind::kExcluded:
      return absl::StrCat("~ex/t", absl::ToUnixMicros(e.time));
  }
  return "~";
}

bool SameEvent(const Event& a, uint32_t attempt_a, const Event& b, uint32_t attempt_b) {
  return a.time == b.time && a.kind == b.kind && attempt_a == attempt_b && a.restored_step == b.restored_step &&
         a.step == b.step && a.tokens == b.tokens && a.rank_spread == b.rank_spread &&
         a.blocking_seconds == b.blocking_seconds && a.cause == b.cause && a.planned == b.planned &&
         a.source == b.source && a.launch == b.launch && a.gpus == b.gpus && a.slowest_rank == b.slowest_rank &&
         a.span == b.span && a.expected_seconds == b.expected_seconds && a.until == b.until &&
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
    case EventKind::kSpanStarted:
      absl::StrAppend(&out, " ", e.span);
      if (e.expected_seconds > 0) absl::StrAppend(&out, " expected ", e.expected_seconds, " s");
      break;
    case EventKind::kSpanEnded:
      absl::StrAppend(&out, " ", e.span);
      break;
    case EventKind::kExcluded:
      absl::StrAppend(&out, " until ", FormatUtc(e.until));
      if (!e.detail.empty()) absl::StrAppend(&out, " (", e.detail, ")");
      break;
  }
  if (e.kind != EventKind::kJobStarted && e.attempt != 0) absl::StrAppend(&out, " of attempt ", e.attempt);
  absl::StrAppend(&out, " at ", FormatUtc(e.time));
  return out;
}

}  // namespace flightplan::forecast
