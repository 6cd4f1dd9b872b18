// `flightplan plan` as a user runs it: the real binary, its exit codes and its output.
#include <string>

#include "absl/strings/str_cat.h"
#include "flightplan/v1/plan.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace flightplan::cli {
namespace {

using testing::RunProcess;
using testing::TempDir;

const std::string kBin = FLIGHTPLAN_BIN;
const std::string kFlagship = std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml";

std::string Flagship() {
  testing::ProcessResult cat = RunProcess({"/bin/cat", kFlagship});
  return cat.out;
}

// The flagship with one line replaced.
std::string FlagshipWith(const std::string& from, const std::string& to) {
  std::string text = Flagship();
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PlanCommand, FlagshipPrintsTheFullReportAndExitsZero) {
  const auto r = RunProcess({kBin, "plan", kFlagship});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* section :
       {"Findings", "Compute", "Fleet and layout", "Checkpoints", "Failures", "Schedule", "Power", "Data"}) {
    EXPECT_NE(r.out.find(section), std::string::npos) << section;
  }
  for (const char* line : {"active compute", "checkpoint overhead", "failure budget", "availability", "contingency",
                           "EFLOP/s", "MW", "TB", "days"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
  EXPECT_NE(r.out.find("none: the plan is consistent"), std::string::npos);
}

TEST(PlanCommand, JsonParsesBackIntoPlanReport) {
  const auto r = RunProcess({kBin, "plan", kFlagship, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::PlanReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &report).ok()) << r.out;
  EXPECT_EQ(report.name(), "dense-70b-10t");
  EXPECT_EQ(report.findings_size(), 0);
  EXPECT_EQ(report.batch().tokens_per_step(), 2048u * 8192);
  EXPECT_DOUBLE_EQ(report.checkpoint().size_bytes(), 980e9);
  EXPECT_GT(report.schedule().total_seconds(), report.schedule().active_compute_seconds());
  // Proto field names, not lowerCamelCase.
  EXPECT_NE(r.out.find("\"active_compute_seconds\""), std::string::npos);
  EXPECT_NE(r.out.find("\"finish_time\": \"2027-"), std::string::npos);
}

TEST(PlanCommand, ErrorFindingExitsOne) {
  TempDir dir;
  const std::string path = dir.Write("bad.yaml", FlagshipWith("token_dtype: uint32", "token_dtype: uint16"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("ERROR   TOKEN_DTYPE_OVERFLOW: vocab_size 128256 does not fit token_dtype "
                       "uint16 (max 65536 ids)."),
            std::string::npos)
      << r.out;
  // Findings come first: before the compute section.
  EXPECT_LT(r.out.find("TOKEN_DTYPE_OVERFLOW"), r.out.find("Compute"));
}

TEST(PlanCommand, WarningsAloneExitZero) {
  TempDir dir;
  const std::string path = dir.Write("warn.yaml", FlagshipWith("dataset_tokens: 15e12", "dataset_tokens: 5e12"));
  const auto r = RunProcess({kBin, "plan", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  v1::PlanReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &report).ok());
  ASSERT_EQ(report.findings_size(), 1);
  EXPECT_EQ(report.findings(0).code(), "DATASET_TOO_SMALL");
  EXPECT_EQ(report.findings(0).severity(), v1::Finding::WARNING);
  EXPECT_NE(report.findings(0).message().find("2 epochs"), std::string::npos) << report.findings(0).message();
}

// failures.slowdown_fix_hours is read from the file, shown among the failure figures, and a
// value that cannot be a time is refused naming the key and the value.
TEST(PlanCommand, ASlowdownFixTimeIsShownAndABadOneRefused) {
  TempDir dir;
  const auto plain = RunProcess({kBin, "plan", kFlagship});
  EXPECT_EQ(plain.out.find("slowdown fixed in"), std::string::npos);
  const std::string path =
      dir.Write("fix.yaml", FlagshipWith("  failure_domain: node", "  failure_domain: node\n  slowdown_fix_hours: 72"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("slowdown fixed in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.0 days"), std::string::npos) << r.out;
  const std::string bad =
      dir.Write("bad.yaml", FlagshipWith("  failure_domain: node", "  failure_domain: node\n  slowdown_fix_hours: -5"));
  const auto b = RunProcess({kBin, "plan", bad});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.out.find("failures.slowdown_fix_hours"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("-5"), std::string::npos) << b.out;
}

// failures.crisis_fix_days likewise: shown when given, refused naming the key when not a time.
TEST(PlanCommand, ACrisisFixTimeIsShownAndABadOneRefused) {
  TempDir dir;
  const auto plain = RunProcess({kBin, "plan", kFlagship});
  EXPECT_EQ(plain.out.find("crisis fixed in"), std::string::npos);
  const std::string path =
      dir.Write("fix.yaml", FlagshipWith("  failure_domain: node", "  failure_domain: node\n  crisis_fix_days: 5"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("crisis fixed in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5.0 days"), std::string::npos) << r.out;
  const std::string bad =
      dir.Write("bad.yaml", FlagshipWith("  failure_domain: node", "  failure_domain: node\n  crisis_fix_days: 0"));
  const auto b = RunProcess({kBin, "plan", bad});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.out.find("failures.crisis_fix_days"), std::string::npos) << b.out;
}

TEST(PlanCommand, ParseErrorExitsTwoNamingLineAndKey) {
  TempDir dir;
  const std::string text = FlagshipWith("  hidden: 8192", "  hiden: 8192");
  const std::string path = dir.Write("typo.yaml", text);
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  // The typo sits on the flagship's line of `hidden:`.
  const size_t line = 1 + std::count(text.begin(), text.begin() + text.find("hiden"), '\n');
  EXPECT_NE(r.err.find(path + ":" + std::to_string(line) + ": model.hiden: unknown key 'hiden'"), std::string::npos)
      << r.err;
}

TEST(PlanCommand, WrongTypeExitsTwo) {
  TempDir dir;
  const std::string path = dir.Write("type.yaml", FlagshipWith("gpus: 4096", "gpus: many"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fleet.gpus: expected a whole number, got 'many'"), std::string::npos) << r.err;
}

TEST(PlanCommand, UnreadableFileExitsTwo) {
  const auto r = RunProcess({kBin, "plan", "/nonexistent/plan.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/plan.yaml: cannot read"), std::string::npos) << r.err;
}

TEST(PlanCommand, ZeroBatchDoesNotCrashTheTable) {
  TempDir dir;
  const std::string path = dir.Write("zero.yaml", FlagshipWith("micro_batch: 1", "micro_batch: 0"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("layout.micro_batch 0 is invalid"), std::string::npos) << r.out;
}

TEST(PlanCommand, ReadsStandardInput) {
  const auto r = RunProcess({kBin, "plan", "-", "--json"}, Flagship());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\": \"dense-70b-10t\""), std::string::npos);
}

TEST(PlanCommand, UsageErrorsExitTwo) {
  EXPECT_EQ(RunProcess({kBin}).exit_code, 2);
  EXPECT_EQ(RunProcess({kBin, "plan"}).exit_code, 2);
  EXPECT_EQ(RunProcess({kBin, "plan", kFlagship, "--bogus"}).exit_code, 2);
  const auto help = RunProcess({kBin, "plan", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--deadline"), std::string::npos);
}

TEST(PlanCommand, DeadlineFindsTheSmallestFleet) {
  // The flagship on 4,096 GPUs finishes mid-February; a deadline of 2027-02-01 needs more.
  const auto r = RunProcess({kBin, "plan", kFlagship, "--deadline", "2027-02-01", "--json"});
  // The plan as written misses it (DEADLINE_MISSED), and the search answers: a fleet, exit 0.
  EXPECT_EQ(r.exit_code, 0) << r.err;
  v1::PlanReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &report).ok()) << r.out;
  ASSERT_TRUE(report.has_deadline_fleet());
  const v1::DeadlineFleet& fleet = report.deadline_fleet();
  EXPECT_TRUE(fleet.met()) << fleet.explanation();
  EXPECT_GT(fleet.gpus(), 4096u);
  EXPECT_EQ(fleet.gpus(), fleet.dp() * 32u);  // whole 32-GPU replicas (tp 8 x pp 4)
  EXPECT_LE(fleet.schedule().finish_time().seconds(), fleet.deadline().seconds());
  // The recipe holds: 2,048 sequences of 8,192 tokens per step, split over dp.
  constexpr uint32_t kBatch = 2048;
  EXPECT_FALSE(fleet.batch_changed());
  EXPECT_EQ(fleet.tokens_per_step(), uint64_t{kBatch} * 8192);
  EXPECT_EQ(kBatch % fleet.dp(), 0u);
  EXPECT_EQ(fleet.micro_batch() * fleet.grad_accum() * fleet.dp(), kBatch);

  // Replay that fleet, and the next smaller one that holds the batch, through the command.
  TempDir dir;
  auto with_fleet = [&](uint32_t dp) {
    std::string text = FlagshipWith("  gpus: 4096", "  gpus: " + std::to_string(dp * 32));
    text.replace(text.find("  dp: 128"), 9, "  dp: " + std::to_string(dp));
    text.replace(text.find("  grad_accum: 16"), 16, "  grad_accum: " + std::to_string(kBatch / dp));
    return dir.Write("dp" + std::to_string(dp) + ".yaml", text);
  };
  const auto met = RunProcess({kBin, "plan", with_fleet(fleet.dp()), "--deadline", "2027-02-01"});
  EXPECT_EQ(met.exit_code, 0) << met.out;
  uint32_t smaller = fleet.dp() - 1;
  while (kBatch % smaller != 0) --smaller;
  const auto missed = RunProcess({kBin, "plan", with_fleet(smaller), "--deadline", "2027-02-01"});
  EXPECT_EQ(missed.exit_code, 0) << "dp " << smaller;  // the search finds the larger fleet
  EXPECT_NE(missed.out.find("DEADLINE_MISSED"), std::string::npos);
  EXPECT_NE(missed.out.find(absl::StrCat(fleet.gpus(), " GPUs")), std::string::npos) << missed.out;
  // The efficiency that fleet is assumed to reach is said.
  EXPECT_NE(met.out.find("MFU end to end ("), std::string::npos) << met.out;
  EXPECT_GT(fleet.mfu(), 0.3);
  EXPECT_NEAR(fleet.mfu(), fleet.busy_mfu() * (1 - fleet.bubble_fraction()), 1e-9);

  // Growing the batch is asked for, and said.
  const auto grown = RunProcess({kBin, "plan", kFlagship, "--deadline", "2027-02-01", "--allow-batch-change"});
  EXPECT_NE(grown.out.find("the batch changed"), std::string::npos) << grown.out;
  EXPECT_NE(grown.out.find("a different recipe (asked for)"), std::string::npos) << grown.out;
}

TEST(PlanCommand, ADeadlineTheBatchCannotMeetSaysWhy) {
  // A pinned batch of 64 sequences splits over at most 64 replicas; the flagship on 64
  // replicas of 32 GPUs cannot train 10T tokens by mid-January: the batch is the reason.
  std::string text = FlagshipWith("  dp: 128", "  dp: 4");
  text.replace(text.find("  gpus: 4096"), 12, "  gpus: 128");
  TempDir dir;
  const auto r = RunProcess({kBin, "plan", dir.Write("small.yaml", text), "--deadline", "2027-01-20"});
  EXPECT_EQ(r.exit_code, 3);  // the plan is sound; no fleet meets the deadline
  EXPECT_NE(r.out.find("with the plan's global batch of 64 sequences per step: it splits over at most 64 replicas"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("failures from more nodes"), std::string::npos) << r.out;
}

TEST(PlanCommand, ImpossibleDeadlineIsSaidPlainly) {
  const auto r = RunProcess({kBin, "plan", kFlagship, "--deadline", "2027-01-05"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("NO FLEET MEETS THIS DEADLINE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest fleet's efficiency"), std::string::npos) << r.out;
  const auto bad = RunProcess({kBin, "plan", kFlagship, "--deadline", "soon"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--deadline"), std::string::npos);
}

// Exit codes a script can act on: 0 a fleet, 3 no fleet, 1 a plan that is wrong beyond its
// deadline, 2 a file that cannot be read; all four said in --help.
TEST(PlanCommand, TheDeadlineSearchHasItsOwnExitCode) {
  const auto help = RunProcess({kBin, "plan", "--help"});
  for (const char* said : {"Exit 0", "1: an error", "2: the file", "3: with --deadline, no fleet meets it"}) {
    EXPECT_NE(help.out.find(said), std::string::npos) << said << "\n" << help.out;
  }
  // A plan with an error besides its deadline: 1, whatever the search says.
  TempDir dir;
  const std::string broken = dir.Write("broken.yaml", FlagshipWith("  kv_heads: 8", "  kv_heads: 5"));
  const auto r = RunProcess({kBin, "plan", broken, "--deadline", "2027-02-01"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(RunProcess({kBin, "plan", kFlagship}).exit_code, 0);
}

// An invalid input prints its findings, not figures built on it (mfu 42 is not 4200%).
TEST(PlanCommand, AnInvalidInputPrintsTheFindingsOnly) {
  TempDir dir;
  const std::string path = dir.Write("mfu42.yaml", FlagshipWith("  busy_mfu: 0.40", "  mfu: 42"));
  const auto r = RunProcess({kBin, "plan", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("INVALID_VALUE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No figures: an input is invalid"), std::string::npos) << r.out;
  for (const char* figure : {"4200", "tokens/s", "Schedule", "Memory per GPU"}) {
    EXPECT_EQ(r.out.find(figure), std::string::npos) << figure << "\n" << r.out;
  }
  const auto j = RunProcess({kBin, "plan", path, "--json"});
  EXPECT_EQ(j.exit_code, 1);
  v1::PlanReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(j.out, &report).ok()) << j.out;
  EXPECT_GT(report.findings_size(), 0);
  EXPECT_FALSE(report.has_compute());
  EXPECT_FALSE(report.has_schedule());
  // A plan whose inputs are each valid still prints every figure with its error findings.
  const auto miss = RunProcess({kBin, "plan", dir.Write("late.yaml", FlagshipWith("2027-04-30", "2027-02-01"))});
  EXPECT_EQ(miss.exit_code, 1);
  EXPECT_NE(miss.out.find("DEADLINE_MISSED"), std::string::npos) << miss.out;
  EXPECT_NE(miss.out.find("tokens/s"), std::string::npos) << miss.out;
}

// `flightplan report` checks its counts as the JSON path does: a 20-digit token count or a
// negative step is refused (exit 2, naming the flag and the value), never clamped to the
// largest integer; the largest one that fits gets past the parsing (to the connection,
// which no daemon answers here: exit 1).
TEST(ReportCommand, CountsThatDoNotFitAreRefusedNotClamped) {
  const std::string nowhere = "127.0.0.1:1";
  auto r = RunProcess({kBin, "--server", nowhere, "report", "r", "--step", "1", "--tokens", "99999999999999999999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokens: '99999999999999999999' is not a whole number"), std::string::npos) << r.err;
  r = RunProcess({kBin, "--server", nowhere, "report", "r", "--step", "-3", "--tokens", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--step: '-3'"), std::string::npos) << r.err;
  r = RunProcess({kBin, "--server", nowhere, "report", "r", "--started", "4294967296"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--started"), std::string::npos) << r.err;
  r = RunProcess({kBin, "--server", nowhere, "report", "r", "--step", "1", "--tokens", "9223372036854775807"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("UNAVAILABLE"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace flightplan::cli
