// Nodes and ranks through the daemon (docs/contract.md §5, "Nodes"): two runs on one pool of
// 16 nodes, one node failing the first run again and again; the ledger over gRPC
// (ListNodes), the run's status and its text, the what-if without that node, a run whose
// events name no nodes, a restart, and the metrics with and without --node-info-metrics.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/nodes_command.h"
#include "tests/daemon_fixture.h"
#include "tests/http_get.h"

namespace flightplan::testing {
namespace {

const std::string kRun = "dense-70b-10t";
const std::string kAblation = "ablation";

std::vector<std::string> Pool(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(absl::StrFormat("n%02d", i));
  return out;
}

v1::Event Launch(const std::string& run, double t, uint32_t attempt, const std::vector<std::string>& nodes) {
  v1::Event e = StartedAt(run, t, attempt, 0);
  for (const std::string& n : nodes) e.mutable_job_started()->add_nodes(n);
  e.mutable_job_started()->set_gpus(static_cast<uint32_t>(nodes.size()) * 8);
  return e;
}

v1::Event Failed(const std::string& run, double t, const std::string& node) {
  v1::Event e = InterruptedAt(run, t, "node");
  e.mutable_interruption()->add_nodes(node);
  return e;
}

class NodesTest : public DaemonTest {
 protected:
  // The flagship run: 8 launches of a day on all 16 nodes, each ended by a failure naming
  // one node: n07 five times, n03, n11 once each, the last one still running. The ablation: a
  // week on n01-n08 without a failure.
  void Fleet() {
    ASSERT_TRUE(Create(FlagshipPlan()).ok());
    ASSERT_TRUE(Create(FlagshipPlan(), nullptr, kAblation).ok());
    const std::vector<std::string> blamed = {"n07", "n03", "n07", "n07", "n11", "n07", "n07"};
    std::vector<v1::Event> events;
    const double day = 86400;
    int64_t step = 0;
    for (uint32_t a = 0; a < 8; ++a) {
      const double t0 = a * day;
      events.push_back(Launch(kRun, t0, a + 1, Pool(1, 16)));
      for (double t = t0 + 600; t < t0 + day - 700; t += 3600) {
        step += 100;
        events.push_back(StepsAt(kRun, t, step, step * 1000));
      }
      if (a < blamed.size()) events.push_back(Failed(kRun, t0 + day - 600, blamed[a]));
    }
    ASSERT_TRUE(Report(events).ok());
    std::vector<v1::Event> ablation = {Launch(kAblation, 0, 1, Pool(1, 8))};
    for (int h = 1; h <= 7 * 24; ++h) ablation.push_back(StepsAt(kAblation, h * 3600.0, h * 10, h * 10000));
    ASSERT_TRUE(Report(ablation).ok());
  }

  v1::NodeLedger Nodes(const std::string& run, grpc::Status* status = nullptr) {
    grpc::ClientContext ctx;
    v1::ListNodesRequest request;
    request.set_run(run);
    v1::NodeLedger out;
    grpc::Status st = stub_->ListNodes(&ctx, request, &out);
    if (status)
      *status = st;
    else
      EXPECT_TRUE(st.ok()) << st.error_message();
    return out;
  }

