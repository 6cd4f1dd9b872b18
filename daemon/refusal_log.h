// RefusalLog: says on stderr what flightpland refused, so that an operator reading the
// daemon's log (journalctl -u flightpland) sees a typo'd run name or a bad client at once.
// Once per (run, kind of refusal) a minute: the first refusal of a minute is written with
// what was refused and why; the ones after it within the minute are counted and said with
// the next line of that key. Kinds: the gRPC status code of an event batch's refusal, or
// an authentication failure on an RPC.
//
// Thread-safe: gRPC threads (refusals before the queue, authentication) and the writer
// thread (refusals of the fold) call it. Its cost is a map lookup under a mutex, and a
// write to stderr at most once per key a minute.
#ifndef FLIGHTPLAN_DAEMON_REFUSAL_LOG_H_
#define FLIGHTPLAN_DAEMON_REFUSAL_LOG_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/clock.h"

namespace flightplan::daemon {

class RefusalLog {
 public:
  // `clock` must outlive it; lines go to `out` (stderr by default).
  explicit RefusalLog(Clock* clock, std::FILE* out = stderr) : clock_(clock), out_(out) {}

  // `count` events (0 for an RPC that carries none) of `run` ("" when the refusal names
  // none) were refused as `kind` (e.g. "NOT_FOUND", "UNAUTHENTICATED on CreateRun"), with
  // `message`, the reason the client was given.
  void Note(const std::string& run, absl::string_view kind, uint32_t count, absl::string_view message);

  // A minute: one line per key at most.
  static constexpr absl::Duration kPeriod = absl::Minutes(1);
  // Keys remembered at most (a flood of distinct typos): past it the oldest are forgotten.
  static constexpr size_t kMaxKeys = 4096;

 private:
  struct Key {
    std::string run, kind;
    bool operator<(const Key& o) const { return std::tie(run, kind) < std::tie(o.run, o.kind); }
  };
  struct Seen {
    absl::Time logged;   // when the key's latest line was written
    uint64_t quiet = 0;  // refusals since then, not yet said
    uint64_t quiet_events = 0;
  };

  Clock* const clock_;
  std::FILE* const out_;
  absl::Mutex mu_;
  std::map<Key, Seen> seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_REFUSAL_LOG_H_
