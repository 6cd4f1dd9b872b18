// Each estimator of the forecaster on hand-built runs.
#include "forecast/forecaster.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "forecast/backtest.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "planner/formulas.h"
#include "planner/plan_engine.h"
#include "tests/flagship_plan.h"

namespace flightplan::forecast {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1799020800);
absl::Time At(double s) { return kT0 + absl::Seconds(s); }

Event E(EventKind kind, double t) {
  Event e;
  e.kind = kind;
  e.time = At(t);
  return e;
}
Event Started(double t, uint32_t attempt, int64_t restored) {
  Event e = E(EventKind::kJobStarted, t);
  e.attempt = attempt;
  e.restored_step = restored;
  return e;
}
Event Steps(double t, int64_t step, int64_t tokens) {
  Event e = E(EventKind::kSteps, t);
  e.step = step;
  e.tokens = tokens;
  return e;
}
Event Crash(double t) {
  Event e = E(EventKind::kInterruption, t);
  e.cause = "gpu";
  return e;
}

// 1,000 tokens/s planned; 1e8 tokens; a 100-hour plan; MTBF 10 h; loss 1,000 s.
ForecastPrior Prior() {
  ForecastPrior p;
  p.target_tokens = 100'000'000;
  p.plan_start = kT0;
  p.plan_tokens_per_second = 1000;
  p.plan_active_seconds = 100000;
  p.plan_total_seconds = 110000;
  p.plan_finish = At(110000);
  p.budget_seconds = 10000;
  p.job_mtbf_seconds = 36000;
  p.loss_per_interruption_seconds = 1000;
  p.checkpoint_blocking_seconds = 10;
  p.checkpoint_interval_seconds = 600;
  return p;
}

// A run at `rate` tokens/s, reporting every 60 s, for `seconds`.
RunState Running(double rate, double seconds) {
  RunState s;
  EXPECT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  for (int i = 1; i * 60.0 <= seconds; ++i) {
    EXPECT_TRUE(ApplyEvent(s, Steps(i * 60.0, i, static_cast<int64_t>(rate * 60.0 * i))).ok());
  }
  return s;
}

TEST(Forecaster, BeforeAnyEvidenceTheFinishIsThePlans) {
  RunState s;
  const Forecast f = ComputeForecast(s, Prior(), kT0);
  // P50 near the plan's finish (the plan's expected losses are below its P90 budget).
  EXPECT_NEAR(absl::ToDoubleSeconds(f.finish_p50 - Prior().plan_finish), 0, 0.1 * 110000);
  EXPECT_LT(f.finish_p10, f.finish_p50);
  EXPECT_LT(f.finish_p50, f.finish_p90);
}

TEST(Forecaster, ThroughputEvidenceOutweighsThePlan) {
  // Half the planned speed for 10 hours: the remaining compute doubles.
  const RunState s = Running(500, 36000);
  const Forecast f = ComputeForecast(s, Prior(), At(36000));
  EXPECT_NEAR(f.tokens_per_second, 500, 1);
  EXPECT_NEAR(f.forecast_tokens_per_second, 500, 50);
  // Compute alone at 500 tokens/s, plus interruptions: not the plan's 1,000.
  const double remaining = (1e8 - 500.0 * 35940) / 500;
  EXPECT_GT(absl::ToDoubleSeconds(f.finish_p50 - At(36000)), 0.97 * remaining);
  EXPECT_LT(absl::ToDoubleSeconds(f.finish_p50 - At(36000)), 1.3 * remaining);
}

TEST(Forecaster, ARevisedPlanScalesTheRateUntilTheRunShowsItsOwn) {
  // 10 hours at 500 tokens/s, then the fleet doubles (the new plan's rate is 2x).
  RunState s = Running(500, 36000);
  ForecastPrior revised = Prior();
  revised.plan_tokens_per_second = 2000;
  revised.revised_at = At(36000);
  revised.revision_rate_scale = 2;
  EXPECT_NEAR(ComputeForecast(s, revised, At(36000)).forecast_tokens_per_second, 1000, 20);
  EXPECT_NEAR(ComputeForecast(s, Prior(), At(36000)).forecast_tokens_per_second, 500, 10);  // unrevised
  // Then 10 more hours at 800 tokens/s (the new fleet scales worse than the plan said):
  // the rate since the revision takes over.
  int64_t step = s.step;
  int64_t tokens = s.tokens;
  for (double t = 36060; t <= 72000; t += 60) {
    tokens += 800 * 60;
    ASSERT_TRUE(ApplyEvent(s, Steps(t, ++step, tokens)).ok());
  }
  EXPECT_NEAR(ComputeForecast(s, revised, At(72000)).forecast_tokens_per_second, 800, 800 * 0.04);
}

