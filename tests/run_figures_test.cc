// One function per figure (issue 38): `flightplan status` and the run's page print a run's
// figures through text/run_figures, so the two say the same thing in the same words.
#include "text/run_figures.h"

#include <string>
#include <vector>

#include "cli/status_print.h"
#include "exporters/run_page.h"
#include "gtest/gtest.h"

namespace flightplan {
namespace {

v1::RunStatus Running() {
  v1::RunStatus s;
  s.set_run("r");
  s.set_state("running");
  s.set_events(900);
  s.mutable_as_of()->set_seconds(1'800'010'000);
  s.mutable_first_event_time()->set_seconds(1'800'000'000);
  auto* t = s.mutable_time_seconds();
  t->set_productive(7250);
  t->set_checkpoint(450);
  t->set_lost(900);
  t->set_startup(600);
  t->set_down_unplanned(800);
  t->set_elapsed(10'000);
  s.mutable_throughput()->set_tokens_per_second(962'142);
  s.mutable_throughput()->set_recent_tokens_per_second(950'000);
  s.mutable_throughput()->set_plan_tokens_per_second(1'000'000);
  s.mutable_slowdown()->set_reference_tokens_per_second(962'142);
  s.mutable_slowdown()->set_plan_tokens_per_second(1'000'000);
  s.mutable_slowdown()->set_noise(0.01);
  auto* f = s.mutable_forecast();
  f->mutable_finish_p10()->set_seconds(1'800'500'000);
  f->mutable_finish_p50()->set_seconds(1'800'600'000);
  f->mutable_finish_p90()->set_seconds(1'800'700'000);
  f->mutable_plan_expected_finish()->set_seconds(1'800'590'000);
  f->mutable_plan_finish()->set_seconds(1'800'900'000);
  f->set_slip_seconds(10'000);
  return s;
}

std::string Page(const v1::RunStatus& s) {
  exporters::RunPageInput in;
  in.status = s;
  return exporters::RunPageHtml(in);
}

TEST(RunFigures, TheStatusAndThePageSayEachFigureAlike) {
  const v1::RunStatus s = Running();
  const std::string cli = cli::FormatRunStatus(s), page = Page(s);
  for (const std::string& figure :
       {text::GoodputText(s.time_seconds()), text::SlowdownText(s.slowdown()), text::PlanFinishText(s.forecast())}) {
    EXPECT_NE(cli.find(figure), std::string::npos) << figure << "\n" << cli;
    EXPECT_NE(page.find(figure), std::string::npos) << figure;
  }
  // 7,250 of 10,000 s: the goodput and the time table's productive share are one number.
  EXPECT_EQ(text::GoodputText(s.time_seconds()), "72.5%");
  EXPECT_NE(page.find("productive</td><td>2.0 h</td><td>72.5%</td>"), std::string::npos) << page;
  // A rate in one notation everywhere: 962 ktokens/s, never 962142.
  EXPECT_EQ(text::RateText(962'142), "962 ktokens/s");
  EXPECT_NE(page.find("own pace 962 ktokens/s"), std::string::npos);
  EXPECT_EQ(page.find("962142"), std::string::npos);
  EXPECT_EQ(cli.find("962142"), std::string::npos);
}

// The categories of issue 40: MFU, an exclusion's goodput, and the three later categories,
// alike in both, the later ones only once they hold time.
TEST(RunFigures, MfuExclusionsAndTheLaterCategoriesAreSaidAlike) {
  v1::RunStatus s = Running();
  std::string cli = cli::FormatRunStatus(s), page = Page(s);
  EXPECT_EQ(cli.find("MFU"), std::string::npos);  // the plan gives none: nothing said
  EXPECT_EQ(cli.find("capacity"), std::string::npos);
  EXPECT_EQ(page.find("excluded"), std::string::npos);
  s.mutable_mfu()->set_lifetime(0.373);
  s.mutable_mfu()->set_last_hour(0.36);
  s.mutable_mfu()->set_plan(0.386);
  auto* t = s.mutable_time_seconds();
  t->set_productive(6250);
  t->set_capacity(500);
  t->set_custom(250);
  t->set_excluded(1000);  // 6,250 + 500 + 250 + 1,000 + the rest = 10,000 - 750
  t->set_lost(150);
  cli = cli::FormatRunStatus(s);
  page = Page(s);
  const std::string mfu = text::MfuText(s.mfu());
  EXPECT_EQ(mfu, "37.3% over the run, 36.0% last hour (plan 38.6%; end to end, productive time)");
  const std::string goodput = text::GoodputText(s.time_seconds());
  EXPECT_EQ(goodput, "69.4% without the excluded 10.0% (62.5% counting it)");  // 6,250 / 9,000
  for (const std::string& figure : {mfu, goodput}) {
    EXPECT_NE(cli.find(figure), std::string::npos) << figure << "\n" << cli;
    EXPECT_NE(page.find(figure), std::string::npos) << figure;
  }
  for (const char* label : {"capacity (fewer GPUs)", "custom (spans)", "excluded"}) {
    EXPECT_NE(cli.find(label), std::string::npos) << label << "\n" << cli;
    EXPECT_NE(page.find(label), std::string::npos) << label;
  }
}

TEST(RunFigures, BeforeThePaceIsKnownBothSayItIsBeingLearned) {
  v1::RunStatus s = Running();
  s.clear_slowdown();
  const std::string said = text::SlowdownText(s.slowdown());
  EXPECT_EQ(said, "- (learning the run's own pace)");
  EXPECT_NE(cli::FormatRunStatus(s).find(said), std::string::npos);
  EXPECT_NE(Page(s).find(exporters::HtmlEscape(said)), std::string::npos);  // the apostrophe as &#39;
  EXPECT_EQ(Page(s).find("none found"), std::string::npos);
}

TEST(RunFigures, TheSlipIsAgainstThePlansExpectedFinish) {
  const v1::RunStatus s = Running();
  const std::string said = text::PlanFinishText(s.forecast());
  EXPECT_NE(said.find("expected 2027-01-"), std::string::npos) << said;
  EXPECT_NE(said.find(", committed 2027-01-"), std::string::npos) << said;
  EXPECT_NE(said.find("; P50 later by 2.8 h"), std::string::npos) << said;
  v1::Forecast pending = s.forecast();
  pending.clear_finish_p50();
  EXPECT_EQ(text::PlanFinishText(pending).find("P50"), std::string::npos);
}

// The throughput chart draws a line for a short run and a thinned backfill: each point the
// rate over at least a twentieth of the work shown (1-10 minutes of it). Before, a point
// needed ten minutes of work between two stored points: 230 steps drew "no data yet" and a
// 1.5 h backfill one dot.
TEST(RunFigures, TheThroughputChartDrawsShortAndThinnedHistories) {
  auto history = [](int points, double work_per_point, double tokens_per_second) {
    std::vector<v1::ForecastPoint> out(points);
    for (int i = 0; i < points; ++i) {
      out[i].mutable_as_of()->set_seconds(1'800'000'000 + static_cast<int64_t>(i * work_per_point * 1.1));
      out[i].mutable_time_seconds()->set_productive(i * work_per_point);
      out[i].set_tokens(static_cast<uint64_t>(i * work_per_point * tokens_per_second));
    }
    return out;
  };
  auto pointers = [](const std::vector<v1::ForecastPoint>& v) {
    std::vector<const v1::ForecastPoint*> out;
    for (const v1::ForecastPoint& p : v) out.push_back(&p);
    return out;
  };
  // 230 steps of 1.5 s stored as 12 points: 345 s of work.
  const auto short_run = history(12, 345.0 / 11, 4e6);
  const auto short_points = exporters::ThroughputPoints(pointers(short_run));
  EXPECT_GE(short_points.size(), 4u);
  for (const auto& [x, rate] : short_points) EXPECT_NEAR(rate, 4e6, 1);
  // A 1.5 h backfill kept as 30 points.
  const auto backfill = history(30, 5400.0 / 29, 4e6);
  EXPECT_GE(exporters::ThroughputPoints(pointers(backfill)).size(), 14u);
  // A restore: from point 10 the tokens go back 3,000 s of work and climb again at the same
  // rate. The drop is no rate, and every rate drawn is the run's.
  auto restored = history(20, 600, 4e6);
  for (int i = 10; i < 20; ++i) restored[i].set_tokens(restored[i].tokens() - static_cast<uint64_t>(3000 * 4e6));
  const auto after = exporters::ThroughputPoints(pointers(restored));
  EXPECT_GE(after.size(), 15u);
  for (const auto& [x, rate] : after) EXPECT_NEAR(rate, 4e6, 1);
}

}  // namespace
}  // namespace flightplan
