// The categories carried ahead (docs/contract.md §3 and §6): the plan's allotment of deliberate
// work (schedule.custom_fraction) in the planner's schedule, the failures and the cost; the
// forecast's custom work ahead, from the plan and then from the run's spans; and a run on fewer
// GPUs than the plan's, back to full size when its nodes are back from repair.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"

namespace flightplan::forecast {
namespace {

const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

// The flagship plan, with `extra` YAML appended at the top level.
planner::PlanSpec Flagship(const std::string& extra = "") {
  absl::StatusOr<v1::Plan> p = cli::LoadPlanFile(kFlagship);
  EXPECT_TRUE(p.ok()) << p.status();
  if (extra.empty() || !p.ok()) return p.ok() ? convert::PlanFromProto(*p) : planner::PlanSpec{};
  std::ifstream in(kFlagship);
  std::stringstream text;
  text << in.rdbuf() << "\n" << extra << "\n";
  absl::StatusOr<v1::Plan> q = cli::ParsePlan(text.str(), kFlagship);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? convert::PlanFromProto(*q) : planner::PlanSpec{};
}

TEST(PlannedCustomWork, IsItsShareOfTheWorkingTimeInTheScheduleTheFailuresAndTheCost) {
  const planner::PlanReport base = planner::ComputePlan(Flagship());
  // An evaluation of 10 minutes every 4 hours of work: 600 / 14,400 of it.
  const planner::PlanReport r = planner::ComputePlan(Flagship("schedule:\n  custom_fraction: 0.041666666666666664"));
  ASSERT_FALSE(r.HasError());
  EXPECT_EQ(base.schedule.custom_seconds, 0);
  const double active = r.schedule.active_compute_seconds;
  EXPECT_DOUBLE_EQ(active, base.schedule.active_compute_seconds);
  EXPECT_NEAR(r.schedule.custom_seconds / (active + r.schedule.custom_seconds), 600.0 / 14400, 1e-12);
  // Failures strike during it too: the interruptions grow with the running time.
  const double running = active + r.schedule.checkpoint_seconds;
  EXPECT_NEAR(r.failures.expected_interruptions / base.failures.expected_interruptions,
              (running + r.schedule.custom_seconds) / running, 1e-9);
  EXPECT_GE(r.failures.budget_seconds, base.failures.budget_seconds);
  // The schedule holds it, and still adds up.
  const auto& s = r.schedule;
  EXPECT_NEAR(s.active_compute_seconds + s.checkpoint_seconds + s.custom_seconds + s.failure_budget_seconds +
                  s.availability_seconds + s.contingency_seconds,
              s.total_seconds, 1e-6 * s.total_seconds);
  EXPECT_GT(s.expected_seconds - base.schedule.expected_seconds, s.custom_seconds);
  // Its line of the cost, at the training draw, in the total.
  EXPECT_DOUBLE_EQ(r.cost.custom.seconds, s.custom_seconds);
  EXPECT_NEAR(r.cost.custom.energy_mwh / r.cost.active_compute.energy_mwh, s.custom_seconds / active, 1e-9);
  EXPECT_NEAR(r.cost.total.seconds, s.total_seconds, 1e-6 * s.total_seconds);
}

TEST(PlannedCustomWork, AFractionOutsideZeroToOneIsAnErrorNamingTheField) {
  for (const char* bad : {"1", "-0.1", "1.5"}) {
    const planner::PlanReport r = planner::ComputePlan(Flagship(std::string("schedule:\n  custom_fraction: ") + bad));
    const planner::Finding* f = r.Find("INVALID_VALUE");
    ASSERT_NE(f, nullptr) << bad;
    EXPECT_NE(f->message.find(std::string("schedule.custom_fraction ") + bad), std::string::npos) << f->message;
    EXPECT_TRUE(r.InputInvalid());
  }
}

const absl::Time kT0 = absl::FromUnixSeconds(1799020800);  // 2027-01-04T00:00:00Z
absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

Event Started(double t, uint32_t attempt, int64_t restored = 0, uint32_t gpus = 0) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kJobStarted;
  e.attempt = attempt;
  e.restored_step = restored;
  e.gpus = gpus;
  return e;
}
Event Steps(double t, int64_t step, int64_t tokens) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kSteps;
  e.step = step;
  e.tokens = tokens;
  return e;
}
Event Span(double t, bool start) {
  Event e;
  e.time = At(t);
  e.kind = start ? EventKind::kSpanStarted : EventKind::kSpanEnded;
  e.span = "eval";
  e.expected_seconds = start ? 600 : 0;
  return e;
}

// 1,000 tokens per second on 128 GPUs (16 nodes of 8, 2 spares); 1e9 tokens, about 11.6 days
// of compute; failures rare enough not to matter here.
ForecastPrior Prior(double custom_fraction) {
  ForecastPrior p;
  p.target_tokens = 1'000'000'000;
  p.plan_start = kT0;
  p.plan_tokens_per_second = 1000;
  p.plan_active_seconds = 1e6;
  p.plan_custom_seconds = p.plan_active_seconds * custom_fraction / (1 - custom_fraction);
  p.plan_total_seconds = p.plan_active_seconds + p.plan_custom_seconds;
  p.plan_finish = At(p.plan_total_seconds);
  p.plan_expected_finish = p.plan_finish;
  p.job_mtbf_seconds = 1e9;
  p.loss_per_interruption_seconds = 60;
  p.budget_seconds = 3600;
  p.plan_gpus = 128;
  p.gpus_per_node = 8;
  p.spare_nodes = 2;
  p.node_repair_seconds = 48 * 3600.0;
  return p;
}

