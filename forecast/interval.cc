#include "forecast/interval.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace flightplan::forecast {

absl::StatusOr<IntervalAccounting> AccountInterval(std::vector<LoggedEvent> events, const FoldSettings& settings,
                                                   absl::Time from, absl::Time to, absl::Time now) {
  if (to <= from) {
    return absl::InvalidArgumentError(
        absl::StrCat("to ", FormatUtc(to), " is not after from ", FormatUtc(from), ": an interval runs from to to"));
  }
  if (from >= now) {
    return absl::InvalidArgumentError(
        absl::StrCat("from ", FormatUtc(from), " is not before the run's now ", FormatUtc(now)));
  }
  const std::vector<LoggedEvent> ordered = FoldOrder(std::move(events));
  IntervalAccounting out;
  out.from = from;
  out.to = std::min(to, now);
  // One pass: the state at `from` (the events dated at or before it, and the open interval to
  // it), then on to `to`. The log was accepted in this order, so every event applies; one
  // that does not (it could not have been stored) is skipped.
  RunState s;
  s.settings = settings;
  size_t i = 0;
  auto fold_to = [&](absl::Time at) {
    for (; i < ordered.size() && ordered[i].event.time <= at; ++i) (void)ApplyEvent(s, ordered[i].event);
    return s.events == 0 ? RunSnapshot{} : Snapshot(s, at);
  };
  const RunSnapshot a = fold_to(from);
  const RunSnapshot b = fold_to(out.to);
  if (b.events > 0 && b.as_of < out.to) out.to = b.as_of;  // a finished run's clock stopped
  TimeSeconds& x = out.seconds;
  const TimeSeconds& p = a.seconds;
  const TimeSeconds& q = b.seconds;
  x = {q.productive - p.productive,
       q.checkpoint - p.checkpoint,
       q.lost - p.lost,
       q.startup - p.startup,
       q.down_unplanned - p.down_unplanned,
       q.down_planned - p.down_planned,
       q.stalled - p.stalled,
       q.capacity - p.capacity,
       q.custom - p.custom,
       q.excluded - p.excluded};
  // Netting: a startup or a stall that proved to be training went to productive; work rolled
  // back went to lost.
  for (double* moved : {&x.startup, &x.stalled}) {
    if (*moved < 0) {
      x.productive += *moved;
      *moved = 0;
    }
  }
  if (x.productive < 0) {
    x.lost += x.productive;
    x.productive = 0;
  }
  for (double* c : {&x.productive, &x.checkpoint, &x.lost, &x.startup, &x.down_unplanned, &x.down_planned, &x.stalled,
                    &x.capacity, &x.custom, &x.excluded}) {
    *c = std::max(0.0, *c);  // rounding
  }
  out.elapsed_seconds = x.Sum();
  out.failure_budget_consumed_seconds =
      std::max(0.0, b.failure_budget_consumed_seconds - a.failure_budget_consumed_seconds);
  for (const SpanSeconds& k : b.custom_by_kind) {
    double before = 0;
    for (const SpanSeconds& j : a.custom_by_kind) {
      if (j.kind == k.kind) before = j.seconds;
    }
    if (k.seconds - before > 0) out.custom_by_kind.push_back({k.kind, k.seconds - before});
  }
  // The stops dated in [from, to): the fold's marks, of the state at `to`.
  for (const InterruptionMark& m : s.interruption_marks) {
    if (m.time < from || m.time >= out.to) continue;
    auto it = std::find_if(out.interruptions.begin(), out.interruptions.end(),
                           [&](const InterruptionCount& c) { return c.cause == m.cause && c.planned == m.planned; });
    if (it == out.interruptions.end()) {
      out.interruptions.push_back({m.cause, m.planned, 1});
    } else {
      ++it->count;
    }
  }
  return out;
}

}  // namespace flightplan::forecast
