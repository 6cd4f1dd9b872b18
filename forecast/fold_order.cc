// The order of a run's log (docs/contract.md §4, "Order" and "One launch, one attempt"): which
// event folds before which, how two sources' reports of one launch or one stop join into one
// event, and the refold of a whole log. The fold itself is forecast/accounting.cc.
#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "forecast/accounting.h"

namespace flightplan::forecast {

namespace {

// A cause the scheduler names better than the training can (the training sees a node's
// failure as a NCCL timeout, a time limit as a SIGTERM).
bool SchedulerNames(const std::string& cause) {
  return cause == "node" || cause == "preemption" || cause == "time_limit" || cause == "operator" || cause == "oom";
}

Event JoinLaunch(const Event& a, const Event& b) {
  const Event& training = a.source == kSchedulerSource ? b : a;
  Event out = a.time <= b.time ? a : b;
  const Event& scheduler = a.source == kSchedulerSource ? a : b;
  out.restored_step = training.restored_step;
  // The training's nodes are in rank order; the scheduler's are its sorted NodeList.
  out.nodes = training.nodes.empty() ? scheduler.nodes : training.nodes;
  out.gpus = training.gpus ? training.gpus : scheduler.gpus;
  out.source = kSchedulerSource;  // a scheduler's report is folded in
  return out;
}

Event JoinStop(const Event& a, const Event& b) {
  const Event& scheduler = a.source == kSchedulerSource ? a : b;
  const Event& training = a.source == kSchedulerSource ? b : a;
  const bool training_names = !training.cause.empty() && training.cause != "unknown";
  const Event& winner = SchedulerNames(scheduler.cause) || !training_names ? scheduler : training;
  const Event& other = &winner == &scheduler ? training : scheduler;
  Event out = winner;
  out.time = std::min(a.time, b.time);
  out.attempt = scheduler.attempt ? scheduler.attempt : training.attempt;
  out.source = kSchedulerSource;
  std::string also = absl::StrCat(
      " (also reported", other.source == kSchedulerSource ? " by the scheduler" : " by the training", ": ",
      other.cause.empty() ? "unknown" : other.cause, other.detail.empty() ? "" : absl::StrCat(": ", other.detail), ")");
  out.detail = (out.detail + also).substr(0, 4096);
  for (const std::string& n : other.nodes) {  // what either report names
    if (std::find(out.nodes.begin(), out.nodes.end(), n) == out.nodes.end()) out.nodes.push_back(n);
  }
  return out;
}

// FoldOrder's joining of two reports of one launch or stop (see there); `attempt` holds
// each event's resolved attempt and is compacted with the events.
std::vector<LoggedEvent> JoinReports(std::vector<LoggedEvent> events, std::vector<uint32_t>& attempt) {
  std::vector<bool> joined(events.size(), false);
  bool any = false;
  // Only named launches and stops join: each is matched against the later ones alone (not
  // the whole log, which is mostly step reports).
  std::vector<size_t> joinable;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i].event;
    if ((e.kind == EventKind::kJobStarted && !e.launch.empty()) || e.kind == EventKind::kInterruption) {
      joinable.push_back(i);
    }
  }
  for (size_t ci = 0; ci < joinable.size(); ++ci) {
    const size_t i = joinable[ci];
    if (joined[i]) continue;
    Event& a = events[i].event;
    const bool launch = a.kind == EventKind::kJobStarted;
    for (size_t cj = ci + 1; cj < joinable.size(); ++cj) {
      const size_t j = joinable[cj];
      if (joined[j]) continue;
      const Event& b = events[j].event;
      if (b.kind != a.kind || (a.source == kSchedulerSource) == (b.source == kSchedulerSource)) continue;
      if (launch ? b.launch != a.launch : attempt[j] != attempt[i]) continue;
      a = launch ? JoinLaunch(a, b) : JoinStop(a, b);
      events[i].seq = std::min(events[i].seq, events[j].seq);
      joined[j] = true;
      any = true;
      break;  // one report per source
    }
  }
  if (!any) return events;
  std::vector<LoggedEvent> out;
  std::vector<uint32_t> kept;
  for (size_t i = 0; i < events.size(); ++i) {
    if (joined[i]) continue;
    out.push_back(std::move(events[i]));
    kept.push_back(attempt[i]);
  }
  attempt = std::move(kept);
  return out;
}

}  // namespace

uint32_t AttemptOf(const RunState& s, const Event& e) {
  if (e.kind == EventKind::kJobStarted || e.attempt != 0) return e.attempt;
  for (auto it = s.attempt_starts.rbegin(); it != s.attempt_starts.rend(); ++it) {
    if (it->time < e.time) return it->attempt;
  }
  return s.attempt_starts.empty() ? s.attempt : s.attempt_starts.front().attempt;
}

