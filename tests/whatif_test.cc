// What-if on simulated runs of the flagship plan: each remedy moves the forecast in the
// direction, and by about the amount, the planner's arithmetic says.
#include "forecast/whatif.h"

#include <cmath>

#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"
#include "tests/flagship_plan.h"

namespace flightplan::forecast {
namespace {

using testing::FlagshipPlan;

// The flagship run with failures at twice the plan's rate, folded to `share` of its target.
RunState FailingRun(double share, uint64_t seed = 3) {
  SimulationOptions o = FindScenario("failures-x2")->options;
  o.seed = seed;
  const std::vector<Event> events = SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, o);
  RunState s;
  for (const Event& e : events) {
    if (static_cast<double>(s.tokens) >= share * static_cast<double>(FlagshipPlan().plan.data.tokens)) break;
    EXPECT_TRUE(ApplyEvent(s, e).ok());
  }
  return s;
}

double Hours(absl::Time a, absl::Time b) { return absl::ToDoubleSeconds(a - b) / 3600; }

TEST(WhatIf, MoreGpusScaleTheRunsOwnRateAndItsFailures) {
  const RunState s = FailingRun(0.3);
  Variant twice;
  twice.add_gpus = 4096;
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {twice});
  ASSERT_EQ(out.size(), 2u);
  const Outcome& base = out[0];
  const Outcome& more = out[1];
  ASSERT_FALSE(more.broken) << more.errors.front();
  EXPECT_EQ(more.gpus, 8192u);
  // The planner: dp 256 holding the batch of 2,048 sequences (grad_accum 16 -> 8, the
  // interleaved bubble 3/83 -> 3/43), so the run's own rate times 2 x (40/43) / (80/83).
  const double planner_ratio = 2.0 * (1 - 3.0 / 43) / (1 - 3.0 / 83);
  EXPECT_NEAR(more.tokens_per_second / base.tokens_per_second, planner_ratio, 1e-9);
  // Twice the nodes: the job fails twice as often.
  EXPECT_NEAR(more.mtbf_seconds / base.mtbf_seconds, 0.5, 1e-9);
  // Sooner, but not twice as soon: the failures double too.
  const double before = Hours(base.finish_p50, s.last_time), after = Hours(more.finish_p50, s.last_time);
  EXPECT_LT(after, 0.6 * before);
  EXPECT_GT(after, before / planner_ratio);
  // More GPUs for fewer hours: at $2.50 an hour the rest costs about the same, and the
  // budget lost to failures grows.
  EXPECT_GT(more.budget_projected_seconds, base.budget_projected_seconds);
}

