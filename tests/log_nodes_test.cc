// Nodes and ranks from training logs (`flightplan tail`): the slowest rank of Megatron's
// per-rank timers and of NeMo's straggler report (Steps.slowest_rank), the host a crash
// names (Interruption.nodes: NCCL's lost peer, torchrun's root cause), the nodes a launch
// runs on (DeepSpeed's worker list; --nodes or SLURM_JOB_NODELIST when followed live).
// Fixtures: tests/logs/make_fixtures.py, from the programs' own format strings.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "cli/log_events.h"
#include "convert/event_convert.h"
#include "gtest/gtest.h"
#include "tests/log_support.h"

namespace flightplan::cli {
namespace {

// make_fixtures.py megatron_slow_rank: a block follows each iteration line and goes with the
// next report. The blocks after 10, 20 and 30 name ranks 1, 2, 3 (1% behind); from the block
// after 40 on, rank 13 (6%). forward-backward is the same on every rank and names none.
TEST(LogNodes, MegatronsPerRankTimersNameTheSlowestRankAndTheCrashItsHost) {
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(ReadLines("megatron-core_v0.19.0-slow-rank.log"), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.steps.size(), 8u);
  const int want_rank[] = {-1, 1, 2, 3, 13, 13, 13, 13};
  const double want_spread[] = {0, 0.01, 0.01, 0.01, 0.06, 0.06, 0.06, 0.06};
  for (size_t i = 0; i < 8; ++i) {
    const v1::Steps& s = k.steps[i].steps();
    EXPECT_EQ(s.has_slowest_rank() ? s.slowest_rank() : -1, want_rank[i]) << "report " << i;
    EXPECT_NEAR(s.rank_spread(), want_spread[i], 1e-9) << "report " << i;
  }
  // The death: NCCL on gpu-node-103 lost gpu-node-117, and torchrun's root cause is rank 13 on
  // gpu-node-117.cluster.local: one interruption naming the short name.
  ASSERT_EQ(k.stops.size(), 1u);
  EXPECT_EQ(k.stops[0].interruption().cause(), "nccl");
  ASSERT_EQ(k.stops[0].interruption().nodes_size(), 1);
  EXPECT_EQ(k.stops[0].interruption().nodes(0), "gpu-node-117");
  // Without the NCCL line, torchrun's summary alone names the host of PyTorch's NCCL error.
  std::vector<std::string> no_warn;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0-slow-rank.log")) {
    if (!absl::StrContains(l, "NCCL WARN")) no_warn.push_back(l);
  }
  const Kinds k2 = Split(Feed(no_warn, o).events);
  ASSERT_EQ(k2.stops.size(), 1u);
  ASSERT_EQ(k2.stops[0].interruption().nodes_size(), 1);
  EXPECT_EQ(k2.stops[0].interruption().nodes(0), "gpu-node-117");
}

// The fold, fed the tail's events and the launch's nodes (2 of 8 GPUs each, --nodes as a
// live tail inside the job gives them): rank 13 sits on the second node.
TEST(LogNodes, TheLiveLaunchCarriesItsNodesAndTheSlowRankMapsOntoThem) {
  LogOptions o;
  o.backfill = false;
  o.nodes = {"gpu-node-103", "gpu-node-117"};
  absl::Time clock = At(0);
  const Tailed t = Feed(ReadLines("megatron-core_v0.19.0-slow-rank.log"), o, [&clock](const std::string& line) {
    if (absl::StrContains(line, " iteration ")) clock += absl::Seconds(100);
    return clock;
  });
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 1u);
  ASSERT_EQ(k.starts[0].job_started().nodes_size(), 2);
  EXPECT_EQ(k.starts[0].job_started().nodes(1), "gpu-node-117");
  forecast::RunState s;
  s.settings.gpus_per_node = 8;
  for (const v1::Event& e : t.events) {
    absl::StatusOr<forecast::Event> fe = convert::EventFromProto(e);
    ASSERT_TRUE(fe.ok()) << fe.status();
    ASSERT_TRUE(forecast::ApplyEvent(s, *fe).ok());
  }
  ASSERT_FALSE(s.rank_marks.empty());
  EXPECT_EQ(s.rank_marks.back().node, "gpu-node-117");
  EXPECT_EQ(s.rank_marks.back().reports, 4u);  // the reports of 50..80
  ASSERT_NE(s.node_book, nullptr);
  EXPECT_EQ(s.node_book->nodes.at("gpu-node-117").failures, 1u);
  EXPECT_EQ(s.node_book->nodes.at("gpu-node-103").failures, 0u);
}