std::vector<LoggedEvent> FoldOrder(std::vector<LoggedEvent> events) {
  // Launches by time, to resolve attempts.
  std::vector<AttemptStart> starts;
  for (const LoggedEvent& l : events) {
    if (l.event.kind == EventKind::kJobStarted) starts.push_back({l.event.attempt, l.event.time, l.event.launch});
  }
  std::sort(starts.begin(), starts.end(), [](const AttemptStart& a, const AttemptStart& b) {
    return a.time != b.time ? a.time < b.time : a.attempt < b.attempt;
  });
  auto resolve = [&](const Event& e) -> uint32_t {
    if (e.kind == EventKind::kJobStarted || e.attempt != 0) return e.attempt;
    if (starts.empty()) return 0;
    // The latest launch strictly before the event (the first one when none is).
    auto after = std::lower_bound(starts.begin(), starts.end(), e.time,
                                  [](const AttemptStart& a, absl::Time t) { return a.time < t; });
    return after == starts.begin() ? starts.front().attempt : std::prev(after)->attempt;
  };
  std::vector<uint32_t> attempt(events.size());
  for (size_t i = 0; i < events.size(); ++i) attempt[i] = resolve(events[i].event);
  events = JoinReports(std::move(events), attempt);
  // Late filings: an interruption of attempt k dated after a later launch.
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i].event;
    if (e.kind != EventKind::kInterruption || e.attempt == 0) continue;
    absl::Time next = absl::InfiniteFuture();
    for (const AttemptStart& a : starts) {
      if (a.attempt > e.attempt) next = std::min(next, a.time.time());
    }
    // The scheduler's record is in whole seconds: its stop may be dated a moment before the
    // attempt's last report; it is placed there (work was still being reported).
    const bool scheduler = e.source == kSchedulerSource;
    if (e.time <= next && !scheduler) continue;  // at the launch's instant, the attempt order places it
    absl::Time last = absl::InfinitePast();      // the attempt's last sign of life before it
    for (size_t j = 0; j < events.size(); ++j) {
      const Event& o = events[j].event;
      if (j != i && attempt[j] == e.attempt && o.kind != EventKind::kInterruption && o.time <= next) {
        last = std::max(last, o.time);
      }
    }
    if (last != absl::InfinitePast() && (!scheduler || e.time > next || last > e.time)) e.time = last;
  }
  // By time, attempt, kind and seq, sorted on compact keys (the events themselves are large
  // and scattered); a log already in that order, as one accepted in time order is, is kept.
  struct Key {
    absl::Time time;
    uint32_t attempt;
    int rank;
    int64_t seq;
    size_t index;
    bool operator<(const Key& o) const {
      if (time != o.time) return time < o.time;
      if (attempt != o.attempt) return attempt < o.attempt;
      if (rank != o.rank) return rank < o.rank;
      return seq < o.seq;
    }
  };
  std::vector<Key> keys(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    keys[i] = {events[i].event.time, attempt[i], KindOrder(KindRank(events[i].event.kind)), events[i].seq, i};
  }
  if (std::is_sorted(keys.begin(), keys.end())) return events;
  std::sort(keys.begin(), keys.end());
  std::vector<LoggedEvent> out;
  out.reserve(events.size());
  for (const Key& k : keys) out.push_back(std::move(events[k.index]));
  return out;
}

absl::StatusOr<RunState> Refold(std::vector<LoggedEvent> events, const FoldSettings& settings, int64_t& failed_seq) {
  RunState state;
  state.settings = settings;
  failed_seq = 0;
  for (LoggedEvent& l : FoldOrder(std::move(events))) {
    if (absl::Status st = ApplyEvent(state, l.event); !st.ok()) {
      failed_seq = l.seq;
      return st;
    }
  }
  return state;
}

bool ReportsAKnownLaunch(const RunState& s, const Event& e) {
  if (e.kind != EventKind::kJobStarted || e.launch.empty()) return false;
  return std::any_of(s.attempt_starts.begin(), s.attempt_starts.end(),
                     [&](const AttemptStart& a) { return a.launch == e.launch; });
}

bool NeedsRefold(const RunState& s, const Event& e) {
  if (s.events == 0) return false;
  // Launches and stops a second source may report too: folded with the whole log, where
  // the two reports join (FoldOrder). A scheduler's report, and from the first one on,
  // every launch and stop of the run.
  const bool launch_or_stop = e.kind == EventKind::kJobStarted || e.kind == EventKind::kInterruption;
  if (launch_or_stop && (e.source == kSchedulerSource || s.scheduler_reports || ReportsAKnownLaunch(s, e))) {
    return true;
  }
  if (e.time < s.last_time) return true;
  const uint32_t attempt = AttemptOf(s, e);
  if (e.kind != EventKind::kJobStarted && attempt < s.attempt) return true;
  // At the latest event's instant, one that the fold order puts before it.
  return e.time == s.last_time && attempt == s.attempt &&
         KindOrder(KindRank(e.kind)) < KindOrder(static_cast<int>(s.last_kind_rank));
}

bool EventBefore(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.attempt != b.attempt) return a.attempt < b.attempt;
  return KindOrder(KindRank(a.kind)) < KindOrder(KindRank(b.kind));
}

}  // namespace flightplan::forecast
