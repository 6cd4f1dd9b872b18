// One event of a run's stream (docs/contract.md §4), as a plain value type. convert/event_convert.h
// maps flightplan.v1.Event onto it.
#ifndef FLIGHTPLAN_FORECAST_EVENT_H_
#define FLIGHTPLAN_FORECAST_EVENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace flightplan::forecast {

enum class EventKind {
  kJobStarted,
  kSteps,
  kCheckpointSaved,
  kInterruption,
  kRunFinished,
  kSpanStarted,
  kSpanEnded,
  kExcluded,
};

const char* EventKindName(EventKind kind);

// A kind's stable code (RunState::last_kind_rank, kept in snapshots): the order of the
// enumeration, which only ever grows at its end.
int KindRank(EventKind kind);
// The fold order of kinds at one instant (EventBefore, FoldOrder), from a code: a launch, an
// exclusion (its window opens), the end of a span, steps, the checkpoint of that step, the
// start of a span, an interruption, the finish.
int KindOrder(int rank);

// Event::source of the reports of `flightplan slurm`.
inline constexpr char kSchedulerSource[] = "slurm";

struct Event {
  absl::Time time = absl::UnixEpoch();
  std::string id;        // idempotency key; "" = natural key
  uint32_t attempt = 0;  // 0 = the run's current attempt
  EventKind kind = EventKind::kSteps;
  // Who reports it: "" the training itself, kSchedulerSource the scheduler's record. Two
  // reports of one launch or one stop from different sources fold as one (FoldOrder).
  std::string source;

  // kJobStarted: `attempt` is the new attempt; restored_step the checkpoint resumed from;
  // launch the scheduler's name for it ("slurm:JOB.RESTARTS"), "" when it has none.
  int64_t restored_step = 0;
  std::string launch;
  // kJobStarted: the launch's hosts in rank order ("" none known) and its GPUs (0 = the
  // plan's fleet). kInterruption: the hosts its cause names.
  std::vector<std::string> nodes;
  uint32_t gpus = 0;
  // kSteps: step and the lineage's cumulative tokens. kCheckpointSaved: step.
  int64_t step = 0;
  int64_t tokens = 0;
  // kSteps: the slowest rank's compute time over the fastest's, minus 1; 0 = not said.
  double rank_spread = 0;
  // kSteps: the rank the training names slowest; -1 = not said.
  int32_t slowest_rank = -1;
  // kCheckpointSaved.
  double blocking_seconds = 0;
  // kInterruption.
  std::string cause;
  bool planned = false;
  // kInterruption: free text. kExcluded: the reason.
  std::string detail;
  // kSpanStarted, kSpanEnded: the span's kind; kSpanStarted: the seconds it promises (0: none).
  std::string span;
  double expected_seconds = 0;
  // kExcluded: the window is [time, until).
  absl::Time until = absl::UnixEpoch();
};

// The idempotency key of an event: its id, or a natural key from its kind, its attempt
// (`attempt`, the event's own resolved against the run's current one) and its content
// ("~st/a3/s1200"). Two events of a run with the same key are the same event.
std::string EventKey(const Event& event, uint32_t attempt);

// Whether two events with one key are the same event: every field but the id and an
// interruption's free-text detail and nodes equal, with their attempts as resolved against
// the run (`attempt_a`, `attempt_b`). A resend whose detail or nodes say more or less (a
// node's reason, gone from Slurm once the node is back) is the same stop; the first is kept.
bool SameEvent(const Event& a, uint32_t attempt_a, const Event& b, uint32_t attempt_b);

// A time for messages: 2027-01-04T00:17:22Z (fractions of a second when there are any).
std::string FormatUtc(absl::Time t);

// One line for messages: "steps step 1200 tokens 5033164800 at 2027-01-01T00:00:00Z".
std::string Describe(const Event& event);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_EVENT_H_
