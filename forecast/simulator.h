// A synthetic run drawn from a plan's own assumptions, with knobs that make reality differ
// from the plan (for backtests and calibration). Pure and deterministic for a seed.
#ifndef FLIGHTPLAN_FORECAST_SIMULATOR_H_
#define FLIGHTPLAN_FORECAST_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "forecast/event.h"
#include "forecast/plan.h"

namespace flightplan::forecast {

struct SimulationOptions {
  uint64_t seed = 1;
  // Reality vs the plan.
  double failure_rate_factor = 1.0;   // failures x k
  double throughput_factor = 1.0;     // achieved / planned tokens per second
  double degrade_per_tenth = 0.0;     // throughput loses this share per tenth of progress
  double regime_at = 0.0;             // progress (0..1) where a regime change starts; 0 = none
  double regime_failure_factor = 1.0; // ... failures x k after it (a bad rack)
  double regime_throughput_factor = 1.0;
  double restart_tail_alpha = 0.0;    // > 0: restarts Pareto-tailed with this shape
  double hang_fraction = 0.0;         // failures that hang until a watchdog kills them
  double watchdog_seconds = 1800;
  double unreported_fraction = 0.0;   // crashes nobody reports
  double duplicate_fraction = 0.0;    // events sent twice
  bool maintenance = true;            // the plan's planned downtime, as windows
  // Step reports per run (the report interval is chosen to give about this many).
  int64_t target_reports = 2000;
};

// The events of the whole run, in time order, each with an id. Starts at the plan's start.
[[nodiscard]] std::vector<Event> SimulateRun(const PlanSpec& plan, const PlanReport& report,
                                             const SimulationOptions& options);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_SIMULATOR_H_
