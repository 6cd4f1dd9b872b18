// The run's page as HTML: what it draws from a status and a forecast history, and that
// nothing from events or plans gets through unescaped.
#include "exporters/run_page.h"

#include <string>

#include "exporters/fleet_page.h"
#include "gtest/gtest.h"

namespace flightplan::exporters {
namespace {

constexpr char kHostile[] = "<script>alert('x')</script>";

v1::RunStatus Status() {
  v1::RunStatus s;
  s.set_run(std::string("r1 ") + kHostile);
  s.set_state("running");
  s.set_attempt(3);
  s.set_plan_name(std::string("plan ") + kHostile);
  s.mutable_progress()->set_tokens(2'000'000'000);
  s.mutable_progress()->set_target_tokens(10'000'000'000);
  s.mutable_progress()->set_fraction(0.2);
  s.mutable_time_seconds()->set_productive(7200);
  s.mutable_time_seconds()->set_lost(1800);
  s.mutable_time_seconds()->set_down_unplanned(3600);
  auto* i = s.add_interruptions();
  i->set_cause(kHostile);
  i->set_count(2);
  s.add_flags(std::string("flag ") + kHostile);
  s.mutable_forecast()->mutable_finish_p50()->set_seconds(1800000000);
  s.mutable_forecast()->mutable_plan_finish()->set_seconds(1799900000);
  s.mutable_forecast()->mutable_deadline()->set_seconds(1801000000);
  s.mutable_failure_budget()->set_budget_seconds(360000);
  s.mutable_failure_budget()->set_consumed_seconds(5400);
  s.mutable_failure_budget()->set_schedule_seconds(3600000);
  return s;
}

v1::ForecastHistory History() {
  v1::ForecastHistory h;
  for (int i = 0; i < 3; ++i) {
    v1::ForecastPoint* p = h.add_points();
    p->mutable_as_of()->set_seconds(1799020800 + 3600 * i);  // 2027-01-04 00:00 UTC on
    p->mutable_finish_p10()->set_seconds(1799800000 + 1000 * i);
    p->mutable_finish_p50()->set_seconds(1800000000 + 1000 * i);
    p->mutable_finish_p90()->set_seconds(1800200000 + 1000 * i);
    p->set_budget_consumed_seconds(1800.0 * i);
    p->set_projected_at_finish_seconds(200000 + 1000.0 * i);
  }
  return h;
}

TEST(RunPage, EscapesEveryStringFromEventsAndPlans) {
  RunPageInput in;
  in.status = Status();
  in.history = History();
  const std::string html = RunPageHtml(in);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "a script tag got through";
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  const std::string list = FleetPageHtml({Status()}, 0);
  EXPECT_EQ(list.find("<script"), std::string::npos);
  // The link is the name percent-encoded: spaces, brackets and quotes cannot end the href.
  EXPECT_NE(list.find("href=\"r1%20%3Cscript%3Ealert%28%27x%27%29%3C%2Fscript%3E\""), std::string::npos) << list;
}

// The two futures in the summary, after the forecast, their reasons as text.
TEST(RunPage, ShowsTheTwoFuturesWithTheirReasonsEscaped) {
  RunPageInput in;
  in.status = Status();
  in.history = History();
  EXPECT_EQ(RunPageHtml(in).find("future:"), std::string::npos);
  for (const char* name : {"recent", "plan"}) {
    v1::Future* f = in.status.add_futures();
    f->set_name(name);
    f->mutable_finish_p50()->set_seconds(1800000000);
    f->set_budget_at_finish_seconds(7200);
    f->set_weight(0.5);
    f->set_reason(std::string("why ") + kHostile);
  }
  const std::string html = RunPageHtml(in);
  const size_t forecast = html.find("finish, P50"), recent = html.find("future: the last days continue"),
               plan = html.find("future: back to plan");
  ASSERT_NE(recent, std::string::npos) << html;
  ASSERT_NE(plan, std::string::npos) << html;
  EXPECT_LT(forecast, recent);
  EXPECT_LT(recent, plan);
  EXPECT_NE(html.find("budget at finish 2.0 h, weight 50.0%"), std::string::npos) << html;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("why &lt;script&gt;"), std::string::npos);
}

TEST(RunPage, DrawsTheTrajectoryTheBudgetAndTheTime) {
  RunPageInput in;
  in.status = Status();
  in.history = History();
  in.refresh_seconds = 60;
  const std::string html = RunPageHtml(in);
  // Three finish percentiles and the budget consumed as paths through the three points.
  size_t paths = 0;
  for (size_t at = html.find("<path class=\"series\" d=\"M"); at != std::string::npos;
       at = html.find("<path class=\"series\" d=\"M", at + 1)) {
    ++paths;
  }
  EXPECT_GE(paths, 5u);  // P10, P50, P90, consumed, projected
  // Dated axes: ticks on the time axis and, for the finish chart, on the value axis.
  EXPECT_NE(html.find("class=\"tick x\""), std::string::npos);
  EXPECT_NE(html.find(">01-04 00:00<"), std::string::npos);
  EXPECT_NE(html.find("time (UTC)"), std::string::npos);
  // The plan finish and the deadline as reference lines, the time by category as marks.
  EXPECT_NE(html.find("plan finish"), std::string::npos);
  EXPECT_NE(html.find(">deadline<"), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"mark\""), std::string::npos);
  EXPECT_NE(html.find("http-equiv=\"refresh\" content=\"60\""), std::string::npos);
  in.refresh_seconds = 0;
  EXPECT_EQ(RunPageHtml(in).find("http-equiv=\"refresh\""), std::string::npos);
}

// Without a forecast history the trajectory, budget and time charts say so; the tokens
// chart still has the plan's line.
TEST(RunPage, ARunWithoutHistorySaysSo) {
  RunPageInput in;
  in.status = Status();
  const std::string html = RunPageHtml(in);
  for (const char* chart : {"finish", "budget", "time-history"}) {
    const size_t at = html.find(std::string("<figure id=\"") + chart + "\">");
    ASSERT_NE(at, std::string::npos) << chart;
    const std::string figure = html.substr(at, html.find("</figure>", at) - at);
    EXPECT_NE(figure.find("no data yet"), std::string::npos) << chart;
    EXPECT_EQ(figure.find("<path class=\"series\""), std::string::npos) << chart;
  }
}

}  // namespace
}  // namespace flightplan::exporters
