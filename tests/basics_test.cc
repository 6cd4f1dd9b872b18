// Trust the basics (issue 37), on the real flightpland and command line: a cause outside the
// vocabulary makes no series; refusals are counted per run and said in the daemon's log,
// once per run and reason a minute; tokens that cannot be right are flagged, naming the
// step, in the status and in the batch's answer; the checkpoint and outage gauges an
// on-call engineer is paged on; no observed MTBF before a failure.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/event_log.h"
#include "tests/http_get.h"
#include "tests/subprocess.h"

namespace flightplan {
namespace {

using testing::CheckpointAt;
using testing::Cli;
using testing::DaemonProcess;
using testing::HttpGet;
using testing::InterruptedAt;
using testing::kRun;
using testing::SendBatch;
using testing::StartedAt;
using testing::StepsAt;
using testing::TempDir;

const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

v1::EventBatch Batch(std::vector<v1::Event> events) {
  v1::EventBatch b;
  for (v1::Event& e : events) *b.add_events() = std::move(e);
  return b;
}

// The lines of a scrape that start with `prefix`.
std::vector<std::string> Lines(const std::string& scrape, const std::string& prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line);
  }
  return out;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Basics, ACauseOutsideTheVocabularyIsOtherAndMakesNoSeries) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/b.db", dir.path() + "/d.log", /*metrics=*/true);
  ASSERT_EQ(Cli(d.address(), {"create", kFlagship}).exit_code, 0);
  ASSERT_TRUE(SendBatch(d.address(), Batch({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 600, 10, 1000)})).ok());
  // The issue's command, as an operator types it.
  const auto r = Cli(d.address(), {"report", kRun, "--interruption", "bogus-cause", "--time", "2027-01-04T00:20:00Z"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const v1::RunStatus s = d.Status();
  ASSERT_EQ(s.interruptions_size(), 1) << s.DebugString();
  EXPECT_EQ(s.interruptions(0).cause(), "other");
  const std::string scrape = HttpGet(d.metrics_port(), "/metrics");
  EXPECT_EQ(scrape.find("bogus-cause"), std::string::npos);
  EXPECT_NE(scrape.find(R"(flightplan_interruptions_total{run="dense-70b-10t",cause="other",planned="false"} 1)"),
            std::string::npos)
      << scrape;
  // A word inside it is kept as it is.
  ASSERT_TRUE(SendBatch(d.address(), Batch({StartedAt(kRun, 1800, 2, 0), InterruptedAt(kRun, 1900, "ecc")})).ok());
  const v1::RunStatus after = d.Status();
  ASSERT_EQ(after.interruptions_size(), 2) << after.DebugString();
  EXPECT_TRUE(after.interruptions(0).cause() == "ecc" || after.interruptions(1).cause() == "ecc")
      << after.DebugString();
}

TEST(Basics, RefusalsAreCountedPerRunAndSaidInTheLogOncePerRunAndReasonAMinute) {
  TempDir dir;
  const std::string log = dir.path() + "/d.log";
  DaemonProcess d(dir.path() + "/b.db", log, /*metrics=*/true);
  ASSERT_EQ(Cli(d.address(), {"create", kFlagship}).exit_code, 0);
  ASSERT_TRUE(SendBatch(d.address(), Batch({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 600, 10, 5000)})).ok());
  // A typo'd run, three times (4 events each); tokens going backwards, twice.
  const std::string typo = "dense-70b-10T";
  for (int i = 0; i < 3; ++i) {
    const grpc::Status st =
        SendBatch(d.address(), Batch({StartedAt(typo, 10 * i, 1, 0), StepsAt(typo, 10 * i + 1, 1, 1),
                                      StepsAt(typo, 10 * i + 2, 2, 2), CheckpointAt(typo, 10 * i + 3, 2, 0)}));
    ASSERT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  }
  for (int i = 0; i < 2; ++i) {
    const grpc::Status st = SendBatch(d.address(), Batch({StepsAt(kRun, 700 + i, 11 + i, 10)}));
    ASSERT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
  }
  const std::string scrape = HttpGet(d.metrics_port(), "/metrics");
  // The typo is no series of its own: counted without a run label.
  EXPECT_EQ(scrape.find(typo), std::string::npos) << scrape;
  EXPECT_EQ(Lines(scrape, R"(flightplan_ingest_rejected_events_total{code="not_found",run=""} 12)").size(), 1u)
      << scrape;
  EXPECT_EQ(
      Lines(scrape, R"(flightplan_ingest_rejected_events_total{code="failed_precondition",run="dense-70b-10t"} 2)")
          .size(),
      1u)
      << scrape;
  // The log names the typo and the reason, once a minute for each.
  const std::string text = d.child().WaitForLog("FAILED_PRECONDITION", 10);
  EXPECT_EQ(Count(text, "refused 4 events of run 'dense-70b-10T' (NOT_FOUND)"), 1u) << text;
  EXPECT_NE(text.find("run 'dense-70b-10T' does not exist; create it first"), std::string::npos) << text;
  EXPECT_EQ(Count(text, "of run 'dense-70b-10t' (FAILED_PRECONDITION)"), 1u) << text;
  EXPECT_EQ(Count(text, "refused"), 2u) << text;
}

