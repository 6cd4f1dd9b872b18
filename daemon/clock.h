// Clock: the daemon's one source of "now". Tests substitute their own.
#ifndef FLIGHTPLAN_DAEMON_CLOCK_H_
#define FLIGHTPLAN_DAEMON_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace flightplan::daemon {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
};

class WallClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_CLOCK_H_
