// The flagship plan (deploy/examples/dense-70b-10t.yaml), loaded once per test binary:
// its spec, its report and the forecaster's prior, for tests that simulate runs of it; and
// a named scenario's run of it folded to a share of its target.
#ifndef FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_
#define FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"

namespace flightplan::testing {

struct Flagship {
  planner::PlanSpec plan;
  planner::PlanReport report;
  forecast::ForecastPrior prior;
};

// A failure to load is reported once, as a test failure; the plan is then empty.
inline const Flagship& FlagshipPlan() {
  static const Flagship* const flagship = [] {
    absl::StatusOr<v1::Plan> proto = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
    auto* out = new Flagship;
    if (!proto.ok()) {
      ADD_FAILURE() << proto.status();
      return out;
    }
    out->plan = convert::PlanFromProto(*proto);
    out->report = planner::ComputePlan(out->plan);
    out->prior = forecast::PriorFromPlan(out->plan, out->report);
    return out;
  }();
  return *flagship;
}

// A scenario's run of the flagship (simulator.h, seed `seed`) folded until its lineage
// holds `progress` of the target; a failure names the scenario.
inline forecast::RunState FoldTo(const char* scenario, double progress, uint64_t seed = 1) {
  const forecast::Scenario* sc = forecast::FindScenario(scenario);
  EXPECT_NE(sc, nullptr) << scenario;
  if (sc == nullptr) return {};
  forecast::SimulationOptions o = sc->options;
  o.seed = seed;
  const std::vector<forecast::Event> events = forecast::SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, o);
  const double target = static_cast<double>(FlagshipPlan().prior.target_tokens);
  forecast::RunState s;
  for (const forecast::Event& e : events) {
    if (static_cast<double>(s.tokens) >= progress * target) break;
    const absl::Status st = forecast::ApplyEvent(s, e);
    EXPECT_TRUE(st.ok()) << st;
  }
  EXPECT_NE(s.phase, forecast::Phase::kFinished) << scenario;
  EXPECT_GE(static_cast<double>(s.tokens), progress * target) << scenario;
  return s;
}

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_
