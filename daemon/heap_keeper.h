// HeapKeeper: hands the heap's free pages back to the system while the daemon runs.
//
// glibc keeps what a thread frees in that thread's arena until malloc_trim returns the
// whole free pages: a scrape of 1,000 runs frees tens of MB of label strings and families,
// a recovery its decoded snapshots, a replay its batches. Without a trim that garbage is the
// daemon's resident memory at rest (docs/scaling.md). A thread looks at the arenas' free
// bytes (mallinfo2) every `interval` and trims when they pass `threshold_bytes`, at most
// once per `min_gap`, whatever thread freed them and whether or not anything else is
// happening.
#ifndef FLIGHTPLAN_DAEMON_HEAP_KEEPER_H_
#define FLIGHTPLAN_DAEMON_HEAP_KEEPER_H_

#include <cstddef>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace flightplan::daemon {

struct HeapKeeperOptions {
  absl::Duration interval = absl::Seconds(1);
  absl::Duration min_gap = absl::Seconds(5);
  size_t threshold_bytes = size_t{8} << 20;
};

class HeapKeeper {
 public:
  explicit HeapKeeper(HeapKeeperOptions options = {});
  ~HeapKeeper();  // stops the thread
  HeapKeeper(const HeapKeeper&) = delete;
  HeapKeeper& operator=(const HeapKeeper&) = delete;

  // Trims done so far.
  uint64_t trims() const;

  // The arenas' free bytes now (mallinfo2's fordblks), 0 where the allocator is not glibc's.
  static size_t FreeBytes();

 private:
  void Loop();

  const HeapKeeperOptions options_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t trims_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_HEAP_KEEPER_H_