// Two phases: 5e7 tokens at 1,000 tokens/s over the first 55,000 s of the schedule, then
// 5e7 at 500 tokens/s over the next 110,000 s (a longer context: slower per token).
ForecastPrior Phased() {
  ForecastPrior p = Prior();
  p.plan_tokens_per_second = 1e8 / 150000;  // the whole run's average
  p.plan_active_seconds = 150000;
  p.plan_total_seconds = 165000;
  p.plan_finish = At(165000);
  p.phases = {{5e7, 55000, 1000}, {1e8, 165000, 500}};
  return p;
}

TEST(Forecaster, CostOfARunByCategoryAndAtItsFinish) {
  // 100 GPUs at $3 an hour and $200 per MWh; 1 MW while running, 0.4 MW while down.
  ForecastPrior::Cost prices{3, 200, 100, 1e6, 4e5};
  TimeSeconds t;
  t.productive = 3600;
  t.checkpoint = 360;
  t.down_unplanned = 1800;
  const RunCost c = CostOfRun(t, prices, At(5760), At(5760 + 7200), At(5760 + 10800));
  ASSERT_EQ(c.categories.size(), 10u);  // the seven, then capacity, custom, excluded
  EXPECT_EQ(c.categories[0].name, "productive");
  // Productive: 100 GPU-hours x $3 + 1 MWh x $200 = $500; 3.6e9 J.
  EXPECT_DOUBLE_EQ(c.categories[0].dollars, 500);
  EXPECT_DOUBLE_EQ(c.categories[0].joules, 3.6e9);
  // Down half an hour: 50 GPU-hours x $3 + 0.2 MWh x $200 = $190, at the idle draw.
  EXPECT_EQ(c.categories[4].name, "down_unplanned");
  EXPECT_DOUBLE_EQ(c.categories[4].dollars, 190);
  EXPECT_DOUBLE_EQ(c.categories[4].joules, 4e5 * 1800);
  // Checkpoint: 10 GPU-hours x $3 + 0.1 MWh x $200 = $50. Badput is all but productive.
  EXPECT_DOUBLE_EQ(c.spent_dollars, 500 + 50 + 190);
  EXPECT_DOUBLE_EQ(c.badput_dollars, 50 + 190);
  // Ahead: $300 + $200 per hour of the fleet training; 2 h to the P50, 3 h to the P90.
  EXPECT_DOUBLE_EQ(c.projected_dollars_p50, 740 + 2 * 500);
  EXPECT_DOUBLE_EQ(c.projected_dollars_p90, 740 + 3 * 500);
  // Without prices nothing costs money, and energy is still counted.
  const RunCost free = CostOfRun(t, {0, 0, 100, 1e6, 4e5}, At(5760), At(5760), At(5760));
  EXPECT_EQ(free.spent_dollars, 0);
  EXPECT_DOUBLE_EQ(free.energy_joules, 1e6 * 3960 + 4e5 * 1800);
}

TEST(Forecaster, ThePlanLineFollowsThePhases) {
  const ForecastPrior p = Phased();
  EXPECT_EQ(PlannedTokensAt(p, At(-10)), 0);
  EXPECT_DOUBLE_EQ(PlannedTokensAt(p, At(27500)), 2.5e7);  // half the first span
  EXPECT_DOUBLE_EQ(PlannedTokensAt(p, At(55000)), 5e7);
  EXPECT_DOUBLE_EQ(PlannedTokensAt(p, At(55000 + 55000)), 7.5e7);  // half the second
  EXPECT_DOUBLE_EQ(PlannedTokensAt(p, At(1e6)), 1e8);
  // Without phases, a straight line over the schedule.
  EXPECT_DOUBLE_EQ(PlannedTokensAt(Prior(), At(55000)), 5e7);
  // The plan's compute for a token range, phase by phase.
  EXPECT_DOUBLE_EQ(PlannedActiveSeconds(p, 0, 5e7), 50000);
  EXPECT_DOUBLE_EQ(PlannedActiveSeconds(p, 4e7, 6e7), 10000 + 20000);
  EXPECT_DOUBLE_EQ(PlannedActiveSeconds(Prior(), 0, 5e7), 50000);
}