// make_fixtures.py nemo_straggler: from the report after step 24 rank 13 scores 0.91, the
// worst; before, the worst relative scores are 0.97 (another rank).
TEST(LogNodes, NemosStragglerReportNamesTheWorstRank) {
  LogOptions o;
  o.format = LogFormat::kNemo;
  o.backfill = false;
  o.seq_len = 4096;
  absl::Time clock = At(0);
  const Tailed t = Feed(ReadLines("nemo-v2.4.0-straggler.log"), o, [&clock](const std::string& line) {
    if (absl::StrContains(line, "Training epoch")) clock += absl::Seconds(10);
    return clock;
  });
  ASSERT_TRUE(t.status.ok()) << t.status;
  int named = 0;
  for (const v1::Event& e : Split(t.events).steps) {
    const int64_t step = e.steps().step();
    if (step % 8 != 1 || step == 1) {
      EXPECT_FALSE(e.steps().has_slowest_rank()) << "step " << step;
      continue;
    }
    ASSERT_TRUE(e.steps().has_slowest_rank()) << "step " << step;
    ++named;
    if (step > 24) {
      EXPECT_EQ(e.steps().slowest_rank(), 13) << "step " << step;
    } else {
      EXPECT_NE(e.steps().slowest_rank(), 13) << "step " << step;
    }
  }
  EXPECT_GE(named, 3);
}

// DeepSpeed's runner lists the workers before the launch (deepspeed/launcher/
// multinode_runner.py PDSHRunner.get_cmd; the line verbatim from a real two-node launch quoted
// in stas00/ml-engineering, "Emulate a Multi-Node Setup Using Just a Single Node"): the next launch carries them, in
// the hostfile's order.
TEST(LogNodes, DeepSpeedsWorkerListIsTheLaunchsNodes) {
  std::vector<std::string> lines = {
      "[2022-09-08 12:02:15,192] [INFO] [multinode_runner.py:65:get_cmd] Running on the following workers: "
      "worker-0,worker-1"};
  for (const std::string& l : ReadLines("deepspeed-v0.16.4.log")) lines.push_back(l);
  LogOptions o;
  o.format = LogFormat::kDeepSpeed;
  o.backfill = true;
  o.seq_len = 2048;
  const Tailed t = Feed(lines, o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  ASSERT_EQ(k.starts[0].job_started().nodes_size(), 2);
  EXPECT_EQ(k.starts[0].job_started().nodes(0), "worker-0");
  EXPECT_EQ(k.starts[0].job_started().nodes(1), "worker-1");
  EXPECT_EQ(k.starts[1].job_started().nodes_size(), 0);  // the relaunch's log listed none
}

}  // namespace
}  // namespace flightplan::cli

namespace flightplan::cli {
namespace {

// A hang that PyTorch's monitored barrier resolves: rank 0 names rank 13 as the one that did
// not arrive (ProcessGroupGloo.cpp monitoredBarrier's message); on a launch of 2 nodes of 8
// GPUs (the plan's), rank 13 sits on the second.
TEST(LogNodes, TheMonitoredBarriersRankIsPlacedOnItsNode) {
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0-slow-rank.log")) {
    if (absl::StrContains(l, "NCCL") || absl::StrContains(l, "Root Cause")) break;  // the death replaced
    lines.push_back(l);
  }
  lines.push_back("RuntimeError: [Rank 0]: Rank 13 failed to pass monitoredBarrier in 1800000 ms");
  LogOptions o;
  o.backfill = false;
  o.nodes = {"gpu-node-103", "gpu-node-117"};
  o.gpus_per_node = 8;
  absl::Time clock = At(0);
  const Tailed t = Feed(lines, o, [&clock](const std::string& line) {
    if (absl::StrContains(line, " iteration ")) clock += absl::Seconds(100);
    return clock;
  });
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.stops.size(), 1u);
  EXPECT_EQ(k.stops[0].interruption().cause(), "hang");
  ASSERT_EQ(k.stops[0].interruption().nodes_size(), 1);
  EXPECT_EQ(k.stops[0].interruption().nodes(0), "gpu-node-117");
  // Without the plan's GPUs per node the rank cannot be placed: no node is blamed.
  o.gpus_per_node = 0;
  clock = At(0);
  const Kinds k2 = Split(Feed(lines, o, [&clock](const std::string& line) {
                           if (absl::StrContains(line, " iteration ")) clock += absl::Seconds(100);
                           return clock;
                         }).events);
  ASSERT_EQ(k2.stops.size(), 1u);
  EXPECT_EQ(k2.stops[0].interruption().nodes_size(), 0);
}

}  // namespace
}  // namespace flightplan::cli
