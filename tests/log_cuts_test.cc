// One log, cut two ways, one accounting (issue 37): every relaunching fixture, read whole and
// as the per-job files Slurm writes with `-o job-%j.out` (cut at each launch), accounts the
// same seconds, category by category; and so does each with its relaunch's lines before its
// first iteration undated, the case that booked a relaunch as startup in the whole log and
// as downtime in the cut files (docs/clients.md, "Lines without a time").
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/log_events.h"
#include "gtest/gtest.h"
#include "tests/log_support.h"

namespace flightplan::cli {
namespace {

// A relaunching fixture, the options it is read with, and the first line of each launch's
// own output (a per-job file begins there).
struct Fixture {
  std::string name;
  LogOptions options;
  std::regex launch;
  std::vector<std::string> lines;
};

LogOptions Backfill(LogFormat format, int64_t seq_len = 0) {
  LogOptions o;
  o.format = format;
  o.backfill = true;
  o.seq_len = seq_len;
  return o;
}

std::vector<Fixture> Fixtures() {
  const std::regex megatron("^(using world size|------------------------ arguments)");
  // Not NeMo 2's (nemo-v2.4.0.log): its relaunch prints no timestamp before the log ends (its
  // step lines are a bare print), so the relaunch's per-job file cannot be dated from the log
  // at all, and a backfill says its lines rather than send them (docs/clients.md).
  std::vector<Fixture> out = {
      {"megatron-core_v0.19.0.log", Backfill(LogFormat::kMegatron), megatron, {}},
      {"megatron-core_v0.19.0.log dying of NCCL", Backfill(LogFormat::kMegatron), megatron, MegatronDyingOfNccl()},
      {"megatron-core_v0.5.0.log", Backfill(LogFormat::kMegatron), megatron, {}},
      {"torchtitan-v0.2.2.log", Backfill(LogFormat::kTorchtitan), std::regex("Starting job"), {}},
      {"torchtitan-main.log", Backfill(LogFormat::kTorchtitan), std::regex("Trainer is initialized"), {}},
      {"deepspeed-v0.16.4.log", Backfill(LogFormat::kDeepSpeed, 2048), std::regex("DeepSpeed info: version="), {}},
      {"deepspeed-v0.14.5.log", Backfill(LogFormat::kDeepSpeed, 2048), std::regex("DeepSpeed info: version="), {}},
      {"megatron-bridge-v0.6.0.log",
       Backfill(LogFormat::kMegatron, 4096),
       std::regex("successfully loaded checkpoint"),
       {}},
  };
  for (Fixture& f : out) {
    if (f.lines.empty()) f.lines = ReadLines(f.name);
  }
  return out;
}

// The launches numbered as the daemon numbers them: the attempt launched at that instant,
// else one past the latest (per-job files and a restarted tail continue one run).
struct Numbering {
  std::map<absl::Time, uint32_t> launched;
  uint32_t latest = 0;
};
LogOptions Numbered(LogOptions o, Numbering& n) {
  o.number_launch = [&n](absl::Time at, uint32_t) {
    auto [it, added] = n.launched.emplace(at, n.latest + 1);
    if (added) ++n.latest;
    return it->second;
  };
  return o;
}

std::vector<std::vector<std::string>> CutAtLaunches(const Fixture& f) {
  std::vector<std::vector<std::string>> jobs;
  for (const std::string& line : f.lines) {
    if (jobs.empty() || std::regex_search(line, f.launch)) jobs.emplace_back();
    jobs.back().push_back(line);
  }
  return jobs;
}

// The relaunches' lines before their first iteration with their timestamps gone: Megatron's
// `datetime:` lines (its iterations keep theirs).
const std::regex kIteration(R"(\] iteration +[0-9]+/)");

std::vector<std::string> UndatedRelaunches(const Fixture& f) {
  std::vector<std::string> out;
  int launches = 0;
  bool before_iteration = false;
  for (const std::string& line : f.lines) {
    if (std::regex_search(line, f.launch)) before_iteration = ++launches >= 2;
    if (std::regex_search(line, kIteration)) before_iteration = false;
    if (before_iteration && absl::StrContains(line, "datetime:")) continue;
    out.push_back(line);
  }
  return out;
}

void ExpectSameAccounting(const forecast::RunState& a, const forecast::RunState& b) {
  const std::pair<const char*, double> pairs[][2] = {
      {{"productive", a.seconds.productive}, {"", b.seconds.productive}},
      {{"checkpoint", a.seconds.checkpoint}, {"", b.seconds.checkpoint}},
      {{"lost", a.seconds.lost}, {"", b.seconds.lost}},
      {{"startup", a.seconds.startup}, {"", b.seconds.startup}},
      {{"down_unplanned", a.seconds.down_unplanned}, {"", b.seconds.down_unplanned}},
      {{"down_planned", a.seconds.down_planned}, {"", b.seconds.down_planned}},
      {{"stalled", a.seconds.stalled}, {"", b.seconds.stalled}},
  };
  for (const auto& p : pairs) EXPECT_NEAR(p[0].second, p[1].second, 1e-6) << p[0].first;
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.interruptions.size(), b.interruptions.size());
}

void WholeAndCut(const Fixture& f, const std::vector<std::string>& lines, int& cut) {
  Fixture g = f;
  g.lines = lines;
  const std::vector<std::vector<std::string>> jobs = CutAtLaunches(g);
  if (jobs.size() < 2) return;
  ++cut;
  Numbering whole_numbers, jobs_numbers;
  const Tailed whole = Feed(lines, Numbered(f.options, whole_numbers));
  ASSERT_TRUE(whole.status.ok()) << whole.status;
  std::vector<v1::Event> stitched;
  for (const std::vector<std::string>& job : jobs) {
    const Tailed t = Feed(job, Numbered(f.options, jobs_numbers));
    ASSERT_TRUE(t.status.ok()) << t.status;
    stitched.insert(stitched.end(), t.events.begin(), t.events.end());
  }
  ASSERT_GE(Split(whole.events).starts.size(), 2u);
  ExpectSameAccounting(Fold(whole.events), Fold(stitched));
}

TEST(LogCuts, EveryRelaunchingFixtureAccountsTheSameWholeAndCutAtEachLaunch) {
  int cut = 0;
  for (const Fixture& f : Fixtures()) {
    SCOPED_TRACE(f.name);
    WholeAndCut(f, f.lines, cut);
  }
  EXPECT_EQ(cut, 8);
}

TEST(LogCuts, AnUndatedRelaunchIsDatedByOneRuleWholeAndCut) {
  int cut = 0;
  for (const Fixture& f : Fixtures()) {
    // core_v0.5.0's iterations carry no time either: without its datetime lines its
    // per-job file cannot be dated at all (LogEvents.APerJobFileWithoutATimestamp...).
    if (!absl::StartsWith(f.name, "megatron-core_v0.19.0")) continue;
    SCOPED_TRACE(f.name);
    const std::vector<std::string> lines = UndatedRelaunches(f);
    ASSERT_LT(lines.size(), f.lines.size());  // datetime lines went
    WholeAndCut(f, lines, cut);
    // The rule: a launch line without a time takes the first timestamp after it (its own
    // output's first), never the last one before it (the previous attempt's end): the
    // relaunch is dated at its first iteration, the first dated line of its output.
    Numbering n;
    const Tailed whole = Feed(lines, Numbered(f.options, n));
    const Kinds k = Split(whole.events);
    ASSERT_EQ(k.starts.size(), 2u);
    const auto first =
        std::find_if(k.steps.begin(), k.steps.end(), [](const v1::Event& e) { return e.attempt() == 2; });
    ASSERT_NE(first, k.steps.end());
    EXPECT_EQ(k.starts[1].time().DebugString(), first->time().DebugString());
    for (const v1::Event& e : whole.events) {
      if (e.attempt() == 1) {
        EXPECT_LE(convert::TimeFromProto(e.time()), convert::TimeFromProto(k.starts[1].time()));
      }
    }
  }
  EXPECT_EQ(cut, 2);
}

}  // namespace
}  // namespace flightplan::cli
