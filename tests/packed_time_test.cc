// PackedTime keeps a time to the microsecond in 8 bytes and reads back as the absl::Time it
// was, infinities included, comparing with packed and unpacked times alike.
#include "forecast/packed_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace flightplan::forecast {
namespace {

TEST(PackedTime, ReadsBackTheTimeToTheMicrosecond) {
  const absl::Time t = absl::FromUnixMicros(1'800'000'000'123'456);
  EXPECT_EQ(PackedTime(t).time(), t);
  EXPECT_EQ(PackedTime(t + absl::Nanoseconds(999)).time(), t);                       // below a microsecond: dropped
  EXPECT_EQ(PackedTime(absl::FromUnixMicros(-5)).time(), absl::FromUnixMicros(-5));  // before 1970
  EXPECT_EQ(PackedTime().time(), absl::Time());  // the default is absl::Time's: the epoch
  EXPECT_EQ(PackedTime(absl::InfiniteFuture()).time(), absl::InfiniteFuture());
  EXPECT_EQ(PackedTime(absl::InfinitePast()).time(), absl::InfinitePast());
}

TEST(PackedTime, ComparesAndSubtractsAsTimes) {
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  const PackedTime a = t, b = t + absl::Seconds(90);
  EXPECT_LT(a, b);
  EXPECT_NE(a, b);
  EXPECT_EQ(b - a, absl::Seconds(90));
  EXPECT_EQ(a, t);  // with an absl::Time, through absl's own operators
  EXPECT_LT(t, b);
  EXPECT_EQ(b - t, absl::Seconds(90));
  EXPECT_LT(a, PackedTime(absl::InfiniteFuture()));
  EXPECT_GT(a, PackedTime(absl::InfinitePast()));
  std::vector<PackedTime> v = {b, PackedTime(absl::InfinitePast()), a};
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v.front().time(), absl::InfinitePast());
  EXPECT_EQ(v.back(), b);
  static_assert(sizeof(PackedTime) * 2 == sizeof(absl::Time));
}

}  // namespace
}  // namespace flightplan::forecast