TEST(Forecaster, ARunInAFastPhaseIsForecastAtTheSlowPhasesRateAhead) {
  // 10 hours at the first phase's planned 1,000 tokens/s: 3.6e7 tokens, all in phase 1.
  // Ahead: 1.4e7 tokens at 1,000 and 5e7 at 500, 114,000 s of compute for 6.4e7 tokens:
  // 561 tokens/s. The run is on plan, so that is the forecast, not the 1,000 it shows.
  const RunState s = Running(1000, 36000);
  const Forecast f = ComputeForecast(s, Phased(), At(36000));
  EXPECT_NEAR(f.forecast_tokens_per_second, 6.406e7 / 114060, 0.02 * 561);
  // The same run 20% slower than plan is forecast 20% slower ahead.
  const RunState slow = Running(800, 36000);
  const Forecast g = ComputeForecast(slow, Phased(), At(36000));
  const double ahead = 1e8 - 800.0 * 36000;
  EXPECT_NEAR(g.forecast_tokens_per_second, 0.8 * ahead / PlannedActiveSeconds(Phased(), 800.0 * 36000, 1e8),
              0.03 * 0.8 * 561);
  // A run on plan that has entered the slow phase: the last hour's 500 tokens/s against a
  // lifetime near 1,000 is the plan's own change, not a shift; the forecast stays the
  // plan's rate ahead, 500.
  RunState on_plan = Running(1000, 50000);  // 5e7 tokens: phase 1 done
  int64_t step = on_plan.step, tokens = on_plan.tokens;
  for (double t = 50060; t <= 50000 + 7200; t += 60) {
    tokens += 500 * 60;
    ASSERT_TRUE(ApplyEvent(on_plan, Steps(t, ++step, tokens)).ok());
  }
  const Simulation sim = Simulate(on_plan, Phased(), At(57200));
  EXPECT_FALSE(sim.throughput_shifted);
  EXPECT_NEAR(sim.forecast_tokens_per_second, 500, 0.03 * 500);
}

TEST(Forecaster, AShiftInThroughputIsDetectedAndTheRecentRateWins) {
  RunState s = Running(1000, 36000);
  int64_t tokens = s.tokens;
  int64_t step = s.step;
  // The last 3 hours at 700 tokens/s (a slower rack).
  for (int i = 1; i <= 180; ++i) {
    tokens += 700 * 60;
    ASSERT_TRUE(ApplyEvent(s, Steps(36000 + i * 60.0, ++step, tokens)).ok());
  }
  const Forecast f = ComputeForecast(s, Prior(), s.last_time);
  EXPECT_TRUE(f.throughput_shifted);
  EXPECT_NEAR(f.recent_tokens_per_second, 700, 1);
  EXPECT_LT(f.forecast_tokens_per_second, 760);
}

TEST(Forecaster, FailureRateFollowsTheEvidenceOverThePrior) {
  // Gamma-Poisson: prior 2 interruptions in 2 x 36,000 s; then 10 in 36,000 running s.
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  double t = 0;
  int64_t step = 0;
  for (int k = 0; k < 10; ++k) {
    for (int i = 0; i < 60; ++i) {
      t += 60;
      ++step;
      ASSERT_TRUE(ApplyEvent(s, Steps(t, step, step * 60000)).ok());
    }
    ASSERT_TRUE(ApplyEvent(s, Crash(t)).ok());
    t += 60;
    ASSERT_TRUE(ApplyEvent(s, Started(t, static_cast<uint32_t>(k + 2), step)).ok());
  }
  const Forecast f = ForecastNow(s, Prior(), At(t));
  const RunSnapshot snap = Snapshot(s, At(t));
  EXPECT_EQ(s.unplanned_interruptions, 10u);
  EXPECT_NEAR(f.observed_mtbf_seconds, snap.running_seconds / 10, 1e-6);
  EXPECT_NEAR(f.posterior_mtbf_seconds, (2 * 36000 + snap.running_seconds) / 12, 1e-6);
  EXPECT_LT(f.posterior_mtbf_seconds, 0.5 * Prior().job_mtbf_seconds);
  // Daly for the posterior MTBF and the plan's checkpoint cost (no checkpoint seen).
  EXPECT_NEAR(f.recommended_checkpoint_interval_seconds, planner::DalyIntervalSeconds(10, f.posterior_mtbf_seconds),
              1e-6);
}

