// The law for the end of a bad period (forecast/bad_period.h) inside the forecast
// (ForecastOptions::bad_period_law): a slowdown and a crisis of failures on a human's clock,
// moved towards "never" as they outlive the records' scales, moved by the plan's fix times,
// and said in words. bad_period_test.cc checks the law alone; the calibration suite's tables
// with and without it are in docs/forecasting.md (flightplan_calibrate --law).
#include <cstdio>
#include <string>
#include <vector>

#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "tests/flagship_plan.h"

namespace flightplan::forecast {
namespace {

using ::flightplan::testing::FlagshipPlan;
using ::flightplan::testing::FoldTo;

// A flagship run with a 10% slow stretch from day 10 that lasts 30 days (a rack that stays
// bad), folded until `hours_in` hours into it.
RunState FoldIntoALongStretch(double hours_in, uint64_t seed = 1) {
  const auto& f = FlagshipPlan();
  SimulationOptions o;
  o.seed = seed;
  o.step_time_noise = 0.03;
  o.target_reports = 20000;
  o.slow.push_back({10, 720, 1.10, 0});
  const std::vector<Event> events = SimulateRun(f.plan, f.report, o);
  const absl::Time cut = f.report.schedule.start_time + absl::Hours(240 + hours_in);
  RunState s;
  for (const Event& e : events) {
    if (e.time >= cut) break;
    EXPECT_TRUE(ApplyEvent(s, e).ok());
  }
  EXPECT_TRUE(!s.slowdown.stretches.empty() && s.slowdown.stretches.back().active);
  return s;
}

Simulation SimulateWith(const RunState& s, const ForecastPrior& prior, bool law) {
  ForecastOptions o;
  o.draws = 2000;
  o.bad_period_law = law;
  return Simulate(s, prior, s.last_time, o);
}

// Gott's law keeps a slowdown's odds of never ending at Laplace's half however old it is;
// the records' law moves them up as it outlives the human scales (a day, then eight), so
// the older slowdown's finish is later under it than under Gott's.
TEST(BadPeriodForecast, ASlowdownThatOutlivesTheHumanScalesMovesTowardsNever) {
  const ForecastPrior& prior = FlagshipPlan().prior;
  const RunState day = FoldIntoALongStretch(24);
  const RunState week = FoldIntoALongStretch(8 * 24);
  const Simulation gott_day = SimulateWith(day, prior, false), law_day = SimulateWith(day, prior, true);
  const Simulation gott_week = SimulateWith(week, prior, false), law_week = SimulateWith(week, prior, true);
  ASSERT_GT(law_day.slowdown_factor, 1.05);
  EXPECT_NEAR(gott_day.slowdown_permanent_probability, 0.5, 1e-12);
  EXPECT_NEAR(gott_week.slowdown_permanent_probability, 0.5, 1e-12);
  EXPECT_GT(law_day.slowdown_permanent_probability, 0.5);
  EXPECT_GT(law_week.slowdown_permanent_probability, law_day.slowdown_permanent_probability + 0.1);
  EXPECT_LT(law_week.slowdown_permanent_probability, 1);
  EXPECT_GT(law_week.finish_p50_seconds, gott_week.finish_p50_seconds);
  std::printf("never: a day in %.2f, eight days in %.2f (Gott 0.50); P50 eight days in: law %+.1f h against Gott\n",
              law_day.slowdown_permanent_probability, law_week.slowdown_permanent_probability,
              (law_week.finish_p50_seconds - gott_week.finish_p50_seconds) / 3600);
}

// The plan's failures.slowdown_fix_hours and failures.crisis_fix_days each weigh in as one
// period of that length that ended, moving the human scales. A team that fixes in 4 h sees a
// young slowdown (6 h) end sooner than one that takes 20 days; but one 3 days old has
// outlived the quick team's clock, so for that team it is likelier the fleet's new level
// and the finish is later. A crisis 14 days old likewise: a team that fixes in a day is less
// likely to see it fixed than one that takes a month.
TEST(BadPeriodForecast, ThePlansFixTimesMoveTheLawBothWays) {
  ForecastPrior quick = FlagshipPlan().prior, slow = FlagshipPlan().prior;
  quick.slowdown_fix_seconds = 4 * 3600;
  slow.slowdown_fix_seconds = 20 * 86400;
  const RunState young = FoldIntoALongStretch(6), old = FoldIntoALongStretch(72);
  const Simulation young_quick = SimulateWith(young, quick, true), young_slow = SimulateWith(young, slow, true);
  const Simulation old_quick = SimulateWith(old, quick, true), old_slow = SimulateWith(old, slow, true);
  ASSERT_GT(young_quick.slowdown_factor, 1.05);
  EXPECT_LT(young_quick.slowdown_persist_seconds, young_slow.slowdown_persist_seconds);
  EXPECT_LT(young_quick.finish_p50_seconds + 3600, young_slow.finish_p50_seconds);
  EXPECT_GT(old_quick.slowdown_permanent_probability, old_slow.slowdown_permanent_probability + 0.1);
  EXPECT_GT(old_quick.finish_p50_seconds, old_slow.finish_p50_seconds + 3600);

  quick.crisis_fix_seconds = 86400;
  slow.crisis_fix_seconds = 30 * 86400;
  const RunState crisis = FoldTo("crisis-then-settle", 0.28);
  const Simulation in_a_day = SimulateWith(crisis, quick, true), in_a_month = SimulateWith(crisis, slow, true);
  ASSERT_EQ(in_a_day.futures.size(), 2u);
  EXPECT_LT(in_a_day.recovery_weight + 0.02, in_a_month.recovery_weight);
  EXPECT_GT(in_a_day.finish_p50_seconds, in_a_month.finish_p50_seconds);
  std::printf(
      "slowdown 6 h old, fixed in 4 h / 20 d: P50 %+.1f / %+.1f h; 3 days old: never %.2f / %.2f, P50 %+.1f / %+.1f h; "
      "crisis fixed in 1 / 30 d: %.0f%% / %.0f%% of the draws\n",
      young_quick.finish_p50_seconds / 3600, young_slow.finish_p50_seconds / 3600,
      old_quick.slowdown_permanent_probability, old_slow.slowdown_permanent_probability,
      old_quick.finish_p50_seconds / 3600, old_slow.finish_p50_seconds / 3600, 100 * in_a_day.recovery_weight,
      100 * in_a_month.recovery_weight);
}

// The crisis future's reason gives the law's figures in words under it, and Gott's
// otherwise; the band is whole either way.
TEST(BadPeriodForecast, TheCrisisFutureSaysTheLawInWords) {
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE(seed);
    const RunState s = FoldTo("crisis-then-settle", 0.28, seed);
    const Simulation law = SimulateWith(s, FlagshipPlan().prior, true);
    const Simulation gott = SimulateWith(s, FlagshipPlan().prior, false);
    ASSERT_EQ(law.futures.size(), 2u);
    ASSERT_EQ(gott.futures.size(), 2u);
    const std::string& words = law.futures[1].reason;
    EXPECT_NE(words.find("old ends within"), std::string::npos) << words;
    EXPECT_NE(words.find("of the records' cases"), std::string::npos) << words;
    EXPECT_EQ(gott.futures[1].reason.find("records' cases"), std::string::npos) << gott.futures[1].reason;
    EXPECT_LE(law.finish_p10_seconds, law.finish_p50_seconds);
    EXPECT_LE(law.finish_p50_seconds, law.finish_p90_seconds);
    EXPECT_GT(law.recovery_weight, 0);
    EXPECT_LT(law.recovery_weight, 1);
    std::printf("%s\n", words.c_str());
  }
}

}  // namespace
}  // namespace flightplan::forecast
