// The plan engine: every figure of a PlanReport from a PlanSpec, and the smallest fleet
// that meets a deadline.
//
// Pure functions: no I/O, no clock (times come from the plan). Thread-safe.
#ifndef FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_
#define FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_

#include <optional>

#include "absl/time/time.h"
#include "planner/plan.h"

namespace flightplan::planner {

// Computes the report of `plan`, with every inconsistency as a finding. Never fails: a
// figure that cannot be computed from broken inputs is 0 and a finding says why.
[[nodiscard]] PlanReport ComputePlan(const PlanSpec& plan);

// An end-to-end efficiency figure (efficiency.mfu or hfu) belongs to the layout it was
// measured on: the pipeline's bubble is in it. FigureBubble is that bubble, `plan`'s own
// share of each step idle, when the plan's figure is end to end; nullopt when the figure
// is measured while the pipeline is busy (busy_mfu, busy_hfu), or the plan is in phases.
[[nodiscard]] std::optional<double> FigureBubble(const PlanSpec& plan);

// The report of `variant`, a change of a plan whose end-to-end figure was measured with
// `figure_bubble` idle (FigureBubble of the plan): the variant keeps the efficiency while
// busy that the figure implies there, and pays its own layout's bubble. So the two forms
// of one figure (mfu 0.42 at a 15.8% bubble, busy_mfu 0.499) give one answer on every
// fleet. nullopt: ComputePlan(variant).
[[nodiscard]] PlanReport ComputeVariant(const PlanSpec& variant, std::optional<double> figure_bubble);

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
// the reason that stopped the search. Each trial fleet keeps the plan's efficiency while
// the pipeline is busy and pays its own bubble (ComputeVariant); DeadlineFleet says the
// MFU it reaches. With `allow_batch_change` a stated layout.global_batch_tokens scales with
// dp too. A plan in phases is not searched (the explanation
// says so): its phases may each have their own fleet and batch.
[[nodiscard]] DeadlineFleet FindFleetForDeadline(const PlanSpec& plan, absl::Time deadline,
                                                 uint32_t max_gpus = 1u << 20, bool allow_batch_change = false);

}  // namespace flightplan::planner

#endif  // FLIGHTPLAN_PLANNER_PLAN_ENGINE_H_
