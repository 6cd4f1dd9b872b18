// The law for the end of a bad period: its ways match the records' figures they cite, a
// period's age moves it from the automatic clocks to a human's and then towards "never",
// evidence moves the human scales, and its draws follow its own distribution.
#include "forecast/bad_period.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace flightplan::forecast {
namespace {

constexpr double kDay = 86400, kHour = 3600;

double Cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// P(length < t) of one way, as the records would count it.
double Within(const EndingWay& w, double t) { return Cdf(std::log(t / w.median_seconds) / w.sigma); }

TEST(BadPeriod, TheWaysMatchTheFiguresTheyCite) {
  const auto& ways = EndingWays();
  // The human way: P(< 1 day) 0.32 and P(< 7 days) 0.80 (BLOOM's and OPT's days to a fix).
  EXPECT_NEAR(Within(ways[2], kDay), 0.32, 0.01);
  EXPECT_NEAR(Within(ways[2], 7 * kDay), 0.80, 0.01);
  // The obscure way against Gunawi et al.'s known detection times: 0.25, 0.49, 0.69.
  EXPECT_NEAR(Within(ways[3], kDay), 0.25, 0.02);
  EXPECT_NEAR(Within(ways[3], 7 * kDay), 0.49, 0.02);
  EXPECT_NEAR(Within(ways[3], 30 * kDay), 0.69, 0.02);
  // Greyhound's fail-slows: most end within the hour and nearly all within 10 h.
  EXPECT_GT(Within(ways[1], kHour), 0.6);
  EXPECT_GT(Within(ways[1], 10 * kHour), 0.97);
  double total = 0;
  for (const EndingWay& w : ways) total += w.weight;
  EXPECT_NEAR(total, 1, 1e-12);
}

TEST(BadPeriod, AYoungPeriodEndsSoonAndAnOldOneIsAHumans) {
  const PeriodEvidence none;
  const BadPeriodLaw young(PeriodKind::kAny, 5 * 60, 0, 0, none);
  EXPECT_GT(young.EndsWithin(kHour), 0.6);  // most periods are ended by automation
  const BadPeriodLaw old(PeriodKind::kAny, 3 * kDay, 0, 0, none);
  EXPECT_LT(old.EndsWithin(kHour), 0.02);  // past the automatic scales: a human's clock
  EXPECT_LT(old.EndsWithin(kDay), 0.25);
  EXPECT_GT(old.MedianLeft(), 2 * kDay);
  // Its ways at that age are the human and the obscure one only.
  EXPECT_LT(old.ways()[0].weight + old.ways()[1].weight, 0.002);
  // Not scale-free: D/(D+x) gives any period even odds of lasting as long again; the law
  // gives a 5-min-old one (inside automation's scale) and a 10-day-old one (past the human
  // scale) different odds.
  const BadPeriodLaw ten_days(PeriodKind::kAny, 10 * kDay, 0, 0, none);
  EXPECT_GT(std::fabs(young.EndsWithin(5 * 60) - ten_days.EndsWithin(10 * kDay)), 0.1);
}

TEST(BadPeriod, AStragglerGetsAHumansClockNeverTheSelfResolvingOne) {
  const PeriodEvidence none;
  const BadPeriodLaw straggler(PeriodKind::kHuman, 2 * kHour, 2 * kHour, 0, none);
  ASSERT_EQ(straggler.ways().size(), 2u);
  EXPECT_LT(straggler.EndsWithin(kHour), 0.05);
  const BadPeriodLaw any(PeriodKind::kAny, 2 * kHour, 2 * kHour, 0, none);
  EXPECT_GT(any.EndsWithin(kHour), straggler.EndsWithin(kHour) + 0.05);
}

TEST(BadPeriod, APeriodFarPastTheScalesShiftsWeightToNever) {
  const PeriodEvidence none;
  const BadPeriodLaw at_detection(PeriodKind::kHuman, kDay, kDay, 0.2, none);
  EXPECT_NEAR(at_detection.never(), 0.2, 1e-9);  // stated at detection
  const BadPeriodLaw week(PeriodKind::kHuman, 7 * kDay, kDay, 0.2, none);
  const BadPeriodLaw month(PeriodKind::kHuman, 30 * kDay, kDay, 0.2, none);
  EXPECT_GT(week.never(), 0.3);
  EXPECT_GT(month.never(), week.never() + 0.1);
  EXPECT_EQ(BadPeriodLaw(PeriodKind::kHuman, 30 * kDay, kDay, 0, none).never(), 0);
}

TEST(BadPeriod, EvidenceMovesTheHumanScales) {
  const BadPeriodLaw prior(PeriodKind::kHuman, kDay, kDay, 0, {});
  PeriodEvidence quick;
  quick.team_fix_seconds = 6 * kHour;
  quick.ended_seconds = {4 * kHour, 8 * kHour};
  const BadPeriodLaw fast_team(PeriodKind::kHuman, kDay, kDay, 0, quick);
  EXPECT_LT(fast_team.evidence_factor(), 0.5);
  EXPECT_LT(fast_team.MedianLeft(), prior.MedianLeft());
  PeriodEvidence slow;
  slow.team_fix_seconds = 10 * kDay;
  const BadPeriodLaw slow_team(PeriodKind::kHuman, kDay, kDay, 0, slow);
  EXPECT_GT(slow_team.evidence_factor(), 1.5);
  EXPECT_GT(slow_team.MedianLeft(), prior.MedianLeft());
  EXPECT_DOUBLE_EQ(prior.evidence_factor(), 1);
}

TEST(BadPeriod, ItsDrawsFollowItsOwnDistribution) {
  const BadPeriodLaw law(PeriodKind::kAny, 6 * kHour, kHour, 0.1, {});
  const int n = 40000;
  int never = 0, within_day = 0, within_week = 0;
  for (int i = 0; i < n; ++i) {
    // A stratified grid of the two uniforms (no generator: the test is exact to its grid).
    const double u_way = (i + 0.5) / n;
    const double u_time = std::fmod((i * 0.6180339887498949) + 0.25, 1.0);
    const double left = law.DrawLeft(u_way, u_time);
    if (std::isinf(left)) {
      ++never;
      continue;
    }
    EXPECT_GE(left, 0);
    within_day += left <= kDay;
    within_week += left <= 7 * kDay;
  }
  EXPECT_NEAR(static_cast<double>(never) / n, law.never(), 0.005);
  const double ending = 1 - law.never();
  EXPECT_NEAR(static_cast<double>(within_day) / n, ending * law.EndsWithin(kDay), 0.01);
  EXPECT_NEAR(static_cast<double>(within_week) / n, ending * law.EndsWithin(7 * kDay), 0.01);
}

TEST(BadPeriod, SaysItsFiguresInWords) {
  const BadPeriodLaw law(PeriodKind::kHuman, 6 * kDay, kDay, 0.2, {});
  const std::string words = DescribeLaw(law);
  EXPECT_NE(words.find("a period 6.0 days old ends within a week in "), std::string::npos) << words;
  EXPECT_NE(words.find("that it never ends"), std::string::npos) << words;
  const std::string young = DescribeLaw(BadPeriodLaw(PeriodKind::kAny, 3 * kHour, 0, 0, {}));
  EXPECT_NE(young.find("a period 3.0 h old ends within a day in "), std::string::npos) << young;
}

}  // namespace
}  // namespace flightplan::forecast
