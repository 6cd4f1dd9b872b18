// The plan engine: every figure of a PlanReport from a PlanSpec, and the smallest fleet
// that meets a deadline.
//
// Pure functions: no I/O, no clock (times come from the plan). Thread-safe.
#ifndef FLIGHTPLAN_FORECAST_PLAN_ENGINE_H_
#define FLIGHTPLAN_FORECAST_PLAN_ENGINE_H_

#include "absl/time/time.h"
#include "forecast/plan.h"

namespace flightplan::forecast {

// Computes the report of `plan`, with every inconsistency as a finding. Never fails: a
// figure that cannot be computed from broken inputs is 0 and a finding says why.
[[nodiscard]] PlanReport ComputePlan(const PlanSpec& plan);

// The smallest fleet, in whole data-parallel replicas of tp x pp x cp GPUs that are also
// whole nodes, whose total schedule finishes by `deadline`. Each replica keeps the plan's
// micro_batch and grad_accum, so the global batch scales with dp. When no fleet up to
// `max_gpus` meets it, `met` is false and the fields describe the fastest one found.
[[nodiscard]] DeadlineFleet FindFleetForDeadline(const PlanSpec& plan, absl::Time deadline,
                                                 uint32_t max_gpus = 1u << 20);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_PLAN_ENGINE_H_