TEST(Forecaster, BurnRateIsBudgetShareOverScheduleShare) {
  // 10 h of work, then down (unplanned) for 1 h: 3,600 s of a 10,000 s budget in 11 h of
  // a 110,000 s schedule: (0.36) / (39,600 / 110,000) = 1.0.
  RunState s = Running(1000, 36000);
  ASSERT_TRUE(ApplyEvent(s, Crash(36000)).ok());
  const Forecast f = ForecastNow(s, Prior(), At(39600));
  EXPECT_NEAR(f.consumed_seconds, 3600, 1e-6);
  EXPECT_NEAR(f.remaining_seconds, 6400, 1e-6);
  EXPECT_NEAR(f.burn_rate, (3600.0 / 10000) / (39600.0 / 110000), 1e-9);
  // Over the last hour, all of it was downtime: (3,600 / 10,000) / (3,600 / 110,000) = 11.
  EXPECT_NEAR(f.burn_rate_1h, 11, 1e-6);
  // Down right now, the budget burns now: at this burn it runs out in 6,400 / (3600/39600) s.
  ASSERT_TRUE(f.exhausted_at.has_value());
  EXPECT_NEAR(absl::ToDoubleSeconds(*f.exhausted_at - At(39600)), 6400 / (3600.0 / 39600), 1);
  // Goodput: 35,940 productive s (the first minute was startup) of 39,600.
  EXPECT_NEAR(f.goodput, 35940.0 / 39600, 1e-9);
}

TEST(Forecaster, ASpentBudgetIsDatedWhenItRanOut) {
  // Down since 36,000 s with a 10,000 s budget: it ran out at 46,000 s, between the last
  // event and now.
  RunState s = Running(1000, 36000);
  ASSERT_TRUE(ApplyEvent(s, Crash(36000)).ok());
  const Forecast f = ForecastNow(s, Prior(), At(60000));
  ASSERT_TRUE(f.exhausted_at.has_value());
  EXPECT_NEAR(absl::ToDoubleSeconds(*f.exhausted_at - At(46000)), 0, 1);
  EXPECT_EQ(ForecastNow(s, Prior(), At(61000)).exhausted_at, f.exhausted_at);  // stable
}

TEST(Forecaster, TimesBeyondTimestampsRangeAreLeftOut) {
  Forecast f;
  f.plan_finish = At(0);
  f.exhausted_at = absl::FromUnixSeconds(2000000000000);  // year 65,000
  f.finish_p50 = absl::FromUnixSeconds(2000000000000);
  v1::RunStatus status;
  convert::ForecastToProto(f, 5, status);
  EXPECT_FALSE(status.failure_budget().has_exhausted_at());
  EXPECT_FALSE(status.forecast().has_finish_p50());
  EXPECT_TRUE(status.forecast().has_plan_finish());
}

TEST(Forecaster, ExhaustionProbabilityGrowsWithTheBurn) {
  RunState calm = Running(1000, 36000);
  RunState burning = Running(1000, 36000);
  ASSERT_TRUE(ApplyEvent(burning, Crash(36000)).ok());
  const Forecast a = ComputeForecast(calm, Prior(), At(36000));
  const Forecast b = ComputeForecast(burning, Prior(), At(36000 + 9800));  // 9,800 s down
  EXPECT_LT(a.exhaustion_probability, 0.2);
  EXPECT_GT(b.exhaustion_probability, 0.9);
  EXPECT_GT(b.projected_at_finish_seconds, 9800);
}

TEST(Forecaster, DeterministicForAHistory) {
  const RunState s = Running(900, 20000);
  const Forecast a = ComputeForecast(s, Prior(), At(20000));
  const Forecast b = ComputeForecast(s, Prior(), At(20000));
  EXPECT_EQ(a.finish_p10, b.finish_p10);
  EXPECT_EQ(a.finish_p50, b.finish_p50);
  EXPECT_EQ(a.finish_p90, b.finish_p90);
  EXPECT_EQ(a.exhaustion_probability, b.exhaustion_probability);
}

