// What-if: a run's forecast under proposed changes, from its evidence so far.
//
// Each variant changes the plan (more GPUs holding the global batch, another checkpoint
// interval, asynchronous saves, a node MTBF, a restart time, an MFU); the planner computes
// the changed plan, and its ratios to the plan move what the forecaster believes of the run
// (ForecastPrior::Change): the run's evidence where it has shown some, the plan where not,
// then the change as the planner computes it (planner::ComputeVariant: the plan's efficiency
// while busy held, each fleet's own bubble charged). A node MTBF in hours is the exception: it is
// the failure rate ahead, absolutely (node_mtbf_factor is the ratio). A variant the planner finds broken is
// reported with its findings and not forecast. Pure: `now` is a parameter.
#ifndef FLIGHTPLAN_FORECAST_WHATIF_H_
#define FLIGHTPLAN_FORECAST_WHATIF_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "planner/plan.h"

namespace flightplan::forecast {

struct Variant {
  std::string name;                 // "" = described from the changes
  std::optional<uint32_t> gpus;     // the fleet (whole replicas; the batch held)
  std::optional<int64_t> add_gpus;  // or this many more (negative: fewer)
  std::optional<double> checkpoint_interval_seconds;
  std::optional<bool> async_checkpoint;
  // The node MTBF from now on, as typed: the failure rate ahead is the changed plan's,
  // whatever the run has shown so far (an operator who types an MTBF means that MTBF).
  std::optional<double> node_mtbf_hours;
  // Or the run's own failure rate so far, as the forecast reads it, divided by this (2:
  // bad nodes quarantined twice as fast).
  std::optional<double> node_mtbf_factor;
  std::optional<double> restart_seconds;
  std::optional<double> mfu;
};

struct Outcome {
  std::string name;
  bool broken = false;              // the planner refused the changed plan
  std::vector<std::string> errors;  // its error findings (code: message), or why not applied
  uint32_t gpus = 0;
  // The efficiency the changed plan assumes: MFU end to end and its pipeline's bubble (an
  // end-to-end figure keeps its efficiency while busy on every fleet).
  double mfu = 0, bubble_fraction = 0;
  double tokens_per_second = 0;  // what the forecast centres on
  double mtbf_seconds = 0;       // the job MTBF the forecast draws around
  absl::Time finish_p10 = absl::InfinitePast(), finish_p50 = absl::InfinitePast(), finish_p90 = absl::InfinitePast();
  double budget_projected_seconds = 0;  // consumed + the loss ahead (P50)
  double exhaustion_probability = 0, deadline_probability = 0;
  double cost_p50_dollars = 0, energy_p50_mwh = 0;
  TimeAhead ahead;  // the time ahead by category (Simulation::ahead)
};

// The baseline (no change) first, then one outcome per variant, in order. `deadline`
// replaces the plan's for the deadline probability. `draws` as ForecastOptions.
[[nodiscard]] std::vector<Outcome> WhatIf(const PlanSpec& plan, const RunState& state, absl::Time now,
                                          const std::vector<Variant>& variants,
                                          std::optional<absl::Time> deadline = std::nullopt,
                                          const ForecastOptions& options = {});

// The smallest fleet, in whole data-parallel replicas on whole nodes holding the global
// batch, whose forecast from the run's evidence finishes by `deadline` at P90. Fleets are
// tried from the smallest that holds the batch upward, to `max_gpus`.
struct LiveDeadlineFleet {
  bool met = false;
  Outcome fleet;              // the smallest that meets it (or the fastest tried)
  uint32_t smaller_gpus = 0;  // the next smaller valid fleet, which does not (0: none)
  absl::Time smaller_p90 = absl::InfinitePast();
  std::string explanation;
};
[[nodiscard]] LiveDeadlineFleet FleetForDeadline(const PlanSpec& plan, const RunState& state, absl::Time now,
                                                 absl::Time deadline, uint32_t max_gpus = 1u << 20,
                                                 const ForecastOptions& options = {});

// A short description of a variant's changes ("+512 GPUs, checkpoint every 5 min").
[[nodiscard]] std::string Describe(const Variant& v);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_WHATIF_H_
