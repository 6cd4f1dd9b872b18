// A synthetic run drawn from a plan's own assumptions, with knobs that make reality differ
// from the plan (for backtests and calibration). Pure and deterministic for a seed.
#ifndef FLIGHTPLAN_FORECAST_SIMULATOR_H_
#define FLIGHTPLAN_FORECAST_SIMULATOR_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "forecast/event.h"
#include "planner/plan.h"

namespace flightplan::forecast {

// The planner's plan and report, which the forecaster takes as its prior.
using planner::PlanReport;
using planner::PlanSpec;

// A slow stretch (a straggler, thermal throttling, a degraded link): from `start_days` after
// the run's start (wall clock) for `hours`, each report interval takes `factor` times as long
// (1.05: 5% slower), reached linearly over its first `ramp_hours` (0: at once).
struct SlowStretchSpec {
  double start_days = 0;
  double hours = 0;
  double factor = 1;
  double ramp_hours = 0;
};

// What the simulation did, for tests that score a detector against it.
struct SimulationTruth {
  // Per slow stretch (SimulationOptions::slow's order): the seconds the reported step
  // intervals took beyond what they would have taken without it.
  std::vector<double> slow_seconds;
};

struct SimulationOptions {
  uint64_t seed = 1;
  // Reality vs the plan.
  double failure_rate_factor = 1.0;    // failures x k
  double throughput_factor = 1.0;      // achieved / planned tokens per second
  double degrade_per_tenth = 0.0;      // throughput loses this share per tenth of progress
  double regime_at = 0.0;              // progress (0..1) where a regime change starts; 0 = none
  double regime_failure_factor = 1.0;  // ... failures x k after it (a bad rack)
  double regime_throughput_factor = 1.0;
  // A chaotic start: failures x k (on top of failure_rate_factor) until this progress.
  double early_until = 0.0;
  double early_failure_factor = 1.0;
  // ... rising linearly to this factor at `early_until` (0 = constant): a crisis whose worst
  // stretch comes last, then settles.
  double early_failure_ramp_to = 0.0;
  // Bursty failures: "bad days" (a flaky switch, a cooling fault) arrive every
  // `bad_day_every_days` on average (exponential gaps, wall clock) and last
  // `bad_day_hours`, with failures x `bad_day_failure_factor` inside them. 0 = none.
  double bad_day_every_days = 0.0;
  double bad_day_hours = 24.0;
  double bad_day_failure_factor = 10.0;
  // Maintenance on a calendar instead of the plan's allotment: every
  // `maintenance_every_days` (wall clock), a planned stop of `maintenance_hours` at the next
  // checkpoint. 0 = the plan's availability allotment as windows (see `maintenance`).
  double maintenance_every_days = 0.0;
  double maintenance_hours = 6.0;
  // Deliberate interventions: every `intervention_every_days` (wall clock), a planned
  // restart that rolls back `intervention_rollback_checkpoints` checkpoints (a loss spike
  // rewound, a learning-rate change redone), losing that work on purpose. 0 = none.
  double intervention_every_days = 0.0;
  int intervention_rollback_checkpoints = 3;
  double restart_tail_alpha = 0.0;  // > 0: restarts Pareto-tailed with this shape
  double hang_fraction = 0.0;       // failures that hang until a watchdog kills them
  double watchdog_seconds = 1800;
  double unreported_fraction = 0.0;  // crashes nobody reports
  double duplicate_fraction = 0.0;   // events sent twice
  bool maintenance = true;           // the plan's planned downtime, as windows
  // Step-time noise: each report interval's time is multiplied by a log-normal factor with
  // this sigma (on top of a 2% uniform wobble). 0 = the wobble only.
  double step_time_noise = 0.0;
  // Slow stretches, several allowed (an overlap multiplies).
  std::vector<SlowStretchSpec> slow;
  // Step reports per run (the report interval is chosen to give about this many).
  int64_t target_reports = 2000;
};

// Named scenarios (the calibration test's and `flightplan simulate --scenario`): the
// options for `name`, and the progress (0..1) from which the change can be seen (0 for a
// run with no change). False for an unknown name.
struct Scenario {
  const char* name;
  const char* description;
  SimulationOptions options;
  double change_at = 0;  // progress where reality changes; forecasts before it can't know
};
[[nodiscard]] const std::vector<Scenario>& Scenarios();
[[nodiscard]] const Scenario* FindScenario(std::string_view name);

// The events of the whole run, in time order, each with an id. Starts at the plan's start.
// `truth`, when given, receives what the knobs did.
[[nodiscard]] std::vector<Event> SimulateRun(const PlanSpec& plan, const PlanReport& report,
                                             const SimulationOptions& options, SimulationTruth* truth = nullptr);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_SIMULATOR_H_
