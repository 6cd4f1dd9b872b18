// The plan engine: every figure of a PlanReport from a PlanSpec, and the smallest fleet
// that meets a deadline.
//
// Pure functions: no I/O, no clock (times come from the plan). Thread-safe.
#ifndef FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_
#define FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_

#include "absl/time/time.h"
#include "planner/plan.h"

namespace flightplan::planner {

// Computes the report of `plan`, with every inconsistency as a finding. Never fails: a
// figure that cannot be computed from broken inputs is 0 and a finding says why.
[[nodiscard]] PlanReport ComputePlan(const PlanSpec& plan);

// Sets `plan` to `gpus` GPUs, dp following from tp x pp x cp, and holds the global batch
// of `batch_sequences`: each replica's share, in the plan's micro-batch when it divides the
// share (else the largest that does: never more memory than planned), the rest
// accumulated. False, `plan` unchanged, when gpus is not whole replicas or dp does not
// divide the batch.
[[nodiscard]] bool SetFleetHoldingBatch(PlanSpec& plan, uint64_t gpus, uint64_t batch_sequences);

// The smallest fleet, in whole data-parallel replicas of tp x pp x cp GPUs that are also
// whole nodes, whose total schedule finishes by `deadline`. The recipe holds: the global
// batch stays the plan's, so dp must divide its sequences per step, and each replica's
// grad_accum (and, when needed, a smaller micro_batch) adapts. With `allow_batch_change`,
// each replica keeps the plan's micro_batch and grad_accum instead and the global batch
// scales with dp (a different recipe, said so). When no fleet up to `max_gpus` meets it,
// `met` is false, the fields describe the fastest one found, and the explanation gives
// the reason that stopped the search. A plan in phases is not searched (the explanation
// says so): its phases may each have their own fleet and batch.
[[nodiscard]] DeadlineFleet FindFleetForDeadline(const PlanSpec& plan, absl::Time deadline,
                                                 uint32_t max_gpus = 1u << 20, bool allow_batch_change = false);

}  // namespace flightplan::planner

#endif  // FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_