TEST(WhatIf, CheckpointRemediesMoveTheFinishByTheYoungDalyArithmetic) {
  const RunState s = FailingRun(0.3);
  const std::vector<Outcome> base_only = WhatIf(FlagshipPlan().plan, s, s.last_time, {});
  const Outcome& base = base_only[0];
  // The flagship saves every 516 s (Daly for the plan's 3.9 h job MTBF), blocking 9.8 s.
  const double tau = FlagshipPlan().report.checkpoint.interval_seconds;
  const double blocking = FlagshipPlan().report.checkpoint.blocking_seconds;
  ASSERT_NEAR(tau, 516, 5);
  // Ahead: the compute left at the forecast's rate, and the failures in it at the MTBF
  // the forecast draws around (the run's, twice the plan's rate).
  const double compute =
      (static_cast<double>(FlagshipPlan().plan.data.tokens) - static_cast<double>(s.tokens)) / base.tokens_per_second;
  const double failures = compute / base.mtbf_seconds;
  for (double shorter : {300.0, 200.0}) {
    Variant v;
    v.checkpoint_interval_seconds = shorter;
    const Outcome o = WhatIf(FlagshipPlan().plan, s, s.last_time, {v})[1];
    ASSERT_FALSE(o.broken) << o.errors.front();
    // Each failure redoes half an interval less; every compute second pays blocking/tau
    // more in saves.
    const double predicted = failures * (shorter - tau) / 2 + compute * (blocking / shorter - blocking / tau);
    const double moved = absl::ToDoubleSeconds(o.finish_p50 - base.finish_p50);
    // Tolerance: a quarter of the prediction plus an hour. The draws share their seeds, so
    // the noise between variants is small; the rest is the loss distribution's shape (the
    // shift is applied to each incident's loss, floored) and the checkpoint overhead the
    // run observed rather than the plan's.
    EXPECT_NEAR(moved, predicted, 0.25 * std::fabs(predicted) + 3600) << shorter;
    EXPECT_LT(o.budget_projected_seconds, base.budget_projected_seconds) << shorter;
  }
  // Asynchronous saves block for the host copy only (0.5 s, not 9.8 s) at the same
  // interval, and each failure also loses the write in flight (9.8 s): sooner.
  Variant async;
  async.async_checkpoint = true;
  const Outcome a = WhatIf(FlagshipPlan().plan, s, s.last_time, {async})[1];
  ASSERT_FALSE(a.broken) << a.errors.front();
  EXPECT_LT(a.finish_p50, base.finish_p50);
  // By how much, from the planner's two plans (the interval is Daly's for each blocking
  // cost: shorter when saves block less): the overhead per compute second, and each
  // failure's loss, change by the plans' differences.
  PlanSpec async_plan = FlagshipPlan().plan;
  async_plan.checkpoint.async = true;
  const planner::PlanReport ra = planner::ComputePlan(async_plan);
  const planner::PlanReport& rs = FlagshipPlan().report;
  const double predicted =
      compute * (ra.checkpoint.overhead_seconds / ra.schedule.active_compute_seconds -
                 rs.checkpoint.overhead_seconds / rs.schedule.active_compute_seconds) +
      failures * (ra.failures.loss_per_interruption_seconds - rs.failures.loss_per_interruption_seconds);
  EXPECT_LT(predicted, 0);
  EXPECT_NEAR(absl::ToDoubleSeconds(a.finish_p50 - base.finish_p50), predicted, 0.25 * std::fabs(predicted) + 3600);
}

TEST(WhatIf, EvidenceStandsWhereTheChangeLeavesThePlanAsItWas) {
  // A variant that changes nothing the planner computes (the plan's own node MTBF): the
  // forecast is the baseline's, evidence and all, draw for draw.
  const RunState s = FailingRun(0.3);
  Variant same;
  same.node_mtbf_factor = 1;
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {same});
  EXPECT_EQ(out[1].finish_p50, out[0].finish_p50);
  EXPECT_EQ(out[1].budget_projected_seconds, out[0].budget_projected_seconds);
  // A run that has shown nothing yet: the plan stands, so the baseline finishes near the
  // plan's date.
  RunState none;
  const Outcome fresh = WhatIf(FlagshipPlan().plan, none, FlagshipPlan().report.schedule.start_time, {})[0];
  EXPECT_NEAR(Hours(fresh.finish_p50, FlagshipPlan().report.schedule.finish_time), 0,
              0.1 * FlagshipPlan().report.schedule.total_seconds / 3600);
  // Quarantining nodes faster (a factor of 2 on the node MTBF from now on) halves the
  // failure rate the run showed, not the plan's.
  Variant better;
  better.node_mtbf_factor = 2;
  const Outcome b = WhatIf(FlagshipPlan().plan, s, s.last_time, {better})[1];
  EXPECT_NEAR(b.mtbf_seconds / out[0].mtbf_seconds, 2, 1e-9);
  EXPECT_LT(b.finish_p50, out[0].finish_p50);
}

