// The flagship plan (deploy/examples/dense-70b-10t.yaml), loaded once per test binary:
// its spec, its report and the forecaster's prior, for tests that simulate runs of it.
#ifndef FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_
#define FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_

#include <string>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/forecaster.h"
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

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_FLAGSHIP_PLAN_H_
