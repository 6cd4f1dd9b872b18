#include "daemon/heap_keeper.h"

#include <malloc.h>

namespace flightplan::daemon {

namespace {

// glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB) and its
// trim threshold to twice that: after a scrape has freed its 7 MB answer, an arena's free
// top of up to 14 MB is never handed back, and malloc_trim trims only the main arena's top.
// Fixed thresholds turn that off: blocks past kMmapThreshold (a scrape's answer, its
// vector of families) are mapped and unmapped whole, and a top past kTrimThreshold shrinks
// at the free. Process-wide, so set once; the same values whichever daemon sets them.
constexpr int kMmapThreshold = 256 << 10;
constexpr int kTrimThreshold = 2 << 20;

void FixThresholds() {
#if defined(__GLIBC__)
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
    return true;
  }();
  (void)once;
#endif
}

}  // namespace

HeapKeeper::HeapKeeper(HeapKeeperOptions options) : options_(options) {
  FixThresholds();
  thread_ = std::thread([this] { Loop(); });
}

HeapKeeper::~HeapKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

uint64_t HeapKeeper::trims() const {
  absl::MutexLock lock(&mu_);
  return trims_;
}

size_t HeapKeeper::FreeBytes() {
#if defined(__GLIBC__)
  return mallinfo2().fordblks;
#else
  return 0;
#endif
}

void HeapKeeper::Loop() {
  absl::Time last_trim = absl::InfinitePast();
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.interval)) {
    const absl::Time now = absl::Now();
    if (now - last_trim < options_.min_gap || FreeBytes() < options_.threshold_bytes) continue;
    mu_.Unlock();  // a trim walks the arenas' free chunks: the owner's destructor need not wait on it
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    mu_.Lock();
    last_trim = now;
    ++trims_;
  }
}

}  // namespace flightplan::daemon