TEST(Basics, AnAuthenticationFailureIsSaidInTheLogWithTheCall) {
  TempDir dir;
  const std::string token = dir.Write("token", "s3cret\n");
  DaemonProcess d(dir.path() + "/b.db", dir.path() + "/d.log", /*metrics=*/false, {"--token-file", token});
  const auto r = Cli(d.address(), {"create", kFlagship});  // no token
  EXPECT_NE(r.exit_code, 0);
  const std::string text = d.child().WaitForLog("UNAUTHENTICATED on CreateRun", 10);
  EXPECT_NE(text.find("refused a call of run 'dense-70b-10t' (UNAUTHENTICATED on CreateRun): "), std::string::npos)
      << text;
}

TEST(Basics, PerStepTokensAndABurstAreFlaggedNamingTheStep) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/b.db", dir.path() + "/d.log");
  ASSERT_EQ(Cli(d.address(), {"create", kFlagship}).exit_code, 0);
  // Each step's tokens (4 Mi per step) instead of the lineage's count.
  v1::BatchAck ack;
  ASSERT_TRUE(SendBatch(d.address(),
                        Batch({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 300, 1, 4194304), StepsAt(kRun, 301, 2, 4194304),
                               StepsAt(kRun, 302, 3, 4194304)}),
                        &ack)
                  .ok());
  ASSERT_EQ(ack.flags_size(), 1) << ack.DebugString();  // once, not at every step
  EXPECT_NE(ack.flags(0).find("run dense-70b-10t: steps.tokens did not grow from step 1 to step 2 (4194304 tokens"),
            std::string::npos)
      << ack.flags(0);
  v1::RunStatus s = d.Status();
  ASSERT_EQ(s.flags_size(), 1) << s.DebugString();
  EXPECT_TRUE(absl::StartsWith(s.flags(0), "steps.tokens did not grow from step 1 to step 2")) << s.flags(0);

  // 15,000 steps of 4 Mi tokens in half a second, cumulative now: 63e9 tokens, hours of the
  // plan's fleet at 100% MFU (8.96e6 tokens/s) in no time.
  std::vector<v1::Event> burst;
  for (int i = 1; i <= 15000; ++i) {
    burst.push_back(StepsAt(kRun, 400 + 0.5 * i / 15000, 3 + i, 4194304LL * (1 + i)));
  }
  std::vector<std::string> flags;  // in batches under the daemon's limit
  for (const v1::EventBatch& b : testing::Batches(burst, 5000)) {
    v1::BatchAck burst_ack;
    ASSERT_TRUE(SendBatch(d.address(), b, &burst_ack).ok());
    flags.insert(flags.end(), burst_ack.flags().begin(), burst_ack.flags().end());
  }
  ASSERT_EQ(flags.size(), 1u);
  // The first step past a minute of the fleet's work beyond the interval since the hour's
  // oldest sample (the launch, at 0 s, 0 tokens): step N holds 4 Mi x (N - 2) tokens, and
  // 8.96e6 x (400 + 60) s = 4.12e9 tokens are passed at N = 985.
  EXPECT_NE(flags[0].find("steps.tokens arrived faster than the plan's fleet trains them"), std::string::npos)
      << flags[0];
  EXPECT_NE(flags[0].find("4.123e+09 tokens in 400 s up to step 985 "), std::string::npos) << flags[0];
  s = d.Status();
  EXPECT_EQ(s.flags_size(), 2) << s.DebugString();  // the status's own rate check waits for 10 min of work
}

