// The status text (cli/status_print): what a person reads in `flightplan status`.
#include "cli/status_print.h"

#include <string>

#include "gtest/gtest.h"
#include "text/units.h"

namespace flightplan::cli {

namespace units = text::units;  // the one rendering of numbers, shared with the run page

namespace {

v1::RunStatus NewRun() {
  v1::RunStatus s;
  s.set_run("r");
  s.set_state("new");
  s.mutable_progress()->set_target_tokens(10'000'000'000'000);
  s.mutable_as_of()->set_seconds(1'800'000'000);
  s.mutable_throughput()->set_plan_tokens_per_second(3.34e6);
  s.mutable_reliability()->set_plan_mtbf_seconds(14'000);
  s.mutable_forecast()->mutable_plan_finish()->set_seconds(1'802'000'000);
  return s;
}

// A run with no event shows "-" where a time or a rate would be, never 1970 or zeros
// that read as a stopped job (issue 12).
TEST(StatusPrint, AnEmptyRunShowsDashesNotZerosOr1970) {
  const std::string text = FormatRunStatus(NewRun());
  EXPECT_EQ(text.find("1970"), std::string::npos) << text;
  EXPECT_NE(text.find("(first event -)"), std::string::npos) << text;
  EXPECT_NE(text.find("throughput             - per productive second (last hour -;"), std::string::npos) << text;
  EXPECT_NE(text.find("burn rate              - (no time has elapsed)"), std::string::npos) << text;
  EXPECT_NE(text.find("goodput -;"), std::string::npos) << text;
  EXPECT_NE(text.find(", 0 events\n"), std::string::npos) << text;
}

TEST(StatusPrint, ARunWithEventsShowsItsFirstEventRatesAndBurn) {
  v1::RunStatus s = NewRun();
  s.set_state("running");
  s.set_events(1);
  s.mutable_first_event_time()->set_seconds(1'800'000'000 - 3600);
  s.mutable_time_seconds()->set_productive(3000);
  s.mutable_time_seconds()->set_startup(600);
  s.mutable_time_seconds()->set_elapsed(3600);
  s.mutable_throughput()->set_tokens_per_second(3.3e6);
  s.mutable_failure_budget()->set_burn_rate(1.5);
  s.mutable_reliability()->set_goodput(3000.0 / 3600);
  const std::string text = FormatRunStatus(s);
  EXPECT_NE(text.find(", 1 event\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(first event 2027-01-15 07:00 UTC)"), std::string::npos) << text;
  EXPECT_NE(text.find("3.30 Mtokens/s per productive second"), std::string::npos) << text;
  EXPECT_NE(text.find("1.50 overall"), std::string::npos) << text;
  EXPECT_NE(text.find("goodput 83.3%"), std::string::npos) << text;
}

// The two futures, each on its own line with its reason, under the forecast's.
TEST(StatusPrint, TheTwoFuturesAreShownWithTheirWeightsAndReasons) {
  v1::RunStatus s = NewRun();
  s.set_state("running");
  s.mutable_forecast()->mutable_finish_p10()->set_seconds(1'801'000'000);
  s.mutable_forecast()->mutable_finish_p50()->set_seconds(1'801'500'000);
  s.mutable_forecast()->mutable_finish_p90()->set_seconds(1'802'500'000);
  EXPECT_EQ(FormatRunStatus(s).find("back to plan"), std::string::npos);
  auto add = [&](const char* name, int64_t finish, double budget_days, double weight, const char* reason) {
    v1::Future* f = s.add_futures();
    f->set_name(name);
    f->mutable_finish_p50()->set_seconds(finish);
    f->set_budget_at_finish_seconds(budget_days * 86400);
    f->set_weight(weight);
    f->set_reason(reason);
  };
  add("recent", 1'802'400'000, 5, 0.4, "failures cost 7.0x the plan's");
  add("plan", 1'801'100'000, 2, 0.6, "a crisis, fixed in 60% of the draws");
  const std::string text = FormatRunStatus(s);
  const size_t forecast = text.find("finish forecast"), last_days = text.find("last days continue   P50 2027-02-12"),
               back = text.find("back to plan         P50 2027-01-28");
  ASSERT_NE(last_days, std::string::npos) << text;
  ASSERT_NE(back, std::string::npos) << text;
  EXPECT_LT(forecast, last_days);
  EXPECT_LT(last_days, back);
  EXPECT_NE(text.find("budget at finish 5.0 days, weight 40%"), std::string::npos) << text;
  EXPECT_NE(text.find("failures cost 7.0x the plan's\n"), std::string::npos) << text;
  EXPECT_NE(text.find("a crisis, fixed in 60% of the draws\n"), std::string::npos) << text;
}

TEST(Units, CountedIsSingularForExactlyOne) {
  EXPECT_EQ(units::Counted(1, "event"), "1 event");
  EXPECT_EQ(units::Counted(0, "event"), "0 events");
  EXPECT_EQ(units::Counted(2048, "attempt"), "2,048 attempts");
}

}  // namespace
}  // namespace flightplan::cli
