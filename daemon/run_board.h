// RunBoard: the published run views, their watchers, and the status readers are given.
//
// Threads: any thread reads (Find, List, StatusOf) and subscribes; only the writer
// publishes. A watcher's callback runs on the thread that publishes a change (the writer)
// or caches a new simulation (the forecaster), so it must not block.
#ifndef FLIGHTPLAN_DAEMON_RUN_BOARD_H_
#define FLIGHTPLAN_DAEMON_RUN_BOARD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/clock.h"
#include "daemon/forecast_scheduler.h"
#include "daemon/run_status.h"
#include "daemon/run_view.h"

namespace flightplan::daemon {

// The node ledger is rebuilt at least this often on the wall clock, and at most this often
// while runs change (a ledger over 1,000 runs of 128 nodes from a pool of 2,048 takes about
// 0.3 s: bench/ledger_bench.cc); with --clock events, on every change.
inline constexpr absl::Duration kLedgerMaxAge = absl::Seconds(30);
inline constexpr absl::Duration kLedgerMinAge = absl::Seconds(5);

class RunBoard {
 public:
  // `options`, `clock` and `forecasts` (read only: its cached simulations) must outlive
  // the board.
  RunBoard(const TrackerOptions& options, Clock* clock, const ForecastScheduler* forecasts)
      : options_(options), clock_(clock), forecasts_(forecasts) {}

  [[nodiscard]] std::shared_ptr<const RunView> Find(const std::string& run) const;
  [[nodiscard]] std::vector<std::shared_ptr<const RunView>> List() const;
  [[nodiscard]] size_t Count() const;

  // Replaces each run's view; the names of those whose version changed (new runs too).
  std::set<std::string> Publish(std::vector<std::shared_ptr<const RunView>> views);

  // Calls `fn` after `run` changes (Notify); an id for Unsubscribe.
  uint64_t Subscribe(const std::string& run, std::function<void()> fn);
  void Unsubscribe(uint64_t id);
  void Notify(const std::set<std::string>& runs);

  // The run's status now (wall clock, or its latest event with events_clock): the cheap
  // part of the forecast from the view, the latest simulation as cached (never waited
  // for), labelled with how fresh it is. A read changes nothing: the forecaster's order
  // comes from ingest (IngestWriter marks the runs live reports change as urgent).
  [[nodiscard]] RunStatus StatusOf(const RunView& view) const;

  // The node ledger across every run (forecast::BuildLedger), built again when a run has
  // changed (at most every kLedgerMinAge on the wall clock) or kLedgerMaxAge has passed
  // (held node-hours grow with the clock); readers share it.
  [[nodiscard]] std::shared_ptr<const forecast::NodeLedger> Ledger() const;
  // A run's part of it, at the run's now.
  [[nodiscard]] forecast::RunNodes NodesOf(const RunView& view) const;
  // The run's now: the wall clock, or its latest event with events_clock.
  [[nodiscard]] absl::Time NowOf(const RunView& view) const;

 private:
  const TrackerOptions& options_;
  Clock* const clock_;
  const ForecastScheduler* const forecasts_;

  mutable absl::Mutex runs_mu_;
  std::map<std::string, std::shared_ptr<const RunView>> runs_ ABSL_GUARDED_BY(runs_mu_);
  uint64_t publishes_ ABSL_GUARDED_BY(runs_mu_) = 0;  // Publish calls that changed a run

  mutable absl::Mutex ledger_mu_;
  mutable std::shared_ptr<const forecast::NodeLedger> ledger_ ABSL_GUARDED_BY(ledger_mu_);
  mutable uint64_t ledger_publishes_ ABSL_GUARDED_BY(ledger_mu_) = 0;
  mutable absl::Time ledger_built_ ABSL_GUARDED_BY(ledger_mu_) = absl::InfinitePast();

  absl::Mutex subscribers_mu_;
  uint64_t next_subscriber_ ABSL_GUARDED_BY(subscribers_mu_) = 1;
  std::map<uint64_t, std::pair<std::string, std::function<void()>>> subscribers_ ABSL_GUARDED_BY(subscribers_mu_);
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_RUN_BOARD_H_
