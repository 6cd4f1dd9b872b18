// The run metrics through their text exposition (no HTTP).
#include <string>
#include <tuple>

#include "exporters/run_collector.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace flightplan::exporters {
namespace {

v1::RunStatus Example() {
  v1::RunStatus s;
  s.set_run("r1");
  s.set_state("down");
  s.mutable_progress()->set_tokens(1000);
  s.mutable_progress()->set_plan_tokens(1200);
  s.mutable_progress()->set_target_tokens(10000);
  s.mutable_time_seconds()->set_productive(3000);
  s.mutable_time_seconds()->set_lost(120);
  auto* i = s.add_interruptions();
  i->set_cause("gpu");
  i->set_count(2);
  auto* m = s.add_interruptions();
  m->set_cause("maintenance");
  m->set_planned(true);
  m->set_count(1);
  s.mutable_forecast()->mutable_finish_p50()->set_seconds(1800000000);
  s.mutable_forecast()->mutable_plan_finish()->set_seconds(1799999000);
  s.mutable_forecast()->set_slip_seconds(1000);
  s.mutable_failure_budget()->set_budget_seconds(5000);
  s.mutable_failure_budget()->set_consumed_seconds(1250);
  s.mutable_failure_budget()->set_burn_rate_1h(14.4);
  s.mutable_reliability()->set_goodput(0.9);
  auto* c = s.mutable_cost()->add_categories();
  c->set_category("productive");
  c->set_dollars(250);
  c->set_energy_joules(3.6e9);
  s.mutable_cost()->set_projected_dollars_p50(9000);
  s.mutable_cost()->set_projected_dollars_p90(12000);
  return s;
}

std::string Scrape(std::vector<v1::RunStatus> runs, uint32_t max_causes = 16) {
  RunCollector collector([runs] { return runs; }, max_causes);
  return prometheus::TextSerializer().Serialize(collector.Collect());
}

TEST(RunCollector, ExposesEveryRunWithItsLabels) {
  const std::string text = Scrape({Example()});
  for (const char* line : {
           "flightplan_progress_tokens{run=\"r1\"} 1000",
           "flightplan_plan_progress_tokens{run=\"r1\"} 1200",
           "flightplan_time_seconds{run=\"r1\",category=\"productive\"} 3000",
           "flightplan_time_seconds{run=\"r1\",category=\"lost\"} 120",
           "flightplan_interruptions_total{run=\"r1\",cause=\"gpu\",planned=\"false\"} 2",
           "flightplan_interruptions_total{run=\"r1\",cause=\"maintenance\",planned=\"true\"} 1",
           "flightplan_forecast_finish_timestamp_seconds{run=\"r1\",percentile=\"50\"} 1800000000",
           "flightplan_plan_finish_timestamp_seconds{run=\"r1\"} 1799999000",
           "flightplan_failure_budget_seconds{run=\"r1\"} 5000",
           "flightplan_failure_budget_consumed_seconds{run=\"r1\"} 1250",
           "flightplan_failure_budget_remaining_seconds{run=\"r1\"} 0",
           "flightplan_failure_budget_burn_rate{run=\"r1\",window=\"1h\"} 14.4",
           "flightplan_goodput_ratio{run=\"r1\"} 0.9",
           "flightplan_run_state{run=\"r1\",state=\"down\"} 1",
           "flightplan_run_state{run=\"r1\",state=\"running\"} 0",
           "flightplan_cost_dollars{run=\"r1\",category=\"productive\"} 250",
           "flightplan_energy_joules{run=\"r1\",category=\"productive\"} 3600000000",
           "flightplan_forecast_cost_dollars{run=\"r1\",percentile=\"50\"} 9000",
           "flightplan_forecast_cost_dollars{run=\"r1\",percentile=\"90\"} 12000",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // Types: counters only where monotonic.
  EXPECT_NE(text.find("# TYPE flightplan_interruptions_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE flightplan_failure_budget_consumed_seconds gauge"), std::string::npos);
  EXPECT_NE(text.find("# TYPE flightplan_time_seconds gauge"), std::string::npos);
  EXPECT_NE(text.find("# HELP flightplan_goodput_ratio Productive time over elapsed time, the windows an operator "
                      "excluded left out of both."),
            std::string::npos);
  // No forecast quantile that was not computed.
  EXPECT_EQ(text.find("percentile=\"10\""), std::string::npos);
}

// The two futures: their median finish under `future`, beside the percentiles, with their
// weights and budgets; none when the status has none.
TEST(RunCollector, TheFuturesHaveAFutureLabelAndNoPercentile) {
  v1::RunStatus s = Example();
  EXPECT_EQ(Scrape({s}).find("future="), std::string::npos);
  for (const auto& [name, finish, weight, budget] :
       {std::tuple{"recent", 1800500000, 0.4, 9000.0}, std::tuple{"plan", 1800100000, 0.6, 4000.0}}) {
    v1::Future* f = s.add_futures();
    f->set_name(name);
    f->mutable_finish_p50()->set_seconds(finish);
    f->set_weight(weight);
    f->set_budget_at_finish_seconds(budget);
  }
  const std::string text = Scrape({s});
  for (const char* line : {
           "flightplan_forecast_finish_timestamp_seconds{run=\"r1\",percentile=\"50\"} 1800000000",
           "flightplan_forecast_finish_timestamp_seconds{run=\"r1\",future=\"recent\"} 1800500000",
           "flightplan_forecast_finish_timestamp_seconds{run=\"r1\",future=\"plan\"} 1800100000",
           "flightplan_forecast_future_weight_ratio{run=\"r1\",future=\"recent\"} 0.4",
           "flightplan_forecast_future_weight_ratio{run=\"r1\",future=\"plan\"} 0.6",
           "flightplan_forecast_future_budget_at_finish_seconds{run=\"r1\",future=\"recent\"} 9000",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  size_t helps = 0;
  for (size_t at = 0; (at = text.find("# HELP flightplan_forecast_finish_timestamp_seconds ", at)) != std::string::npos;
       ++at) {
    ++helps;
  }
  EXPECT_EQ(helps, 1u);  // one family: the percentiles and the futures
}

// /metrics has the run collector write its text itself (AppendText); prometheus-cpp's own
// serializer of Collect() is the oracle, byte for byte: labels to escape, causes past the
// limit, futures, fractions, several runs sharing families, and no run at all.
TEST(RunCollector, WritesItsOwnTextAsPrometheusCppWouldSerializeIt) {
  v1::RunStatus odd = Example();
  odd.set_run("a \"quoted\" run\\with\nnewline");
  odd.mutable_failure_budget()->set_burn_rate_1h(0.1 + 0.2);
  odd.mutable_progress()->set_seconds_since_step(-0.0);
  for (const char* cause : {"nccl", "xid79", "oom", "ib"}) {
    auto* i = odd.add_interruptions();
    i->set_cause(cause);
    i->set_count(3);
  }
  v1::Future* f = odd.add_futures();
  f->set_name("recent");
  f->mutable_finish_p50()->set_seconds(1800500000);
  f->set_weight(1.0 / 3);
  v1::RunStatus second = Example();
  second.set_run("r2");
  second.set_state("running");
  second.mutable_progress()->set_tokens(123456789012345);
  for (const auto& [runs, max_causes] :
       {std::pair{std::vector<v1::RunStatus>{}, 16u}, std::pair{std::vector<v1::RunStatus>{Example()}, 16u},
        std::pair{std::vector<v1::RunStatus>{odd, second, Example()}, 2u}}) {
    const std::vector<v1::RunStatus> statuses = runs;  // clang 14 cannot capture a structured binding
    RunCollector collector([statuses] { return statuses; }, max_causes);
    std::string text = "# already there\n";
    collector.AppendText(text);
    EXPECT_EQ(text, "# already there\n" + prometheus::TextSerializer().Serialize(collector.Collect()))
        << runs.size() << " runs";
  }
}

TEST(RunCollector, OneFamilyPerNameAcrossRuns) {
  v1::RunStatus other = Example();
  other.set_run("r2");
  const std::string text = Scrape({Example(), other});
  size_t helps = 0;
  for (size_t at = 0; (at = text.find("# HELP flightplan_progress_tokens ", at)) != std::string::npos; ++at) ++helps;
  EXPECT_EQ(helps, 1u);
  EXPECT_NE(text.find("flightplan_progress_tokens{run=\"r2\"} 1000"), std::string::npos);
  EXPECT_EQ(Scrape({}).find("flightplan_progress_tokens"), std::string::npos);
}

// The label limit: the first causes a run saw keep their label, later ones are summed as
// "other" (planned and unplanned apart); the status itself is not touched (issue 12).
TEST(RunCollector, CausesPastTheLabelLimitAreSummedAsOther) {
  v1::RunStatus s = Example();  // gpu 2, maintenance 1 (planned)
  for (const auto& [cause, planned, count] :
       {std::tuple{"nccl", false, 3}, {"hang", false, 4}, {"gpu", true, 1}, {"oom", true, 5}}) {
    auto* i = s.add_interruptions();
    i->set_cause(cause);
    i->set_planned(planned);
    i->set_count(count);
  }
  const std::string text = Scrape({s}, 3);  // gpu, maintenance, nccl keep their labels
  for (const char* line : {"flightplan_interruptions_total{run=\"r1\",cause=\"gpu\",planned=\"false\"} 2",
                           "flightplan_interruptions_total{run=\"r1\",cause=\"gpu\",planned=\"true\"} 1",
                           "flightplan_interruptions_total{run=\"r1\",cause=\"maintenance\",planned=\"true\"} 1",
                           "flightplan_interruptions_total{run=\"r1\",cause=\"nccl\",planned=\"false\"} 3",
                           "flightplan_interruptions_total{run=\"r1\",cause=\"other\",planned=\"false\"} 4",
                           "flightplan_interruptions_total{run=\"r1\",cause=\"other\",planned=\"true\"} 5"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("cause=\"hang\""), std::string::npos);
  EXPECT_EQ(text.find("cause=\"oom\""), std::string::npos);
  // Under the limit, every cause is its own series.
  const std::string all = Scrape({s});
  EXPECT_NE(all.find("cause=\"hang\""), std::string::npos);
  EXPECT_EQ(all.find("cause=\"other\""), std::string::npos);
}

}  // namespace
}  // namespace flightplan::exporters
