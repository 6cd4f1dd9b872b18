// HeapKeeper hands the pages a thread freed in the middle of its arena back to the system,
// which glibc on its own keeps (the daemon's resident memory at rest, docs/scaling.md).
#include "daemon/heap_keeper.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace flightplan::daemon {
namespace {

// This process's resident bytes (/proc/self/statm's second field, in pages).
size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * 4096 : 0;
}

// gcc names a sanitized build with __SANITIZE_*__; clang only answers __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FLIGHTPLAN_SANITIZED_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(FLIGHTPLAN_SANITIZED_HEAP)
constexpr bool kGlibcHeap = false;  // the sanitizers bring their own allocator
#else
constexpr bool kGlibcHeap = true;
#endif

// 96 MiB of 1 KiB blocks written to (resident), one in 64 kept: what is freed lies between
// survivors, where glibc's free() never gives it back. The freeing happens on a thread of
// its own, as a scrape's garbage does on an HTTP worker's arena.
std::vector<std::unique_ptr<char[]>> FragmentHeap() {
  std::vector<std::unique_ptr<char[]>> kept;
  std::thread([&kept] {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 96 * 1024; ++i) {
      blocks.emplace_back(new char[1024]);
      std::memset(blocks.back().get(), 1, 1024);
    }
    for (size_t i = 0; i < blocks.size(); i += 64) kept.push_back(std::move(blocks[i]));
  }).join();
  return kept;
}

TEST(HeapKeeper, HandsBackWhatAThreadFreedBetweenSurvivors) {
  if (!kGlibcHeap) GTEST_SKIP() << "needs glibc's allocator";
  HeapKeeper keeper({.interval = absl::Milliseconds(20), .min_gap = absl::ZeroDuration(), .threshold_bytes = 8 << 20});
  const std::vector<std::unique_ptr<char[]>> kept = FragmentHeap();
  const size_t freed = 96u << 20;
  // Until the keeper trims, at least half of it is still held (free, but resident).
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (keeper.trims() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_GT(keeper.trims(), 0u) << "no trim in 10 s with " << HeapKeeper::FreeBytes() << " bytes free";
  absl::SleepFor(absl::Milliseconds(100));
  // What stays resident is the survivors' pages (one block in 64 keeps its 4 KiB page: 1/16
  // of the pages) and the rest of the process, far below the 96 MiB freed.
  EXPECT_LT(ResidentBytes(), freed / 2) << HeapKeeper::FreeBytes() << " bytes free";
}

TEST(HeapKeeper, LeavesASmallFreeListAlone) {
  if (!kGlibcHeap) GTEST_SKIP() << "needs glibc's allocator";
  // Under the threshold nothing is trimmed: a trim walks the arenas, and the daemon at rest
  // must not pay for it every second.
  HeapKeeper keeper({.interval = absl::Milliseconds(10), .min_gap = absl::ZeroDuration(), .threshold_bytes = 1u << 30});
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(keeper.trims(), 0u);
}

}  // namespace
}  // namespace flightplan::daemon