// An operator who types an MTBF means that MTBF ahead: on a run failing at 5x its plan,
// the plan's own node MTBF is the "returns to its plan" future, not the baseline.
TEST(WhatIf, TheNodeMtbfTypedIsTheRateAheadAndThePlansReturnsTheRunToItsPlan) {
  SimulationOptions o;
  o.failure_rate_factor = 5;
  o.seed = 11;
  const std::vector<Event> events = SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, o);
  RunState s;
  for (const Event& e : events) {
    if (static_cast<double>(s.tokens) >= 0.3 * static_cast<double>(FlagshipPlan().plan.data.tokens)) break;
    ASSERT_TRUE(ApplyEvent(s, e).ok());
  }
  ForecastOptions options;
  options.draws = 2000;
  const Simulation sim = Simulate(s, FlagshipPlan().prior, s.last_time, options);
  ASSERT_EQ(sim.futures.size(), 2u) << "excess " << sim.excess_ratio;
  const Future& recent = sim.futures[0];
  const Future& plan = sim.futures[1];
  ASSERT_EQ(plan.name, "plan");
  ASSERT_GT(recent.finish_p50_seconds - plan.finish_p50_seconds, 86400) << "the futures should be days apart";

  Variant fixed;
  fixed.node_mtbf_hours = *FlagshipPlan().plan.failures.node_mtbf_hours;  // the plan's own, 2,000 h
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {fixed}, std::nullopt, options);
  ASSERT_FALSE(out[1].broken);
  EXPECT_DOUBLE_EQ(out[1].mtbf_seconds, FlagshipPlan().report.failures.job_mtbf_seconds);
  const double whatif = absl::ToDoubleSeconds(out[1].finish_p50 - sim.as_of);
  const double apart = recent.finish_p50_seconds - plan.finish_p50_seconds;
  // Within a fifth of the distance between the futures from the plan's, and well before
  // the baseline (which weighs the recent future too).
  EXPECT_LT(std::fabs(whatif - plan.finish_p50_seconds), 0.2 * apart)
      << "what-if " << whatif / 86400 << " d, plan future " << plan.finish_p50_seconds / 86400 << " d, recent "
      << recent.finish_p50_seconds / 86400 << " d";
  EXPECT_LT(out[1].finish_p50, out[0].finish_p50);
  // A factor of 1 on the run's own rate is the baseline.
  Variant same;
  same.node_mtbf_factor = 1;
  EXPECT_EQ(WhatIf(FlagshipPlan().plan, s, s.last_time, {same}, std::nullopt, options)[1].finish_p50,
            out[0].finish_p50);
  // Both at once is refused.
  Variant both;
  both.node_mtbf_hours = 2000;
  both.node_mtbf_factor = 2;
  const Outcome refused = WhatIf(FlagshipPlan().plan, s, s.last_time, {both})[1];
  EXPECT_TRUE(refused.broken);
}

TEST(WhatIf, AVariantThePlannerRefusesIsReportedNotForecast) {
  const RunState s = FailingRun(0.1);
  Variant odd, indivisible, slow;
  odd.gpus = 4100;             // not whole 32-GPU replicas
  indivisible.gpus = 96 * 32;  // dp 96 does not divide 2,048 sequences
  slow.mfu = 1.5;
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {odd, indivisible, slow});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(out[1].broken);
  EXPECT_EQ(out[1].errors.front(), "fleet.gpus 4100 is not whole replicas of tp x pp x cp = 32 GPUs");
  EXPECT_TRUE(out[2].broken);
  EXPECT_NE(out[2].errors.front().find("dp 96, which does not divide the global batch of 2048"), std::string::npos)
      << out[2].errors.front();
  EXPECT_TRUE(out[3].broken);
  EXPECT_NE(out[3].errors.front().find("efficiency.mfu 1.5 is invalid"), std::string::npos) << out[3].errors.front();
  EXPECT_EQ(out[1].finish_p50, absl::InfinitePast());  // not forecast
  EXPECT_EQ(Describe(odd), "4100 GPUs");
}

TEST(WhatIf, CostAtTheFinishIsTheSpentPlusTheFleetUntilThen) {
  const RunState s = FailingRun(0.3);
  Variant twice;
  twice.add_gpus = 4096;
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {twice});
  // $2.50 per GPU-hour, power included; 4,288 then 8,384 GPUs reserved (with 24 spare nodes).
  const RunCost spent =
      CostOfRun(Snapshot(s, s.last_time).seconds, FlagshipPlan().prior.cost, s.last_time, s.last_time, s.last_time);
  EXPECT_NEAR(out[0].cost_p50_dollars, spent.spent_dollars + 4288 * 2.5 * Hours(out[0].finish_p50, s.last_time), 1);
  EXPECT_NEAR(out[1].cost_p50_dollars, spent.spent_dollars + 8384 * 2.5 * Hours(out[1].finish_p50, s.last_time), 1);
}