// `days` of training at the plan's 1,000 tokens per second, a step every 60 s, with an
// evaluation of `eval_seconds` every 4 hours (none when 0).
RunState Train(double days, double eval_seconds) {
  RunState s;
  EXPECT_TRUE(ApplyEvent(s, Started(0, 1)).ok());
  EXPECT_TRUE(ApplyEvent(s, Steps(60, 0, 0)).ok());
  double t = 60;
  int64_t step = 0;
  while (t < days * 86400) {
    for (int i = 0; i < 240; ++i) {  // 4 hours of steps
      t += 60;
      ++step;
      EXPECT_TRUE(ApplyEvent(s, Steps(t, step, step * 60'000)).ok());
    }
    if (eval_seconds > 0) {
      EXPECT_TRUE(ApplyEvent(s, Span(t, true)).ok());
      t += eval_seconds;
      EXPECT_TRUE(ApplyEvent(s, Span(t, false)).ok());
    }
  }
  return s;
}

TEST(CustomWorkAhead, StartsFromThePlansAllotmentThenFollowsTheRunsOwnSpans) {
  // Before any work: the plan's share ahead, and the finish that much later.
  const double planned = 0.04;
  ForecastOptions o;
  o.draws = 400;
  const RunState none;
  const Simulation before = Simulate(none, Prior(planned), kT0, o);
  EXPECT_NEAR(before.custom_ratio, planned / (1 - planned), 1e-12);
  const Simulation without = Simulate(none, Prior(0), kT0, o);
  EXPECT_EQ(without.custom_ratio, 0);
  EXPECT_NEAR(before.finish_p50_seconds / without.finish_p50_seconds, 1 + planned / (1 - planned), 0.01);

  // Five days with a 10-minute evaluation every 4 hours (600 / 14,400 of the compute): the
  // run's own share outweighs the plan's day of prior.
  const double observed = 600.0 / 14400;
  const RunState evals = Train(5, 600);
  const Simulation after = Simulate(evals, Prior(planned), evals.last_time, o);
  const double expected = (planned / (1 - planned) * 86400 + observed * 5 * 86400) / (86400 + 5 * 86400);
  EXPECT_NEAR(after.custom_ratio, expected, 0.002);
  EXPECT_LT(std::fabs(after.custom_ratio - observed), std::fabs(after.custom_ratio - planned / (1 - planned)));
  // A plan that allots none still carries the run's evaluations ahead.
  const Simulation unplanned = Simulate(evals, Prior(0), evals.last_time, o);
  EXPECT_NEAR(unplanned.custom_ratio, observed * 5 / 6, 0.002);
  const Simulation no_evals = Simulate(Train(5, 0), Prior(0), evals.last_time, o);
  EXPECT_EQ(no_evals.custom_ratio, 0);
}

TEST(FullSizeAhead, ARunOnFewerGpusIsBackWhenItsNodesAreBackFromRepair) {
  // Five days on all 128 GPUs, then a relaunch on 112 (two nodes short, both spares in use).
  RunState s = Train(5, 0);
  const double t = absl::ToDoubleSeconds(s.last_time - kT0);
  FoldSettings settings;
  settings.plan_gpus = 128;
  settings.gpus_per_node = 8;
  s.settings = settings;
  ASSERT_TRUE(ApplyEvent(s, Started(t + 600, 2, s.step, 112)).ok());
  int64_t step = s.step;
  for (int i = 1; i <= 60; ++i) {
    ++step;
    ASSERT_TRUE(ApplyEvent(s, Steps(t + 600 + i * 60 * 8.0 / 7, step, step * 60'000)).ok());
  }
  ForecastOptions o;
  o.draws = 4000;
  const ForecastPrior prior = Prior(0);
  const Simulation sim = Simulate(s, prior, s.last_time, o);
  ASSERT_TRUE(sim.full_size.has_value());
  EXPECT_EQ(sim.full_size->gpus, 112u);
  EXPECT_EQ(sim.full_size->missing_nodes, 2u);
  // Two of the four nodes out back: the first of four, then the first of three. Median of
  // Exp(4/m) + Exp(3/m), m = 48 h: P(T <= t) = 1 - (b e^-at - a e^-bt) / (b - a) = 1/2 at
  // 23.4 h, solved numerically (mean 28 h).
  EXPECT_NEAR(sim.full_size->p50_seconds / 3600, 23.4, 1.0);
  EXPECT_NE(sim.full_size->reason.find("112 of the plan's 128 GPUs"), std::string::npos) << sim.full_size->reason;
  EXPECT_NE(sim.full_size->reason.find("spare_repair_hours"), std::string::npos);
  // The finish is later than at full size by about an eighth of the time to full size.
  RunState full = s;
  full.gpus = 0;
  const Simulation at_full = Simulate(full, prior, s.last_time, o);
  EXPECT_FALSE(at_full.full_size.has_value());
  const double later = sim.finish_p50_seconds - at_full.finish_p50_seconds;
  EXPECT_GT(later, 0.125 * 0.5 * sim.full_size->p50_seconds);
  EXPECT_LT(later, 0.125 * 3 * sim.full_size->p50_seconds);
  // Slower repairs: later still.
  ForecastPrior slow = prior;
  slow.node_repair_seconds *= 4;
  EXPECT_GT(Simulate(s, slow, s.last_time, o).finish_p50_seconds, sim.finish_p50_seconds + later);
  // Both spares and the missing nodes are counted: with no spares, both missing nodes must
  // come back (the later of two), which takes longer.
  ForecastPrior no_spares = prior;
  no_spares.spare_nodes = 0;
  EXPECT_GT(Simulate(s, no_spares, s.last_time, o).full_size->p50_seconds, sim.full_size->p50_seconds);
}

}  // namespace
}  // namespace flightplan::forecast