TEST(Basics, CheckpointsAndMtbfAsAnOnCallEngineerReadsThem) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/b.db", dir.path() + "/d.log", /*metrics=*/true);
  ASSERT_EQ(Cli(d.address(), {"create", kFlagship}).exit_code, 0);
  // Saves every 600 s of one launch, then 900 s of work since the last.
  ASSERT_TRUE(SendBatch(d.address(), Batch({StartedAt(kRun, 0, 1, 0), StepsAt(kRun, 300, 10, 1000),
                                            CheckpointAt(kRun, 600, 20, 5), StepsAt(kRun, 900, 30, 3000),
                                            CheckpointAt(kRun, 1200, 40, 5), StepsAt(kRun, 1500, 50, 5000),
                                            CheckpointAt(kRun, 1800, 60, 5), StepsAt(kRun, 2700, 90, 9000)}))
                  .ok());
  const v1::RunStatus s = d.Status();
  const v1::Reliability& r = s.reliability();
  EXPECT_DOUBLE_EQ(r.observed_checkpoint_interval_seconds(), 600);
  EXPECT_EQ(r.last_checkpoint_time().seconds(), testing::T0() + 1800);
  EXPECT_NEAR(r.unsaved_work_seconds(), 900, 1e-6);
  EXPECT_EQ(r.observed_mtbf_seconds(), 0);
  EXPECT_EQ(s.outage().seconds(), 0);
  EXPECT_EQ(s.outage().allowance_seconds(), 900);  // max(120 + 600, 15 min)
  const std::string scrape = HttpGet(d.metrics_port(), "/metrics");
  for (const std::string& want :
       {std::string(R"(flightplan_unsaved_work_seconds{run="dense-70b-10t"} 900)"),
        absl::StrCat(R"(flightplan_last_checkpoint_timestamp_seconds{run="dense-70b-10t"} )", testing::T0() + 1800),
        std::string(R"(flightplan_checkpoint_interval_seconds{run="dense-70b-10t",kind="observed"} 600)"),
        std::string(R"(flightplan_outage_allowance_seconds{run="dense-70b-10t"} 900)")}) {
    EXPECT_EQ(Lines(scrape, want).size(), 1u) << want << "\n" << scrape;
  }
  // No failure yet: no observed MTBF (a 0 read as a failure every instant).
  EXPECT_TRUE(Lines(scrape, R"(flightplan_mtbf_seconds{run="dense-70b-10t",kind="observed"})").empty()) << scrape;
  const auto text = Cli(d.address(), {"status", kRun});
  EXPECT_NE(text.out.find("MTBF none yet observed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("observed every 10.0 min, plan 8.6 min, Daly's advice"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("15.0 min of work unsaved"), std::string::npos) << text.out;
  // A restore to the last save: nothing unsaved at the relaunch.
  ASSERT_TRUE(SendBatch(d.address(), Batch({InterruptedAt(kRun, 2800, "gpu"), StartedAt(kRun, 3400, 2, 60)})).ok());
  EXPECT_NEAR(d.Status().reliability().unsaved_work_seconds(), 0, 1e-6);
}

// A log read in the wrong format is an error that says so, not "0 launches, 0 events".
TEST(Basics, ALogInAnotherFormatIsRefusedNamingTheFormatAndItsFirstLines) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/b.db", dir.path() + "/d.log");
  ASSERT_EQ(Cli(d.address(), {"create", kFlagship}).exit_code, 0);
  const std::string log = std::string(FLIGHTPLAN_LOGS_DIR) + "/megatron-core_v0.19.0.log";
  const auto r = Cli(d.address(), {"tail", "--run", kRun, "--format", "torchtitan", "--tokens-per-step", "100",
                                   "--from-start", "--exit-at-eof", log});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("is a torchtitan line"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--format megatron recognises"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  | using world size"), std::string::npos) << r.err;  // the log's first line
  EXPECT_NE(r.err.find("nothing was sent"), std::string::npos) << r.err;
  EXPECT_EQ(d.Events(), 0u);
  // The right format reads it.
  const auto ok =
      Cli(d.address(), {"tail", "--run", kRun, "--format", "megatron", "--from-start", "--exit-at-eof", log});
  EXPECT_NE(ok.out.find("2 launches"), std::string::npos) << ok.out << ok.err;
}

}  // namespace
}  // namespace flightplan