TEST(Forecaster, FinishedRunFinishedWhenItDid) {
  RunState s = Running(1000, 600);
  ASSERT_TRUE(ApplyEvent(s, E(EventKind::kRunFinished, 700)).ok());
  const Forecast f = ComputeForecast(s, Prior(), At(5000));
  EXPECT_EQ(f.finish_p10, At(700));
  EXPECT_EQ(f.finish_p90, At(700));
  EXPECT_EQ(f.exhaustion_probability, 0);  // nothing unplanned happened
  // A crash with 100 s down overspends a 30 s budget; the finish is after the deadline.
  RunState crashed = Running(1000, 600);
  ASSERT_TRUE(ApplyEvent(crashed, Crash(600)).ok());
  ASSERT_TRUE(ApplyEvent(crashed, Started(700, 2, 10)).ok());
  ASSERT_TRUE(ApplyEvent(crashed, Steps(760, 11, 660000)).ok());
  ASSERT_TRUE(ApplyEvent(crashed, E(EventKind::kRunFinished, 800)).ok());
  ForecastPrior tight = Prior();
  tight.budget_seconds = 30;
  tight.deadline = At(600);
  const Forecast late = ComputeForecast(crashed, tight, At(5000));
  EXPECT_EQ(late.exhaustion_probability, 1);
  EXPECT_EQ(late.deadline_probability, 0);
}

TEST(Forecaster, NaiveEstimates) {
  const RunState s = Running(1000, 7200);
  const Forecast f = ForecastNow(s, Prior(), At(7200));
  const double remaining = 1e8 - 1000.0 * 7200;
  // Lifetime: tokens per wall second since the first event.
  EXPECT_NEAR(absl::ToDoubleSeconds(f.naive_lifetime_finish - At(7200)), remaining / 1000.0, 1);
  // Last hour: 3,600 s x 1,000 tokens/s.
  EXPECT_NEAR(absl::ToDoubleSeconds(f.naive_recent_finish - At(7200)), remaining / 1000.0, 1);
}

// --- The evidence models on simulated runs of the flagship plan (simulator.h scenarios) ---

using ::flightplan::testing::FlagshipPlan;
using ::flightplan::testing::FoldTo;

Simulation SimulateAt(const RunState& s, EvidenceModel model = EvidenceModel::kChangepoint) {
  ForecastOptions o;
  o.model = model;
  o.draws = 500;  // the regime fields do not depend on the draws
  return Simulate(s, FlagshipPlan().prior, s.last_time, o);
}

double PlanOverheadRatio() {
  return FlagshipPlan().prior.plan_availability_seconds / FlagshipPlan().prior.plan_active_seconds;
}

TEST(Regimes, AsPlannedSeesNoChangeAndNoTrend) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    const RunState s = FoldTo("as-planned", 0.5, seed);
    const Simulation sim = SimulateAt(s);
    EXPECT_LT(sim.change_probability_failures, 0.5);
    EXPECT_LT(sim.trend_weight, 0.5);
    // Reality is the plan: about a hundred failures so far put the MTBF ahead within
    // +-50% of the plan's.
    EXPECT_GT(sim.mtbf_seconds, FlagshipPlan().prior.job_mtbf_seconds / 1.5);
    EXPECT_LT(sim.mtbf_seconds, FlagshipPlan().prior.job_mtbf_seconds * 1.5);
  }
}

TEST(Regimes, AChaoticStartIsLeftBehindOnceItSettles) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    // At 50%: 4x the plan's failures until 30%, half of them since.
    const RunState s = FoldTo("chaotic-start", 0.5, seed);
    const Simulation sim = SimulateAt(s);
    EXPECT_GT(sim.change_probability_failures, 0.5);
    const RunSnapshot snap = Snapshot(s, s.last_time);
    ASSERT_GT(s.incidents, 0u);
    // The calmer recent regime wins: more running time per incident ahead than the run
    // has shown overall, raw or with the plan as a prior (the lifetime posterior) ...
    const double lifetime_observed = snap.running_seconds / s.incidents;
    const double lifetime_posterior = ForecastNow(s, FlagshipPlan().prior, s.last_time).posterior_mtbf_seconds;
    EXPECT_GT(sim.mtbf_seconds, lifetime_observed);
    EXPECT_GT(sim.mtbf_seconds, lifetime_posterior);
    // ... and than the plan's, as reality since 30% is half the plan's failures.
    EXPECT_GT(sim.mtbf_seconds, FlagshipPlan().prior.job_mtbf_seconds);
  }
}

TEST(Regimes, ADegradingThroughputIsReadAsATrend) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    // 2% less throughput per tenth: six steps down by 60%.
    const Simulation sim = SimulateAt(FoldTo("degrading", 0.6, seed));
    EXPECT_GT(sim.trend_weight, 0.5);
  }
}