  grpc::Status WhatIf(const std::string& run, const std::vector<std::string>& exclude, v1::WhatIfResponse* out) {
    grpc::ClientContext ctx;
    v1::WhatIfRequest request;
    request.set_run(run);
    for (const std::string& n : exclude) request.add_exclude_nodes(n);
    return stub_->WhatIf(&ctx, request, out);
  }
};

const v1::NodeVerdict* Find(const v1::NodeLedger& l, const std::string& node) {
  for (const v1::NodeVerdict& n : l.nodes()) {
    if (n.node() == node) return &n;
  }
  return nullptr;
}

TEST_F(NodesTest, TheLedgerCallsTheNodeThatKeepsFailingAndNoOther) {
  Fleet();
  const v1::NodeLedger all = Nodes("");
  EXPECT_EQ(all.runs(), 2u);
  EXPECT_EQ(all.runs_with_nodes(), 2u);
  EXPECT_EQ(all.nodes_size(), 16);
  EXPECT_EQ(all.failures(), 7u);
  EXPECT_EQ(all.tested(), 16u);
  ASSERT_FALSE(all.nodes().empty());
  const v1::NodeVerdict& first = all.nodes(0);  // suspects first
  EXPECT_EQ(first.node(), "n07");
  EXPECT_TRUE(first.suspect());
  EXPECT_EQ(first.reason(), "failures");
  EXPECT_EQ(first.failures(), 5u);
  EXPECT_EQ(first.attempts(), 9u);  // 8 launches of the flagship, 1 of the ablation
  // Held 7 whole launches up to their failures, the 8th up to its latest event (now), and
  // the ablation's week.
  EXPECT_GT(first.node_hours(), 7 * 23.8 + 7 * 24);
  EXPECT_LT(first.p_value(), all.threshold());
  EXPECT_NE(first.evidence().find("5 failures in"), std::string::npos) << first.evidence();
  EXPECT_EQ(all.exclude(), "--exclude=n07");
  for (const v1::NodeVerdict& n : all.nodes()) {
    if (n.node() != "n07") {
      EXPECT_FALSE(n.suspect()) << n.node() << ": " << n.evidence();
    }
  }
  // n09 was held by the flagship alone: the ablation's week less, and one run named.
  const v1::NodeVerdict* n09 = Find(all, "n09");
  ASSERT_NE(n09, nullptr);
  EXPECT_EQ(n09->runs_size(), 1);
  EXPECT_EQ(first.runs_size(), 2);
  EXPECT_NEAR(first.node_hours() - n09->node_hours(), 7 * 24, 1e-6);

  // One run's nodes only; an unknown run is NOT_FOUND.
  const v1::NodeLedger ablation = Nodes(kAblation);
  EXPECT_EQ(ablation.nodes_size(), 8);
  EXPECT_EQ(Find(ablation, "n07")->suspect(), true);  // the verdict is the fleet's
  EXPECT_EQ(Find(ablation, "n09"), nullptr);
  grpc::Status st;
  Nodes("no-such-run", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);

  // Kept across a restart (the books are in the snapshots and the log).
  Restart();
  const v1::NodeLedger again = Nodes("");
  EXPECT_EQ(again.nodes(0).node(), "n07");
  EXPECT_EQ(again.nodes(0).failures(), 5u);
  EXPECT_NEAR(again.node_hours(), all.node_hours(), 1e-6);
}

TEST_F(NodesTest, TheStatusNamesTheSuspectAndTheOptionThatDrainsIt) {
  Fleet();
  const v1::RunStatus s = Status(kRun);
  EXPECT_TRUE(s.nodes().named());
  EXPECT_EQ(s.nodes().nodes(), 16u);
  ASSERT_EQ(s.nodes().suspects_size(), 1);
  EXPECT_EQ(s.nodes().suspects(0).node(), "n07");
  EXPECT_EQ(s.nodes().exclude(), "--exclude=n07");
  const std::string text = cli::FormatRunStatus(s);
  EXPECT_NE(text.find("16 nodes held or named; SUSPECT n07 (5 failures in"), std::string::npos) << text;
  EXPECT_NE(text.find("drain with --exclude=n07"), std::string::npos) << text;
  // The ablation held n01-n08: n07 is among them.
  EXPECT_EQ(Status(kAblation).nodes().suspects_size(), 1);

  // A run whose events name no nodes: everything as before, and the status says what is
  // missing.
  ASSERT_TRUE(Create(FlagshipPlan(), nullptr, "anonymous").ok());
  ASSERT_TRUE(Report({StartedAt("anonymous", 0, 1, 0), StepsAt("anonymous", 600, 10, 10000)}).ok());
  const v1::RunStatus anon = Status("anonymous");
  EXPECT_FALSE(anon.nodes().named());
  EXPECT_EQ(anon.nodes().suspects_size(), 0);
  EXPECT_NE(anon.nodes().note().find("no node attribution"), std::string::npos);
  EXPECT_NE(cli::FormatRunStatus(anon).find("nodes                  no node attribution"), std::string::npos)
      << cli::FormatRunStatus(anon);
}

// `flightplan nodes`: the table with the evidence and the drain option, --suspects, --json with
// the contract's field names, and an unknown run refused (exit 1).
TEST_F(NodesTest, TheNodesCommandPrintsTheLedger) {
  cli::ClientOptions client;
  client.server = absl::StrCat("127.0.0.1:", daemon_->grpc_port());
  std::ostringstream out, err;
  // Before any event names a node: what attribution needs.
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  EXPECT_EQ(cli::RunNodes(client, {}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("no node attribution"), std::string::npos) << out.str();
  Fleet();
  out.str("");
  EXPECT_EQ(cli::RunNodes(client, {}, out, err), 0) << err.str();
  const std::string table = out.str();
  EXPECT_NE(table.find("n07"), std::string::npos);
  EXPECT_NE(table.find("suspect (failures): 5 failures in"), std::string::npos) << table;
  EXPECT_NE(table.find("drain: --exclude=n07"), std::string::npos) << table;
  EXPECT_NE(table.find("16 nodes from 2 of 2 runs"), std::string::npos) << table;
  out.str("");
  EXPECT_EQ(cli::RunNodes(client, {.run = "", .suspects = true, .json = true}, out, err), 0);
  v1::NodeLedger parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &parsed).ok()) << out.str();
  ASSERT_EQ(parsed.nodes_size(), 1);
  EXPECT_EQ(parsed.nodes(0).node(), "n07");
  EXPECT_EQ(parsed.exclude(), "--exclude=n07");
  for (const char* field : {"\"node_hours\"", "\"slow_stretches\"", "\"suspect\"", "\"reason\"", "\"exclude\""}) {
    EXPECT_NE(out.str().find(field), std::string::npos) << field;
  }
  out.str("");
  EXPECT_EQ(cli::RunNodes(client, {.run = "nope", .suspects = false, .json = false}, out, err), 1);
  EXPECT_NE(err.str().find("NOT_FOUND"), std::string::npos) << err.str();
}

TEST_F(NodesTest, TheWhatIfWithoutTheSuspectTakesItsExcessOut) {
  Fleet();
  v1::WhatIfResponse r;
  grpc::Status st = WhatIf(kRun, {"n07"}, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(r.outcomes_size(), 2);
  const v1::WhatIfOutcome& base = r.outcomes(0);
  const v1::WhatIfOutcome& without = r.outcomes(1);
  // 5 failures against an expectation of about 7 x 1/16: about 4.6 of 7 in excess.
  EXPECT_EQ(without.name().rfind("without n07 (4.", 0), 0u) << without.name();
  EXPECT_NE(without.name().find("of 7 failures in excess"), std::string::npos) << without.name();
  EXPECT_GT(without.mtbf_seconds(), 2 * base.mtbf_seconds());
  EXPECT_LT(without.projected_budget_seconds(), base.projected_budget_seconds());
  EXPECT_LE(convert::TimeFromProto(without.finish_p50()), convert::TimeFromProto(base.finish_p50()));

  // Leaving out a node without excess changes nothing much; a node the run never held, or a
  // run without nodes, is refused by name.
  ASSERT_TRUE(WhatIf(kRun, {"n16"}, &r).ok());
  EXPECT_NE(r.outcomes(1).name().find("(0.0 of 7 failures in excess)"), std::string::npos) << r.outcomes(1).name();
  st = WhatIf(kRun, {"n07", "n99"}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("exclude_nodes[1] 'n99'"), std::string::npos) << st.error_message();
  ASSERT_TRUE(Create(FlagshipPlan(), nullptr, "anonymous").ok());
  ASSERT_TRUE(Report({StartedAt("anonymous", 0, 1, 0)}).ok());
  st = WhatIf("anonymous", {"n07"}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("no node attribution"), std::string::npos) << st.error_message();
}

// The scrape: a series per suspect and reason, none per healthy node; the run-node info
// series only with the flag.
TEST_F(NodesTest, TheScrapeHasSuspectsOnlyAndNodeInfoBehindItsFlag) {
  metrics_ = "127.0.0.1:0";
  Restart();
  Fleet();
  for (const bool info : {false, true}) {
    node_info_metrics_ = info;
    Restart();
    const std::string scrape = HttpGet(daemon_->metrics_port(), "/metrics");
    EXPECT_NE(scrape.find("flightplan_node_suspect{node=\"n07\",reason=\"failures\"} 1"), std::string::npos) << scrape;
    EXPECT_EQ(scrape.find("flightplan_node_suspect{node=\"n03\""), std::string::npos);
    EXPECT_EQ(scrape.find("flightplan_run_node_info{") != std::string::npos, info);
    if (info) {
      // The flagship's 8th launch holds all 16; the ablation's week, n01-n08.
      EXPECT_NE(scrape.find("flightplan_run_node_info{run=\"dense-70b-10t\",node=\"n16\"} 1"), std::string::npos)
          << scrape;
      EXPECT_NE(scrape.find("flightplan_run_node_info{run=\"ablation\",node=\"n08\"} 1"), std::string::npos);
      EXPECT_EQ(scrape.find("flightplan_run_node_info{run=\"ablation\",node=\"n09\"}"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace flightplan::testing
