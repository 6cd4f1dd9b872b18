// ForecastScheduler: the finish forecast's simulations, off the ingest path.
//
// It keeps the latest simulation of each run (readers combine it with the cheap part of the
// forecast and never wait for one), decides which run to simulate next (one run per turn:
// those a live report changed first, then the one simulated longest ago; each at most once per
// forecast_min_interval, and again every forecast_refresh on the wall clock), and simulates
// the states a backfill kept into the run's history, oldest first.
//
// Threads: one thread of its own simulates (Start); every other method may be called from
// any thread, and none waits for a simulation. Tests call SimulateNext() instead of Start()
// and drive it with their own Clock.
#ifndef FLIGHTPLAN_DAEMON_FORECAST_SCHEDULER_H_
#define FLIGHTPLAN_DAEMON_FORECAST_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/clock.h"
#include "daemon/run_view.h"
#include "forecast/forecaster.h"
#include "forecast/state_bytes.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

class ForecastScheduler {
 public:
  // What the scheduler needs from the rest of the tracker, each callable from its thread.
  struct Hooks {
    // The run's published view (nullptr: gone).
    std::function<std::shared_ptr<const RunView>(const std::string& run)> find;
    // A forecast offered to the run's history (the writer decides whether to keep it).
    std::function<void(int64_t run_id, uint64_t version, const storage::ForecastPoint& point)> offer_point;
    // Requests waiting for the writer: a backfill yields to them.
    std::function<size_t()> writer_backlog;
    // After a run's new simulation is cached (its watchers).
    std::function<void(const std::string& run)> simulated;
  };
  // A run's latest simulation and the plan revision it was made with.
  struct Cached {
    std::shared_ptr<const forecast::Simulation> sim;
    uint32_t plan_revision = 0;
  };
  // Where the writer keeps backfill states from, and how far apart (TrackerOptions).
  struct BackfillWindow {
    absl::Time simulated_to = absl::InfinitePast();  // states before it are not needed
    absl::Duration spacing = absl::ZeroDuration();
  };

  // `options` and `clock` must outlive the scheduler.
  ForecastScheduler(const TrackerOptions& options, Clock* clock, Hooks hooks);
  ~ForecastScheduler();
  ForecastScheduler(const ForecastScheduler&) = delete;
  ForecastScheduler& operator=(const ForecastScheduler&) = delete;

  // Starts the thread; Stop ends it (after the simulation in progress) and refuses more
  // work. Stop is idempotent, and the destructor calls it.
  void Start();
  void Stop();

  // The run changed; `urgent` (a live report or a plan changed it) puts it ahead of the
  // others.
  void MarkDue(const std::string& run, bool urgent = false);
  [[nodiscard]] Cached Latest(const std::string& run) const;
  // Drops the run's simulation (its events were retracted: it no longer describes it).
  void Forget(const std::string& run);

  [[nodiscard]] BackfillWindow BackfillFor(const std::string& run) const;
  // States a published group kept for `run`'s history, oldest first. Past
  // max_backfill_states every other older one goes and the run's spacing doubles.
  void AddBackfill(const RunView& view, std::vector<std::shared_ptr<const forecast::RunState>> states);
  [[nodiscard]] size_t BackfillWaiting(const std::string& run) const;

  // What the forecaster has done (counters since the start) and what waits for it.
  struct Stats {
    uint64_t simulations = 0, backfill_simulations = 0;
    double cpu_seconds = 0, backfill_cpu_seconds = 0;  // the thread's CPU time in them
    size_t backfill_states = 0, backfill_bytes = 0;    // waiting (forecast::StateBytes)
  };
  [[nodiscard]] Stats GetStats() const;

  // One turn: simulates the run that is ready first, if any; when none is, says when one
  // will be (nullopt: only when a run changes). The thread loops on this.
  struct Turn {
    std::string simulated;  // empty: none was ready
    std::optional<absl::Time> next_ready;
  };
  Turn SimulateNext();

 private:
  struct BackfillState {
    int64_t run_id = 0;
    uint64_t version = 0;
    std::shared_ptr<const forecast::RunState> state;
    std::shared_ptr<const RunPlan> plan;
    size_t bytes = 0;  // forecast::StateBytes of `state`, its node book aside
  };
  void Loop();
  // Drops every other state of `run`'s queue but the newest, and doubles its spacing.
  void ThinLocked(const std::string& run, std::deque<BackfillState>& queue) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountSimulation(double cpu_seconds, bool backfill);
  // Moves run's simulated_to forward to `to` (never back).
  void RaiseSimulatedTo(const std::string& run, absl::Time to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run to simulate now (removed from what waits), or empty with `next` set to when
  // one will be ready.
  std::string PickLocked(absl::Time now, absl::Time& next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SimulateRun(const std::string& run);
  // Simulates the states kept for `run` into its history, oldest first, until requests
  // wait for the writer; whether some are left for a later turn.
  bool SimulateBackfill(const std::string& run);

  const TrackerOptions& options_;
  Clock* const clock_;
  const Hooks hooks_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  std::set<std::string> due_ ABSL_GUARDED_BY(mu_);                         // changed since their latest simulation
  std::set<std::string> urgent_ ABSL_GUARDED_BY(mu_);                      // ... and a reader waits
  std::set<std::string> waiting_ ABSL_GUARDED_BY(mu_);                     // taken from due_, not yet ready
  std::map<std::string, absl::Time> last_simulated_ ABSL_GUARDED_BY(mu_);  // the clock's time
  std::map<std::string, Cached> simulations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<BackfillState>> backfill_ ABSL_GUARDED_BY(mu_);
  // The run time each run's latest simulation was made at (no state before it is kept).
  std::map<std::string, absl::Time> simulated_at_ ABSL_GUARDED_BY(mu_);
  // The factor on backfill_spacing while a run's queue has been thinned (1 when absent).
  std::map<std::string, int64_t> backfill_scale_ ABSL_GUARDED_BY(mu_);
  size_t backfill_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // of every state in backfill_
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_FORECAST_SCHEDULER_H_
