// One model (issue 38): the planner's deadline search and the what-if give one answer
// whichever way a plan's efficiency figure is typed. An end-to-end MFU belongs to the
// layout it was measured on (the bubble is in it): every other fleet keeps the efficiency
// while the pipeline is busy and pays its own bubble. So `mfu: 0.42` and the `busy_mfu` it
// implies give the same fleet, throughput, finish and cost on any fleet.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/simulator.h"
#include "forecast/whatif.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"

namespace flightplan {
namespace {

using planner::PlanReport;
using planner::PlanSpec;

PlanSpec Example(const std::string& file) {
  absl::StatusOr<v1::Plan> proto = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/" + file);
  EXPECT_TRUE(proto.ok()) << file << ": " << proto.status();
  return proto.ok() ? convert::PlanFromProto(*proto) : PlanSpec{};
}

// The 34B run of the trial that found the disagreement: 2,048 H100s as tp 8 x pp 4 x dp 64,
// 1F1B with 16 micro-batches per step (a bubble of 3/19 = 15.8%), 42% MFU end to end. The
// shape is Code Llama 34B's (Roziere et al. 2023, "Code Llama", table of model sizes: 48
// layers, hidden 8,192, 64 heads, 8 KV heads).
PlanSpec Dense34B() {
  PlanSpec p = Example("dense-70b-10t.yaml");
  p.name = "dense-34b";
  p.model.params = 34e9;
  p.model.active_params = 34e9;
  p.model.layers = 48;
  p.model.seq_len = 4096;
  p.data.tokens = 3'000'000'000'000;
  p.data.dataset_tokens.reset();
  p.deadline.reset();
  p.fleet.gpus = 2048;
  p.fleet.spare_nodes = 12;
  p.layout.dp = 64;
  p.layout.pipeline_schedule = "1f1b";
  p.layout.virtual_stages.reset();
  p.layout.grad_accum = 16;
  p.efficiency.busy_mfu.reset();
  p.efficiency.mfu = 0.42;
  return p;
}

struct Forms {
  std::string name;
  PlanSpec end_to_end, busy;  // efficiency.mfu, and the busy_mfu it implies on the plan's layout
};

// The bubble of the plan's own top-level layout: what an end-to-end figure was measured
// with (for a phased plan, its phases aside, as the planner holds it).
double TopBubble(const PlanSpec& p) {
  PlanSpec top = p;
  top.phases.clear();
  return planner::ComputePlan(top).compute.bubble_fraction;
}

// Each plan in both forms of its own figure (model or hardware FLOPs): end to end, and while
// busy, one derived from the other by the bubble of the plan's layout.
std::vector<Forms> EveryPlanInBothForms() {
  std::vector<Forms> out;
  std::vector<PlanSpec> plans = {Dense34B()};
  for (const char* f : {"dense-70b-10t.yaml", "moe-400b-a50b-15t.yaml", "bloom-176b.yaml"}) plans.push_back(Example(f));
  for (const PlanSpec& p : plans) {
    EXPECT_FALSE(planner::ComputePlan(p).HasError()) << p.name;
    const auto& e = p.efficiency;
    const bool hardware = e.hfu || e.busy_hfu;
    const double bubble = TopBubble(p);
    const double busy = hardware ? (e.busy_hfu ? *e.busy_hfu : *e.hfu / (1 - bubble))
                                 : (e.busy_mfu ? *e.busy_mfu : e.mfu / (1 - bubble));
    Forms f{p.name, p, p};
    for (PlanSpec* s : {&f.end_to_end, &f.busy}) {
      s->efficiency.mfu = 0;
      s->efficiency.hfu.reset();
      s->efficiency.busy_mfu.reset();
      s->efficiency.busy_hfu.reset();
    }
    if (hardware) {
      f.end_to_end.efficiency.hfu = busy * (1 - bubble);
      f.busy.efficiency.busy_hfu = busy;
    } else {
      f.end_to_end.efficiency.mfu = busy * (1 - bubble);
      f.busy.efficiency.busy_mfu = busy;
    }
    // Both forms state the same plan.
    const PlanReport a = planner::ComputePlan(f.end_to_end), b = planner::ComputePlan(f.busy);
    EXPECT_NEAR(a.compute.tokens_per_second / b.compute.tokens_per_second, 1, 1e-9) << p.name;
    out.push_back(std::move(f));
  }
  return out;
}

double Seconds(absl::Time a, absl::Time b) { return absl::ToDoubleSeconds(a - b); }

TEST(OneModel, BothFormsOfTheFigureFindOneDeadlineFleet) {
  int searched = 0;
  for (const Forms& f : EveryPlanInBothForms()) {
    SCOPED_TRACE(f.name);
    // A deadline that needs about twice the plan's fleet: grad_accum halves, the bubble grows.
    const PlanReport r = planner::ComputePlan(f.busy);
    const absl::Time deadline = r.schedule.start_time + absl::Seconds(r.schedule.total_seconds / 1.8);
    const planner::DeadlineFleet a = planner::FindFleetForDeadline(f.end_to_end, deadline);
    const planner::DeadlineFleet b = planner::FindFleetForDeadline(f.busy, deadline);
    EXPECT_EQ(a.met, b.met) << a.explanation << "\n" << b.explanation;
    EXPECT_EQ(a.gpus, b.gpus) << a.explanation << "\n" << b.explanation;
    if (!a.met || !b.met) {
      // A phased plan is not searched; the MoE plan's batch holds no larger fleet (8
      // micro-batches on 8 interleaved stages is Megatron-LM's least): one sentence for both.
      EXPECT_EQ(a.explanation, b.explanation);
      continue;
    }
    ++searched;
    EXPECT_GT(a.gpus, f.busy.fleet.gpus);
    EXPECT_NEAR(a.schedule.total_seconds / b.schedule.total_seconds, 1, 0.005);
    // The efficiency assumed is said, and it is the plan's while busy less the fleet's own bubble.
    EXPECT_NEAR(a.mfu / b.mfu, 1, 0.005);
    EXPECT_NEAR(a.busy_mfu, r.compute.busy_mfu, 1e-9);
    EXPECT_NEAR(a.mfu, a.busy_mfu * (1 - a.bubble_fraction), 1e-9);
    EXPECT_GT(a.bubble_fraction, r.compute.bubble_fraction);  // fewer micro-batches per replica
  }
  EXPECT_EQ(searched, 2);  // the 34B plan and the flagship
}

TEST(OneModel, The34BCaseGrowsItsBubbleAndSaysSo) {
  // The trial's figures: a 15.8% bubble on 2,048 GPUs, 27.3% on 4,096 (8 micro-batches).
  const PlanSpec p = Dense34B();
  const PlanReport r = planner::ComputePlan(p);
  EXPECT_NEAR(r.compute.bubble_fraction, 3.0 / 19, 1e-12);
  EXPECT_NEAR(r.compute.busy_mfu, 0.42 / (1 - 3.0 / 19), 1e-12);
  PlanSpec doubled = p;
  ASSERT_TRUE(planner::SetFleetHoldingBatch(doubled, 4096, r.batch.sequences_per_step));
  const PlanReport d = planner::ComputeVariant(doubled, planner::FigureBubble(p));
  EXPECT_NEAR(d.compute.bubble_fraction, 3.0 / 11, 1e-12);
  EXPECT_NEAR(d.compute.mfu, r.compute.busy_mfu * (1 - 3.0 / 11), 1e-12);
  // Not the 42% the plan measured on its own layout.
  EXPECT_LT(d.compute.mfu, 0.37);
  EXPECT_FALSE(planner::FigureBubble(Example("dense-70b-10t.yaml")).has_value());  // busy_mfu: nothing to hold
}

// The flagship run as planned, folded to a tenth of its target: evidence on the plan's layout.
forecast::RunState EarlyRun(const PlanSpec& plan) {
  forecast::SimulationOptions o = forecast::FindScenario("as-planned")->options;
  o.seed = 5;
  const PlanReport r = planner::ComputePlan(plan);
  forecast::RunState s;
  for (const forecast::Event& e : forecast::SimulateRun(plan, r, o)) {
    if (static_cast<double>(s.tokens) >= 0.1 * static_cast<double>(plan.data.tokens)) break;
    EXPECT_TRUE(forecast::ApplyEvent(s, e).ok());
  }
  return s;
}

TEST(OneModel, BothFormsOfTheFigureGiveOneWhatIf) {
  for (const Forms& f : EveryPlanInBothForms()) {
    if (!f.busy.phases.empty()) continue;  // a phased plan's fleet is changed in its phases
    SCOPED_TRACE(f.name);
    const forecast::RunState s = EarlyRun(f.busy);
    // Half the fleet (more micro-batches per replica: a smaller bubble) and twice it.
    forecast::Variant half, twice;
    half.gpus = f.busy.fleet.gpus / 2;
    twice.gpus = 2 * f.busy.fleet.gpus;
    const auto a = forecast::WhatIf(f.end_to_end, s, s.last_time, {half, twice});
    const auto b = forecast::WhatIf(f.busy, s, s.last_time, {half, twice});
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    int compared = 0;
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(a[i].broken, b[i].broken) << a[i].name;
      if (a[i].broken || b[i].broken) continue;  // the MoE plan's batch holds no larger fleet
      ++compared;
      EXPECT_EQ(a[i].gpus, b[i].gpus);
      EXPECT_NEAR(a[i].tokens_per_second / b[i].tokens_per_second, 1, 0.005) << a[i].name;
      EXPECT_NEAR(Seconds(a[i].finish_p50, s.last_time) / Seconds(b[i].finish_p50, s.last_time), 1, 0.005) << a[i].name;
      if (b[i].cost_p50_dollars > 0) {  // a plan without prices costs nothing either way
        EXPECT_NEAR(a[i].cost_p50_dollars / b[i].cost_p50_dollars, 1, 0.005) << a[i].name;
      } else {
        EXPECT_EQ(a[i].cost_p50_dollars, 0) << a[i].name;
      }
      EXPECT_NEAR(a[i].mfu / b[i].mfu, 1, 0.005) << a[i].name;
    }
    EXPECT_GE(compared, 1);
    if (!a[1].broken) {
      EXPECT_LT(a[1].bubble_fraction, a[0].bubble_fraction);
    }
    if (!a[2].broken) {
      EXPECT_GT(a[2].bubble_fraction, a[0].bubble_fraction);
    }
    // A typed MFU is the variant's own, end to end: it is not held to the plan's layout.
    forecast::Variant typed = half;
    typed.mfu = 0.3;
    const auto t = forecast::WhatIf(f.end_to_end, s, s.last_time, {typed});
    ASSERT_FALSE(t[1].broken) << t[1].errors.front();
    EXPECT_NEAR(t[1].mfu, 0.3, 1e-9);
  }
}

TEST(OneModel, ABatchChangeScalesAStatedGlobalBatch) {
  // layout.global_batch_tokens pinned the batch: with --allow-batch-change every fleet broke
  // BATCH_MISMATCH, so "no fleet" where the held batch finds one. The stated batch scales.
  PlanSpec p = Dense34B();
  const PlanReport r = planner::ComputePlan(p);
  p.layout.global_batch_tokens = r.batch.tokens_per_step;
  ASSERT_FALSE(planner::ComputePlan(p).HasError());
  const absl::Time deadline = r.schedule.start_time + absl::Seconds(r.schedule.total_seconds / 1.8);
  const planner::DeadlineFleet held = planner::FindFleetForDeadline(p, deadline);
  ASSERT_TRUE(held.met) << held.explanation;
  const planner::DeadlineFleet grown = planner::FindFleetForDeadline(p, deadline, 1u << 20, true);
  ASSERT_TRUE(grown.met) << grown.explanation;
  EXPECT_TRUE(grown.batch_changed);
  EXPECT_EQ(grown.tokens_per_step, r.batch.tokens_per_step / 64 * grown.dp);
  EXPECT_EQ(grown.explanation.find("BATCH_MISMATCH"), std::string::npos) << grown.explanation;
}

// The checkpoint what-if starts from what the run does: the plan says every 30 min, the run
// saves every 35 s. Each interval is compared with that cadence at the run's own save cost,
// so the interval the status recommends (Daly's, from the observed cost and MTBF) finishes
// first, 30 min is a change, and the run's own cadence is the baseline.
TEST(OneModel, TheCheckpointWhatIfStartsFromTheRunsCadence) {
  PlanSpec plan = Example("dense-70b-10t.yaml");
  plan.checkpoint.interval_seconds = 1800;
  PlanSpec as_run = plan;
  as_run.checkpoint.interval_seconds = 35;
  forecast::SimulationOptions o = forecast::FindScenario("failures-x2")->options;
  o.seed = 11;
  forecast::RunState s;
  for (const forecast::Event& e : forecast::SimulateRun(as_run, planner::ComputePlan(as_run), o)) {
    if (static_cast<double>(s.tokens) >= 0.3 * static_cast<double>(plan.data.tokens)) break;
    ASSERT_TRUE(forecast::ApplyEvent(s, e).ok());
  }
  ASSERT_GT(s.typical_checkpoint_gap, 30);  // 35 s of compute and the save's own blocking
  ASSERT_LT(s.typical_checkpoint_gap, 60);
  const forecast::ForecastPrior prior = forecast::PriorFromPlan(plan, planner::ComputePlan(plan));
  const double recommended = forecast::ForecastNow(s, prior, s.last_time).recommended_checkpoint_interval_seconds;
  ASSERT_GT(recommended, 120);
  ASSERT_LT(recommended, 780);
  // The run's own: its usual gap between saves less each save's blocking.
  const double own = std::max(s.typical_checkpoint_gap - s.checkpoint_blocking_sum / s.checkpoint_count,
                              0.5 * s.typical_checkpoint_gap);
  std::vector<forecast::Variant> variants(4);
  variants[0].checkpoint_interval_seconds = recommended;
  variants[1].checkpoint_interval_seconds = 780;   // 13 min
  variants[2].checkpoint_interval_seconds = 1800;  // the plan's
  variants[3].checkpoint_interval_seconds = own;
  const auto out = forecast::WhatIf(plan, s, s.last_time, variants);
  ASSERT_EQ(out.size(), 5u);
  for (const auto& v : out) ASSERT_FALSE(v.broken) << v.name << ": " << v.errors.front();
  auto hours = [&](const forecast::Outcome& v) { return Seconds(v.finish_p50, s.last_time) / 3600; };
  const double base = hours(out[0]), daly = hours(out[1]), thirteen = hours(out[2]), thirty = hours(out[3]);
  EXPECT_LT(daly, thirteen);
  EXPECT_LT(thirteen, thirty);
  EXPECT_LT(thirty, base);  // 30 min is not the baseline: the run saves every 35 s
  EXPECT_GT(base - thirty, 24);
  EXPECT_NEAR(hours(out[4]), base, 1e-6 * base);  // the run's cadence is the baseline
}

// The slip is measured against the plan's expected (P50) finish, so a run on plan reads
// about 0; the committed finish (contingency and the P90 failure budget) stays the
// deadline's. Before, a new run read "P50 earlier by" days.
TEST(OneModel, ARunOnPlanSlipsAboutNothing) {
  for (const Forms& f : EveryPlanInBothForms()) {
    SCOPED_TRACE(f.name);
    const PlanReport r = planner::ComputePlan(f.busy);
    ASSERT_GT(r.schedule.expected_seconds, r.schedule.active_compute_seconds);
    ASSERT_LT(r.schedule.expected_seconds, r.schedule.total_seconds);
    EXPECT_EQ(r.schedule.expected_finish_time, r.schedule.start_time + absl::Seconds(r.schedule.expected_seconds));
    const forecast::ForecastPrior prior = forecast::PriorFromPlan(f.busy, r);
    EXPECT_EQ(prior.plan_finish, r.schedule.finish_time);  // committed: the deadline's
    // No event yet: the forecast is the plan's own.
    const forecast::Forecast fresh = forecast::ComputeForecast(forecast::RunState{}, prior, r.schedule.start_time);
    EXPECT_LT(std::fabs(fresh.slip_seconds), 0.02 * r.schedule.total_seconds) << fresh.slip_seconds / 3600 << " h";
    if (!f.busy.phases.empty()) continue;
    // A fifth of the way through as planned.
    forecast::SimulationOptions o = forecast::FindScenario("as-planned")->options;
    o.seed = 7;
    forecast::RunState s;
    for (const forecast::Event& e : forecast::SimulateRun(f.busy, r, o)) {
      if (static_cast<double>(s.tokens) >= 0.2 * static_cast<double>(f.busy.data.tokens)) break;
      ASSERT_TRUE(forecast::ApplyEvent(s, e).ok());
    }
    const forecast::Forecast on_plan = forecast::ComputeForecast(s, prior, s.last_time);
    EXPECT_LT(std::fabs(on_plan.slip_seconds), 0.03 * r.schedule.total_seconds) << on_plan.slip_seconds / 3600 << " h";
  }
}

}  // namespace
}  // namespace flightplan
