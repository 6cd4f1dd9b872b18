// PackedTime: a moment to the microsecond in 8 bytes, for the long per-run histories.
//
// absl::Time is 16 bytes (a 64-bit second and a 32-bit quarter-nanosecond, padded). A run
// holds up to 1,024 evidence samples, thousands of interruption marks and attempt starts,
// budget samples and pace bins, and every one had such a time: a tenth of a run's state at
// rest (docs/scaling.md). Snapshots keep times to the microsecond, so packing them loses
// nothing a restart would not: a run folded live and one restored read the same moments.
// It converts to and from absl::Time implicitly, so the code that reads these fields
// compares and subtracts them as times; the infinities survive the round trip.
#ifndef FLIGHTPLAN_FORECAST_PACKED_TIME_H_
#define FLIGHTPLAN_FORECAST_PACKED_TIME_H_

#include <compare>
#include <concepts>
#include <cstdint>
#include <limits>

#include "absl/time/time.h"

namespace flightplan::forecast {

class PackedTime {
 public:
  constexpr PackedTime() = default;                             // the Unix epoch, as absl::Time{}
  PackedTime(absl::Time t) : micros_(absl::ToUnixMicros(t)) {}  // NOLINT: a time, packed
  operator absl::Time() const {                                 // NOLINT: read as a time
    if (micros_ == std::numeric_limits<int64_t>::max()) return absl::InfiniteFuture();
    if (micros_ == std::numeric_limits<int64_t>::min()) return absl::InfinitePast();
    return absl::FromUnixMicros(micros_);
  }
  absl::Time time() const { return *this; }  // where a template needs the absl::Time itself
  constexpr int64_t unix_micros() const { return micros_; }

 private:
  int64_t micros_ = 0;  // absl::ToUnixMicros saturates the infinities to the int64 limits
};
static_assert(sizeof(PackedTime) == 8);

// Two packed times compare and subtract as their times do. Templates, so that they take
// exactly two PackedTimes: a PackedTime beside an absl::Time converts to absl::Time and
// uses absl's own operators, with no ambiguity between the two.
template <std::same_as<PackedTime> T>
constexpr bool operator==(T a, T b) {
  return a.unix_micros() == b.unix_micros();
}
template <std::same_as<PackedTime> T>
constexpr auto operator<=>(T a, T b) {
  return a.unix_micros() <=> b.unix_micros();
}
template <std::same_as<PackedTime> T>
absl::Duration operator-(T a, T b) {
  return a.time() - b.time();
}

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_PACKED_TIME_H_
