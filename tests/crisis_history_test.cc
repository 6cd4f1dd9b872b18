// A run's own earlier crises (forecast/crisis_history.h), found in simulated runs of the
// flagship whose crises are known: none in runs as planned, the chaotic start's once it has
// settled, both ends dated; and, under the law for the end of a bad period, weighed and said
// when a second crisis comes.
#include "forecast/crisis_history.h"

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "tests/flagship_plan.h"

namespace flightplan::forecast {
namespace {

using ::flightplan::testing::FlagshipPlan;

CrisisHistory Read(const RunState& s) {
  const ForecastPrior& p = FlagshipPlan().prior;
  return ReadCrises(s.evidence, p.job_mtbf_seconds, p.loss_per_interruption_seconds, s.last_time);
}

// A run of the flagship under `o`, folded until its lineage holds `cut` of the target;
// `at` gets the times at which it first held each of `marks` (shares of the target).
RunState Fold(const SimulationOptions& o, double cut, const std::vector<double>& marks = {},
              std::vector<absl::Time>* at = nullptr) {
  const double target = static_cast<double>(FlagshipPlan().prior.target_tokens);
  RunState s;
  if (at != nullptr) at->assign(marks.size(), absl::InfiniteFuture());
  for (const Event& e : SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, o)) {
    if (static_cast<double>(s.tokens) >= cut * target) break;
    EXPECT_TRUE(ApplyEvent(s, e).ok());
    for (size_t k = 0; at != nullptr && k < marks.size(); ++k) {
      if ((*at)[k] == absl::InfiniteFuture() && static_cast<double>(s.tokens) >= marks[k] * target) (*at)[k] = e.time;
    }
  }
  return s;
}

SimulationOptions Options(const char* scenario, uint64_t seed) {
  SimulationOptions o = FindScenario(scenario)->options;
  o.seed = seed;
  return o;
}

double Days(absl::Duration d) { return absl::ToDoubleHours(d) / 24; }

// Runs that keep their plan's failure process, however their losses are shaped, have no
// crisis to find.
TEST(CrisisHistory, NoneInRunsThatKeepTheirPlan) {
  for (const char* scenario : {"as-planned", "heavy-tailed-restarts", "hangs-and-silent-crashes"}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE(absl::StrFormat("%s seed %d", scenario, seed));
      const CrisisHistory h = Read(Fold(Options(scenario, seed), 0.9));
      EXPECT_TRUE(h.ended.empty()) << Days(h.ended[0].end - h.ended[0].start) << " days";
    }
  }
}

// A chaotic start (failures 4x, or 3x rising to 10x, the plan's until 30% of the tokens) is
// one crisis, under way at 20% and ended by 60%: from the run's first days (read a day at a
// time, a 3x start can take two to show) to within two days of when 30% was reached.
TEST(CrisisHistory, AChaoticStartIsOneCrisisDatedAtBothEnds) {
  for (const char* scenario : {"chaotic-start", "crisis-then-settle"}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      SCOPED_TRACE(absl::StrFormat("%s seed %d", scenario, seed));
      std::vector<absl::Time> at;
      const RunState during = Fold(Options(scenario, seed), 0.2);
      const CrisisHistory now = Read(during);
      EXPECT_TRUE(now.ended.empty());
      EXPECT_LE(Days(now.open_since - during.first_time), 2.5);
      const RunState after = Fold(Options(scenario, seed), 0.6, {0.3}, &at);
      const CrisisHistory then = Read(after);
      ASSERT_EQ(then.ended.size(), 1u);
      const PastCrisis& c = then.ended[0];
      EXPECT_LE(Days(c.start - after.first_time), 2.5);
      EXPECT_LT(std::abs(Days(c.end - at[0])), 2)
          << Days(c.end - after.first_time) << " against " << Days(at[0] - after.first_time);
      EXPECT_GE(c.cost_ratio, 2);
      EXPECT_EQ(then.open_since, absl::InfiniteFuture());
    }
  }
}

// A rack that goes bad at 40% and stays bad is one crisis under way from then, never cut
// into crises that ended by the days it happens to be quieter.
TEST(CrisisHistory, ARegimeThatNeverEndsIsOneCrisisUnderWay) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    std::vector<absl::Time> at;
    const CrisisHistory h = Read(Fold(Options("bad-rack-40", seed), 0.9, {0.4}, &at));
    EXPECT_TRUE(h.ended.empty());
    // Read a day at a time, a 3x excess shows within a few days (0.2-3.3 in these seeds).
    EXPECT_GT(Days(h.open_since - at[0]), -1);
    EXPECT_LT(Days(h.open_since - at[0]), 4);
  }
}

// Under the law for the end of a bad period, a second crisis (failures 8x from 60%, after
// the chaotic start's) is aged from its own start, not the run's, and the first one's
// length weighs in and is said.
TEST(CrisisHistory, ASecondCrisisIsAgedFromItsOwnStartAndWeighsTheFirst) {
  static const std::regex kAge("a period ([0-9.]+) days old");
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    SimulationOptions o = Options("chaotic-start", seed);
    o.regime_at = 0.6;
    o.regime_failure_factor = 8;
    std::vector<absl::Time> at;
    const RunState s = Fold(o, 0.76, {0.3, 0.6}, &at);
    ForecastOptions fo;
    fo.draws = 500;
    const Simulation gott = Simulate(s, FlagshipPlan().prior, s.last_time, fo);
    fo.bad_period_law = true;
    const Simulation law = Simulate(s, FlagshipPlan().prior, s.last_time, fo);
    ASSERT_EQ(law.futures.size(), 2u);
    EXPECT_TRUE(gott.earlier_crises_seconds.empty());
    ASSERT_EQ(law.earlier_crises_seconds.size(), 1u);
    EXPECT_LT(std::abs(law.earlier_crises_seconds[0] / 86400 - Days(at[0] - s.first_time)), 2);
    const std::string& words = law.futures[1].reason;
    EXPECT_NE(words.find("the run's earlier crisis lasted"), std::string::npos) << words;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(words, m, kAge)) << words;
    EXPECT_LT(std::abs(std::stod(m[1].str()) - Days(s.last_time - at[1])), 2) << words;
  }
}

}  // namespace
}  // namespace flightplan::forecast
