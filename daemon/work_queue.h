// WorkQueue: a few threads of its own that run posted work in order of posting. The gRPC
// shell hands them what must not run on a callback thread (a what-if's simulations) or on
// the writer's (building a watcher's status).
//
// Threads: `threads` of its own; Post from any thread. The destructor runs what was
// posted before it, then joins.
#ifndef FLIGHTPLAN_DAEMON_WORK_QUEUE_H_
#define FLIGHTPLAN_DAEMON_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flightplan::daemon {

class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Run(); });
  }
  ~WorkQueue() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    for (std::thread& t : threads_) t.join();
  }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Post(std::function<void()> work) {
    {
      absl::MutexLock lock(&mu_);
      work_.push_back(std::move(work));
    }
    cv_.Signal();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> work;
      {
        absl::MutexLock lock(&mu_);
        while (!stop_ && work_.empty()) cv_.Wait(&mu_);
        if (work_.empty()) return;  // stopping, and all posted work is done
        work = std::move(work_.front());
        work_.pop_front();
      }
      work();
    }
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<std::function<void()>> work_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_WORK_QUEUE_H_