TEST(Regimes, HeavyMaintenanceIsLearnedExceptByTheLifetimeModel) {
  const double plan_ratio = PlanOverheadRatio();
  ASSERT_GT(plan_ratio, 0);
  const Scenario* sc = FindScenario("heavy-maintenance");
  ASSERT_NE(sc, nullptr);
  // 8 h down every 7 days of wall time is at least 8 h per 7 days of compute.
  const double calendar_floor = sc->options.maintenance_hours * 3600 / (sc->options.maintenance_every_days * 86400);
  ASSERT_GT(calendar_floor, plan_ratio);
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    const RunState heavy = FoldTo("heavy-maintenance", 0.6, seed);
    const Simulation sim = SimulateAt(heavy);
    EXPECT_GT(sim.overhead_ratio, plan_ratio);
    // The plan is a prior worth at most a quarter of the run's compute, against 60% of it
    // observed: the estimate is past halfway from the plan's ratio to the calendar's.
    EXPECT_GT(sim.overhead_ratio, 0.5 * (plan_ratio + calendar_floor));
    // And heavier than what the same seed learns with the plan's own windows.
    EXPECT_GT(sim.overhead_ratio, SimulateAt(FoldTo("as-planned", 0.6, seed)).overhead_ratio);
    // The lifetime baseline takes the plan's allotment, whatever the evidence.
    EXPECT_DOUBLE_EQ(SimulateAt(heavy, EvidenceModel::kLifetime).overhead_ratio, plan_ratio);
  }
}

TEST(Regimes, TheLifetimeModelSeesNoChangeNoTrend) {
  // Runs where the default model does see them, so the zeros are the model's choice.
  const RunState chaotic = FoldTo("chaotic-start", 0.5);
  const RunState degrading = FoldTo("degrading", 0.6);
  ASSERT_GT(SimulateAt(chaotic).change_probability_failures, 0.5);
  ASSERT_GT(SimulateAt(degrading).trend_weight, 0.5);
  for (const RunState* s : {&chaotic, &degrading}) {
    const Simulation sim = SimulateAt(*s, EvidenceModel::kLifetime);
    EXPECT_EQ(sim.change_probability_failures, 0);
    EXPECT_EQ(sim.change_probability_losses, 0);
    EXPECT_EQ(sim.trend_weight, 0);
    // The whole history with the plan as a prior: the lifetime posterior MTBF.
    const double posterior = ForecastNow(*s, FlagshipPlan().prior, s->last_time).posterior_mtbf_seconds;
    EXPECT_NEAR(sim.mtbf_seconds, posterior, 1e-9 * posterior);
  }
}

TEST(Regimes, TheSameStateGivesTheSameSimulation) {
  const RunState s = FoldTo("bursty", 0.5);
  const RunState copy = s;
  const Simulation a = Simulate(s, FlagshipPlan().prior, s.last_time);
  const Simulation b = Simulate(copy, FlagshipPlan().prior, s.last_time);
  EXPECT_EQ(a.as_of, b.as_of);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.forecast_tokens_per_second, b.forecast_tokens_per_second);
  EXPECT_EQ(a.throughput_shifted, b.throughput_shifted);
  EXPECT_EQ(a.finish_p10_seconds, b.finish_p10_seconds);
  EXPECT_EQ(a.finish_p50_seconds, b.finish_p50_seconds);
  EXPECT_EQ(a.finish_p90_seconds, b.finish_p90_seconds);
  EXPECT_EQ(a.future_loss_p50_seconds, b.future_loss_p50_seconds);
  EXPECT_EQ(a.exhaustion_probability, b.exhaustion_probability);
  EXPECT_EQ(a.deadline_probability, b.deadline_probability);
  EXPECT_EQ(a.change_probability_failures, b.change_probability_failures);
  EXPECT_EQ(a.change_probability_losses, b.change_probability_losses);
  EXPECT_EQ(a.mtbf_seconds, b.mtbf_seconds);
  EXPECT_EQ(a.loss_per_incident_seconds, b.loss_per_incident_seconds);
  EXPECT_EQ(a.overhead_ratio, b.overhead_ratio);
  EXPECT_EQ(a.trend_weight, b.trend_weight);
  // The draws are random: a spread, not one number.
  EXPECT_LT(a.finish_p10_seconds, a.finish_p90_seconds);
}