TEST(WhatIf, TheTimeAheadSplitsByCategoryAndEachRemedyMovesItsOwn) {
  const RunState s = FailingRun(0.3);
  Variant twice, async, steadier;
  twice.add_gpus = 4096;
  async.async_checkpoint = true;
  steadier.node_mtbf_factor = 2;
  const std::vector<Outcome> out = WhatIf(FlagshipPlan().plan, s, s.last_time, {twice, async, steadier});
  ASSERT_EQ(out.size(), 4u);
  const TimeAhead& base = out[0].ahead;
  // Compute ahead: the tokens left at the forecast's rate (the mean of 1/rate over a
  // lognormal spread of a few percent: within 5%).
  const double left = static_cast<double>(FlagshipPlan().plan.data.tokens) - static_cast<double>(s.tokens);
  EXPECT_NEAR(base.productive, left / out[0].tokens_per_second, 0.05 * base.productive);
  // A full-size run that has started: no capacity, no waiting; failures and saves ahead.
  EXPECT_EQ(base.capacity, 0);
  EXPECT_EQ(base.waiting, 0);
  EXPECT_GT(base.failures, 0);
  EXPECT_GT(base.checkpoint, 0);
  // The categories add up to the mean time ahead, which lies inside the P10..P90.
  const double sum = base.Sum();
  EXPECT_GT(sum, absl::ToDoubleSeconds(out[0].finish_p10 - s.last_time));
  EXPECT_LT(sum, absl::ToDoubleSeconds(out[0].finish_p90 - s.last_time));
  // Twice the GPUs: the compute ahead by the planner's ratio, failures up (twice the nodes).
  const double planner_ratio = 2.0 * (1 - 3.0 / 43) / (1 - 3.0 / 83);
  EXPECT_NEAR(out[1].ahead.productive, base.productive / planner_ratio, 0.02 * base.productive);
  EXPECT_GT(out[1].ahead.failures / out[1].ahead.productive, 1.5 * base.failures / base.productive);
  // Asynchronous saves: the same compute, far less checkpoint time ahead.
  EXPECT_NEAR(out[2].ahead.productive, base.productive, 1e-6 * base.productive);
  EXPECT_LT(out[2].ahead.checkpoint, 0.5 * base.checkpoint);
  // Half the failure rate: the same compute, fewer saves (Daly's interval for the longer MTBF
  // is longer), about half the failures' time.
  EXPECT_NEAR(out[3].ahead.productive, base.productive, 1e-6 * base.productive);
  EXPECT_LT(out[3].ahead.checkpoint, base.checkpoint);
  EXPECT_NEAR(out[3].ahead.failures / base.failures, 0.5, 0.15);
}

TEST(WhatIf, TheFleetForALateRunsDeadlineMeetsItAtP90AndTheNextSmallerDoesNot) {
  const RunState s = FailingRun(0.3);
  const Outcome base = WhatIf(FlagshipPlan().plan, s, s.last_time, {})[0];
  // Ten days before the baseline's P90: late.
  const absl::Time deadline = base.finish_p90 - absl::Hours(240);
  const LiveDeadlineFleet d = FleetForDeadline(FlagshipPlan().plan, s, s.last_time, deadline);
  ASSERT_TRUE(d.met) << d.explanation;
  EXPECT_GT(d.fleet.gpus, 4096u);
  EXPECT_LE(d.fleet.finish_p90, deadline);
  ASSERT_GT(d.smaller_gpus, 0u);
  EXPECT_LT(d.smaller_gpus, d.fleet.gpus);
  EXPECT_GT(d.smaller_p90, deadline);
  // Every fleet tried holds the batch of 2,048 sequences: dp divides it.
  EXPECT_EQ(2048 % (d.fleet.gpus / 32), 0u);
  EXPECT_EQ(2048 % (d.smaller_gpus / 32), 0u);
  // A deadline no fleet can meet (an hour from now) says so, with the fastest.
  const LiveDeadlineFleet none = FleetForDeadline(FlagshipPlan().plan, s, s.last_time, s.last_time + absl::Hours(1));
  EXPECT_FALSE(none.met);
  EXPECT_NE(none.explanation.find("finishes by the deadline at P90: the fastest"), std::string::npos)
      << none.explanation;
}

}  // namespace
}  // namespace flightplan::forecast
