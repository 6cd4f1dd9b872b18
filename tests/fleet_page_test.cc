// The fleet page (exporters/fleet_page.h): each run's class and reasons from its status, and
// the table sorted worst first. The page in a real browser at 1,000 runs is
// tests/browser/fleet_page_test.py.
#include "exporters/fleet_page.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace flightplan::exporters {
namespace {

v1::RunStatus Fleet(const std::string& name, double slip_hours = 0) {
  v1::RunStatus s;
  s.set_run(name);
  s.set_state("running");
  s.mutable_progress()->set_fraction(0.4);
  s.mutable_forecast()->mutable_finish_p50()->set_seconds(1800000000);
  s.mutable_forecast()->set_slip_seconds(slip_hours * 3600);
  v1::FailureBudget* b = s.mutable_failure_budget();
  b->set_budget_seconds(86400 * 4);
  b->set_remaining_seconds(86400 * 3);
  b->set_burn_rate_1d(0.8);
  return s;
}

TEST(FleetPage, EachRunIsJudgedOnWhatItsStatusSays) {
  EXPECT_EQ(JudgeRun(Fleet("calm")).severity, 2);
  EXPECT_TRUE(JudgeRun(Fleet("calm")).reasons.empty());
  v1::RunStatus down = Fleet("down");
  down.set_state("down");
  down.mutable_outage()->set_seconds(3600);
  down.mutable_outage()->set_allowance_seconds(900);
  FleetVerdict v = JudgeRun(down);
  EXPECT_EQ(v.severity, 0);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_NE(v.reasons[0].find("past its 15.0 min allowance"), std::string::npos) << v.reasons[0];
  down.mutable_outage()->set_seconds(600);  // within its allowance: a look, not a page
  EXPECT_EQ(JudgeRun(down).severity, 1);
  v1::RunStatus broke = Fleet("broke");
  broke.mutable_failure_budget()->set_exhaustion_probability(0.59);
  EXPECT_EQ(JudgeRun(broke).severity, 0);
  EXPECT_NE(JudgeRun(broke).reasons[0].find("59%"), std::string::npos);
  v1::RunStatus late = Fleet("late");
  late.mutable_forecast()->mutable_deadline()->set_seconds(1800000000 - 86400);
  EXPECT_EQ(JudgeRun(late).severity, 0);
  v1::RunStatus slow = Fleet("slow");
  slow.mutable_slowdown()->set_active(true);
  slow.mutable_slowdown()->set_factor(1.12);
  slow.mutable_slowdown()->mutable_since()->set_seconds(1799000000);
  EXPECT_EQ(JudgeRun(slow).severity, 1);
  EXPECT_NE(JudgeRun(slow).reasons[0].find("12% slower"), std::string::npos) << JudgeRun(slow).reasons[0];
  v1::RunStatus lemon = Fleet("lemon");
  lemon.mutable_nodes()->add_suspects()->set_node("gpu-node-107");
  lemon.mutable_nodes()->set_exclude("--exclude=gpu-node-107");
  EXPECT_EQ(JudgeRun(lemon).severity, 1);
  EXPECT_NE(JudgeRun(lemon).reasons[0].find("suspect node gpu-node-107 (--exclude=gpu-node-107)"), std::string::npos);
  v1::RunStatus burning = Fleet("burning");
  burning.mutable_failure_budget()->set_burn_rate_1d(2.5);
  EXPECT_EQ(JudgeRun(burning).severity, 1);
  EXPECT_EQ(JudgeRun(Fleet("a day late", 30)).severity, 1);
  EXPECT_EQ(JudgeRun(Fleet("hours late", 5)).severity, 2);
  v1::RunStatus done = Fleet("done");
  done.set_state("finished");
  done.mutable_failure_budget()->set_exhaustion_probability(1);  // spent, but over
  EXPECT_EQ(JudgeRun(done).severity, 3);
}

TEST(FleetPage, TheWorstComeFirstThenTheLatest) {
  v1::RunStatus down = Fleet("z-down");
  down.mutable_outage()->set_seconds(7200);
  down.mutable_outage()->set_allowance_seconds(900);
  v1::RunStatus done = Fleet("a-done");
  done.set_state("finished");
  const std::string html =
      FleetPageHtml({done, Fleet("b-on-plan"), Fleet("c-two-days-late", 48), down, Fleet("d-later-still", 96)}, 60);
  auto at = [&](const std::string& run) { return html.find(">" + run + "</a>"); };
  for (const char* run : {"z-down", "d-later-still", "c-two-days-late", "b-on-plan", "a-done"}) {
    ASSERT_NE(at(run), std::string::npos) << run;
  }
  EXPECT_LT(at("z-down"), at("d-later-still"));
  EXPECT_LT(at("d-later-still"), at("c-two-days-late"));  // both a look; the later first
  EXPECT_LT(at("c-two-days-late"), at("b-on-plan"));
  EXPECT_LT(at("b-on-plan"), at("a-done"));
  EXPECT_NE(html.find("<span class=\"act\">1 act now</span><span class=\"look\">2 look</span>"), std::string::npos)
      << html.substr(0, 1500);
  EXPECT_NE(html.find("4.0 days late"), std::string::npos);
  EXPECT_NE(html.find("http-equiv=\"refresh\" content=\"60\""), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace flightplan::exporters