// Under the wall clock a run's forecast is refreshed with no new event: the finish moves
// by what the passing minute changed (a minute more of the open interval, counted as work
// that has not reported its tokens yet: here about 3 minutes), not by Monte Carlo noise
// (seeded by the clock and drawn from one stream, the same refresh moved it by 35 minutes).
TEST(Regimes, ARefreshWithNothingNewMovesTheFinishOnlyByTheTimeThatPassed) {
  const RunState s = FoldTo("as-planned", 0.5);
  const absl::Time t = s.last_time + absl::Seconds(30);
  const Simulation a = Simulate(s, FlagshipPlan().prior, t);
  const Simulation b = Simulate(s, FlagshipPlan().prior, t + absl::Minutes(1));
  const double moved = absl::ToDoubleSeconds((b.as_of + absl::Seconds(b.finish_p50_seconds)) -
                                             (a.as_of + absl::Seconds(a.finish_p50_seconds)));
  EXPECT_GE(moved, 0) << "a minute without progress cannot bring the finish earlier";
  EXPECT_LT(moved, 600);
}

// Progress the plan makes implausible is accepted but flagged, naming the numbers
// (issue 12): beyond the target, faster than the fleet at 100% MFU, finished far short.
// How likely an excess is a crisis to be fixed, from its ratio to the plan alone.
TEST(Futures, CrisisProbabilityRisesWithTheExcess) {
  EXPECT_NEAR(CrisisProbability(1), 0.225, 0.01);
  EXPECT_NEAR(CrisisProbability(2), 0.446, 0.01);
  EXPECT_NEAR(CrisisProbability(5), 0.893, 0.01);
  EXPECT_GT(CrisisProbability(10), 0.98);
  double last = 0;
  for (double r = 0.5; r < 30; r *= 1.2) {
    EXPECT_GE(CrisisProbability(r), last) << r;
    last = CrisisProbability(r);
  }
}

// A crisis cut at its worst moment (failures rising to 10x the plan's until 30%): both
// futures are shown, days apart, each weighted, and the band spans them.
TEST(Futures, ACrisisAtItsWorstShowsBothFuturesAndTheBandSpansThem) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    const RunState s = FoldTo("crisis-then-settle", 0.28, seed);
    ForecastOptions o;
    o.draws = 1000;
    const Simulation sim = Simulate(s, FlagshipPlan().prior, s.last_time, o);
    ASSERT_EQ(sim.futures.size(), 2u) << "excess " << sim.excess_ratio;
    const Future& recent = sim.futures[0];
    const Future& plan = sim.futures[1];
    EXPECT_EQ(recent.name, "recent");
    EXPECT_EQ(plan.name, "plan");
    EXPECT_GT(sim.excess_ratio, 3);
    EXPECT_GT(recent.finish_p50_seconds, plan.finish_p50_seconds + 86400);
    EXPECT_GT(recent.budget_at_finish_seconds, plan.budget_at_finish_seconds);
    EXPECT_NEAR(recent.weight + plan.weight, 1, 1e-12);
    EXPECT_GT(plan.weight, 0.2);
    EXPECT_GT(recent.weight, 0.2);
    EXPECT_FALSE(plan.reason.empty());
    // The band from the plan's future to the recent one's.
    EXPECT_LE(sim.finish_p10_seconds,
              plan.finish_p50_seconds + 0.25 * (recent.finish_p50_seconds - plan.finish_p50_seconds));
    EXPECT_GE(sim.finish_p90_seconds,
              plan.finish_p50_seconds + 0.75 * (recent.finish_p50_seconds - plan.finish_p50_seconds));
    // The forecast carries them, dated.
    const Forecast f = Combine(ForecastNow(s, FlagshipPlan().prior, s.last_time), sim);
    ASSERT_EQ(f.futures.size(), 2u);
    EXPECT_EQ(f.futures[1].finish_p50, sim.as_of + absl::Seconds(plan.finish_p50_seconds));
    ASSERT_EQ(f.finish_quantiles.size(), static_cast<size_t>(kFinishQuantiles));
    EXPECT_TRUE(std::is_sorted(f.finish_quantiles.begin(), f.finish_quantiles.end()));
  }
}

// Failures near the plan's: one future, the forecast.
TEST(Futures, ARunNearItsPlanHasOneFuture) {
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE(seed);
    const Simulation sim = SimulateAt(FoldTo("as-planned", 0.5, seed));
    EXPECT_TRUE(sim.futures.empty()) << "excess " << sim.excess_ratio;
    EXPECT_LT(sim.excess_ratio, 2);
    // A chaotic start that has settled: the recent regime is calm, one future.
    const Simulation settled = SimulateAt(FoldTo("chaotic-start", 0.6, seed));
    EXPECT_TRUE(settled.futures.empty()) << "excess " << settled.excess_ratio;
  }
}

// The proper scores of one cut, by hand: 100 h actually left.
TEST(Scores, IntervalScoreAndCrpsAsSharesOfTheTimeLeft) {
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  const absl::Time actual = t0 + absl::Hours(100);
  Forecast f;
  f.as_of = t0;
  // Quantiles 90, 91, ..., 109 h: the actual, 100 h, falls between the 10th and 11th.
  for (int i = 0; i < kFinishQuantiles; ++i) f.finish_quantiles.push_back(t0 + absl::Hours(90 + i));
  BacktestPoint p;
  p.p10 = t0 + absl::Hours(95);
  p.p50 = t0 + absl::Hours(100);
  p.p90 = t0 + absl::Hours(105);
  p.naive_lifetime_error_seconds = 20 * 3600;
  ScorePoint(p, f, actual);
  EXPECT_DOUBLE_EQ(p.remaining_seconds, 100 * 3600);
  // Inside: the width alone, 10 h of 100.
  EXPECT_NEAR(p.interval_score, 0.10, 1e-12);
  EXPECT_NEAR(p.width_share, 0.10, 1e-12);
  // CRPS: twice the mean pinball loss, sum over i of 2 (y - q_i)(tau_i - [y < q_i]) / 20.
  double crps = 0;
  for (int i = 0; i < kFinishQuantiles; ++i) {
    const double q = 90 + i, tau = (i + 0.5) / 20;
    crps += 2 * (100 - q) * (tau - (100 < q ? 1 : 0)) / 20;
  }
  EXPECT_NEAR(p.crps, crps / 100, 1e-12);
  // Near the uniform distribution's, width / 12 at its centre: 1.67 h of 100.
  EXPECT_NEAR(p.crps, 20.0 / 12 / 100, 2e-4);
  EXPECT_NEAR(p.naive_crps, 0.20, 1e-12);
  // Outside, 5 h past P90: the width plus 10 x the miss.
  BacktestPoint late = p;
  ScorePoint(late, f, t0 + absl::Hours(110));
  EXPECT_NEAR(late.interval_score, (10 + 10 * 5) / 110.0, 1e-12);
  // A sharper band that still holds the truth scores better; a miss scores worse than a
  // band that held it.
  BacktestPoint sharp = p;
  sharp.p10 = t0 + absl::Hours(98);
  sharp.p90 = t0 + absl::Hours(102);
  ScorePoint(sharp, f, actual);
  EXPECT_LT(sharp.interval_score, p.interval_score);
  EXPECT_GT(late.interval_score, p.interval_score);
  const BacktestSummary sum = Summarize({Backtest{actual, {p, late}}});
  EXPECT_NEAR(sum.mean_interval_score, (p.interval_score + late.interval_score) / 2, 1e-12);
  EXPECT_NEAR(sum.mean_naive_interval_score, 10 * sum.mean_naive_crps, 1e-12);
}

TEST(Plausibility, FlagsProgressThePlanMakesImplausible) {
  const ForecastPrior& prior = FlagshipPlan().prior;
  ASSERT_GT(prior.peak_tokens_per_second, prior.plan_tokens_per_second);  // MFU < 1
  RunSnapshot snap;
  snap.phase = Phase::kRunning;
  snap.seconds.productive = 3600;
  snap.tokens = prior.target_tokens / 2;
  snap.tokens_per_second = prior.plan_tokens_per_second;
  EXPECT_TRUE(PlausibilityFlags(snap, prior).empty());

  snap.tokens = prior.target_tokens * 2;
  std::vector<std::string> flags = PlausibilityFlags(snap, prior);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("200% of the target"), std::string::npos) << flags[0];

  snap.tokens = prior.target_tokens / 2;
  snap.tokens_per_second = 1.1 * prior.peak_tokens_per_second;
  flags = PlausibilityFlags(snap, prior);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("100% MFU"), std::string::npos) << flags[0];
  snap.seconds.productive = 60;  // too little work to judge a rate
  EXPECT_TRUE(PlausibilityFlags(snap, prior).empty());

  snap.phase = Phase::kFinished;
  snap.tokens_per_second = prior.plan_tokens_per_second;
  snap.tokens = prior.target_tokens / 1000;
  flags = PlausibilityFlags(snap, prior);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("run_finished at 0.10% of the target"), std::string::npos) << flags[0];
  snap.tokens = prior.target_tokens;  // finished on target: nothing to say
  EXPECT_TRUE(PlausibilityFlags(snap, prior).empty());
}

}  // namespace
}  // namespace flightplan::forecast
