// Training logs to events: the Megatron-LM and torchtitan fixtures (tests/logs, built from the
// projects' own format strings), folded as the daemon folds them, and the edge cases.
#include "cli/log_events.h"

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "forecast/accounting.h"
#include "gtest/gtest.h"
#include "tests/log_support.h"

namespace flightplan::cli {
namespace {

int64_t StepTokens(const Kinds& k, int64_t step, uint32_t attempt) {
  for (const v1::Event& e : k.steps) {
    if (e.steps().step() == step && e.attempt() == attempt) return e.steps().tokens();
  }
  return -1;
}

// Megatron-LM core_v0.19.0 (tests/logs/make_fixtures.py megatron_current): two launches,
// a synchronous save, an asynchronous one finalized later, the orderly exit.
void ExpectMegatronCurrent(const Tailed& t) {
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  // Launch 1 at its first print_datetime (00:00:30), from scratch; launch 2 at 00:40:00,
  // from the checkpoint it loaded.
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(30));
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 0);
  EXPECT_EQ(convert::TimeFromProto(k.starts[1].time()), At(2400));
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 60);
  // Tokens: consumed samples (64 per iteration) x seq_length 4,096.
  ASSERT_EQ(k.steps.size(), 12u);  // 10..80, then 70..100
  EXPECT_EQ(StepTokens(k, 10, 1), 640 * 4096);
  EXPECT_EQ(StepTokens(k, 100, 2), 6400 * 4096);
  EXPECT_EQ(convert::TimeFromProto(k.steps[0].time()), At(240));
  // Saves: 30 from 00:07:20.5 to 00:07:40.5; 60 asynchronous, scheduled from 00:12:41 to
  // 00:12:43 (finalized at 00:14:30, after iteration 70); 90 and 100 of 20 s each.
  ASSERT_EQ(k.saves.size(), 4u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 30);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 20);
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(460.5));
  EXPECT_EQ(k.saves[1].checkpoint_saved().step(), 60);
  EXPECT_DOUBLE_EQ(k.saves[1].checkpoint_saved().blocking_seconds(), 2);
  EXPECT_EQ(convert::TimeFromProto(k.saves[1].time()), At(763));
  EXPECT_EQ(k.saves[3].checkpoint_saved().step(), 100);
  // The exit at iteration 100 is a planned stop.
  ASSERT_EQ(k.stops.size(), 1u);
  EXPECT_TRUE(k.stops[0].interruption().planned());
  EXPECT_EQ(k.stops[0].interruption().cause(), "exit");
  EXPECT_EQ(convert::TimeFromProto(k.stops[0].time()), At(2942));

  const forecast::RunState s = Fold(t.events);
  EXPECT_DOUBLE_EQ(s.seconds.checkpoint, 20 + 2 + 20 + 20);
  // Lost, by hand: launch 1 trained from the save of 60 (00:12:43) to iteration 80
  // (00:16:03), 200 s, all redone after the restore to 60. The exit line comes 1 s after
  // the last save: work with nothing to show, 1 s more.
  EXPECT_NEAR(s.seconds.lost, 200 + 1, 1e-6);
  EXPECT_EQ(s.unplanned_interruptions, 1u);  // the silent death of launch 1
  EXPECT_EQ(s.planned_interruptions, 1u);    // the exit
  EXPECT_EQ(s.tokens, 6400 * 4096);
}

// Megatron's compute timers across ranks (make_fixtures.py megatron_straggler): the widest
// spread of a block, slowest over fastest minus 1, goes with the next iteration's report. By
// hand: 1010/1000 and 2020/2000 give 1% for the reports of 20, 30 and 40 (forward-backward's
// 3060/3050 is narrower); 1060/1000 and 2120/2000 give 6% from 50 on. The first report has
// none, and the block after the last iteration has no report to go with.
TEST(LogEvents, MegatronsTimersAcrossRanksGiveTheRankSpread) {
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(ReadLines("megatron-core_v0.19.0-straggler.log"), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);  // every timer line is read
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.steps.size(), 8u);
  const double want[] = {0, 0.01, 0.01, 0.01, 0.06, 0.06, 0.06, 0.06};
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(k.steps[i].steps().rank_spread(), want[i], 1e-9) << i;
  const forecast::RunState s = Fold(t.events);
  EXPECT_NEAR(s.rank_spread, 0.06, 1e-9);
  EXPECT_GT(s.typical_rank_spread, 0.01);
  EXPECT_LT(s.typical_rank_spread, 0.06);
  // The same lines without the timers: no spread.
  std::vector<std::string> plain;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0-straggler.log")) {
    if (l.find("-compute") == std::string::npos && l.find("forward-backward") == std::string::npos) plain.push_back(l);
  }
  for (const v1::Event& e : Split(Feed(plain, o).events).steps) EXPECT_EQ(e.steps().rank_spread(), 0);
}

TEST(LogEvents, MegatronCurrentWithItsArgumentsDump) {
  LogOptions o;
  o.backfill = true;
  ExpectMegatronCurrent(Feed(ReadLines("megatron-core_v0.19.0.log"), o));
}

TEST(LogEvents, MegatronCurrentWithoutTheDumpTakesTheRunsPlanOrSendsNothing) {
  std::vector<std::string> lines;
  bool dump = false;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0.log")) {
    if (absl::StrContains(l, "------ arguments ------")) dump = true;
    if (!dump) lines.push_back(l);
    if (absl::StrContains(l, "end of arguments")) dump = false;
  }
  LogOptions o;
  o.backfill = true;
  // No sequence length from anywhere: the first iteration stops it, and nothing came out
  // (not even launch 1's job_started, which came before).
  const Tailed none = Feed(lines, o);
  EXPECT_EQ(none.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(none.status.message()).find("pass --seq-len"), std::string::npos) << none.status;
  EXPECT_TRUE(none.events.empty());
  // The run's plan gives it: the same events as with the dump.
  o.plan_seq_len = 4096;
  ExpectMegatronCurrent(Feed(lines, o));
}

// An evaluation in a log followed live (issue 40): Megatron prints its validation block
// (megatron/training/training.py evaluate_and_print_results, core_v0.19.0: " validation loss
// at {prefix} | " + "{key} value: {:.6E} | {key} PPL: {:.6E} | ", between rows of len + 1
// dashes) when evaluate() returns, after the report of the iteration it follows: a span of
// kind eval from that report to the block, custom time in the run's accounting. A backfill
// cannot date the block (it prints no time) and sends no span.
TEST(LogEvents, MegatronsValidationBlockIsAnEvaluationSpanWhenFollowedLive) {
  const std::string block =
      " validation loss at iteration 20 | lm loss value: 9.850000E+00 | lm loss PPL: 1.896925E+04 | ";
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0.log")) {
    lines.push_back(l);
    if (absl::StrContains(l, "iteration       20/")) {
      lines.push_back(std::string(block.size() + 1, '-'));
      lines.push_back(block);
      lines.push_back(std::string(block.size() + 1, '-'));
    }
  }
  // Read as it is written: a line with a time at that time, the block 60 s after iteration 20.
  absl::Time latest = T("2027-01-04 00:00:00");
  auto read = [&latest](const std::string& line) {
    if (absl::StrContains(line, "validation loss at")) return T("2027-01-04 00:06:40");
    if (line.size() > 28 && line[0] == '[' && line[5] == '-') latest = T(line.substr(1, 26).c_str());
    return latest;
  };
  LogOptions o;
  o.seq_len = 4096;
  const Tailed live = Feed(lines, o, read);
  ASSERT_TRUE(live.status.ok()) << live.status;
  std::vector<v1::Event> spans;
  for (const v1::Event& e : live.events) {
    if (e.has_span_started() || e.has_span_ended()) spans.push_back(e);
  }
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].span_started().kind(), "eval");
  EXPECT_EQ(convert::TimeFromProto(spans[0].time()), T("2027-01-04 00:05:40"));
  EXPECT_EQ(spans[1].span_ended().kind(), "eval");
  EXPECT_EQ(convert::TimeFromProto(spans[1].time()), T("2027-01-04 00:06:40"));
  EXPECT_NEAR(Fold(live.events).seconds.custom, 60, 1e-6);
  // A backfill dates the block from the next report's stamp (tests/log_evals_test.cc); here it
  // is stamped as if nothing came between, so there is no evaluation to count.
  o.backfill = true;
  for (const v1::Event& e : Feed(lines, o).events) EXPECT_FALSE(e.has_span_started()) << e.ShortDebugString();
}

TEST(LogEvents, MegatronRampUpCountsTheSamplesEachBatchConsumed) {
  LogOptions o;
  o.backfill = true;
  const std::vector<std::string> lines = ReadLines("megatron-core_v0.15.0-rampup.log");
  const Tailed t = Feed(lines, o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  // The batch grows 16 -> 32 -> 48 -> 64 at 512, 1024 and 1536 samples (iterations 33, 49,
  // 60): 10 x 16 = 160 at 10; 32 x 16 + 8 x 32 = 768 at 40; 1024 + 2 x 48 = 1120 at 50;
  // 1024 + 11 x 48 + 64 = 1616 at 60. Each sample is 2,048 tokens.
  const std::vector<std::pair<int64_t, int64_t>> consumed = {{10, 160}, {20, 320},  {30, 480},
                                                             {40, 768}, {50, 1120}, {60, 1616}};
  for (const auto& [step, samples] : consumed) EXPECT_EQ(StepTokens(k, step, 1), samples * 2048) << step;
  // No timestamp on the save lines: the save timer's slowest rank (15,000 ms) is the save,
  // right after iteration 40 (00:07:00).
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 15);
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(435));
  const forecast::RunState s = Fold(t.events);
  EXPECT_DOUBLE_EQ(s.seconds.checkpoint, 15);
  EXPECT_DOUBLE_EQ(s.seconds.lost, 0);
  // Steps x a fixed batch would overcount a ramp: refused before anything is sent.
  LogOptions per_step;
  per_step.backfill = true;
  per_step.tokens_per_step = 64 * 2048;
  std::vector<std::string> no_seq;
  for (const std::string& l : lines) {
    if (!absl::StrContains(l, "seq_length")) no_seq.push_back(l);
  }
  const Tailed refused = Feed(no_seq, per_step);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(refused.status.message()).find("rampup_batch_size"), std::string::npos) << refused.status;
  EXPECT_TRUE(refused.events.empty());
}

// Inside a Slurm job the launch followed live carries the scheduler's name for it, as
// `flightplan slurm` names it; a launch read back from the file's past (a backfill) does
// not: it may be an earlier run of the job.
TEST(LogEvents, ALaunchFollowedLiveCarriesItsSlurmName) {
  LogOptions live;
  live.launch = "slurm:4242.1";
  Kinds k = Split(Feed(ReadLines("megatron-core_v0.5.0.log"), live).events);
  ASSERT_GE(k.starts.size(), 2u);
  EXPECT_EQ(k.starts[0].job_started().launch(), "slurm:4242.1");
  // A second launch in the same job (an elastic restart inside it) is not the scheduler's.
  for (size_t i = 1; i < k.starts.size(); ++i) EXPECT_EQ(k.starts[i].job_started().launch(), "");
  LogOptions backfill = live;
  backfill.backfill = true;
  k = Split(Feed(ReadLines("megatron-core_v0.5.0.log"), backfill).events);
  ASSERT_FALSE(k.starts.empty());
  for (const v1::Event& e : k.starts) EXPECT_EQ(e.job_started().launch(), "");
}

TEST(LogEvents, MegatronOlderFormatTailedLive) {
  // core_v0.5.0 prints no timestamps on iterations or saves: a live tail dates them as it
  // reads them. Read times: 50 s per iteration line (10 iterations of 5 s), the save line
  // 12 s after the one before it, the timestamps of print_datetime where there are any.
  absl::Time clock = At(0);
  auto read = [&clock](const std::string& line) {
    if (absl::StrContains(line, "] datetime: 2027-01-04 00:16:40")) clock = At(1000);
    if (absl::StrContains(line, " iteration ") && absl::StrContains(line, "consumed samples"))
      clock += absl::Seconds(50);
    if (absl::StrContains(line, "successfully saved checkpoint")) clock += absl::Seconds(12);
    return clock;
  };
  const Tailed t = Feed(ReadLines("megatron-core_v0.5.0.log"), LogOptions{}, read);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(0));
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 20);
  EXPECT_EQ(convert::TimeFromProto(k.starts[1].time()), At(1000));
  EXPECT_EQ(StepTokens(k, 40, 2), 1280 * 1024);
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 20);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 12);
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(112));
  const forecast::RunState s = Fold(t.events);
  EXPECT_DOUBLE_EQ(s.seconds.checkpoint, 12);
  // Launch 1 reached iteration 40 at 212 s; the save of 20 ended at 112 s: 100 s lost.
  EXPECT_NEAR(s.seconds.lost, 100, 1e-6);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

// torchtitan v0.2.2 and main (tests/logs/make_fixtures.py titan): a save, a crash, a
// resume from step-20, the last-step save.
void ExpectTorchtitan(const std::string& name, double launch1, double launch2) {
  LogOptions o;
  o.format = LogFormat::kTorchtitan;
  o.backfill = true;
  const Tailed t = Feed(ReadLines(name), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(launch1));
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 0);
  EXPECT_EQ(convert::TimeFromProto(k.starts[1].time()), At(launch2));
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 20);
  // 16 sequences of 8,192 tokens (v0.2.2), or 131,072 tokens per train step (main).
  EXPECT_EQ(StepTokens(k, 50, 2), 50 * 131072);
  EXPECT_EQ(StepTokens(k, 1, 1), 131072);
  ASSERT_EQ(k.saves.size(), 2u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 20);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 8.25);
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(308.75));
  EXPECT_EQ(k.saves[1].checkpoint_saved().step(), 50);
  EXPECT_DOUBLE_EQ(k.saves[1].checkpoint_saved().blocking_seconds(), 6.5);
  EXPECT_EQ(convert::TimeFromProto(k.saves[1].time()), At(2247));
  const forecast::RunState s = Fold(t.events);
  EXPECT_DOUBLE_EQ(s.seconds.checkpoint, 8.25 + 6.5);
  // Launch 1 trained from the save's end (308.75 s) to step 40 (548.75 s): 240 s lost.
  EXPECT_NEAR(s.seconds.lost, 240, 1e-6);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

TEST(LogEvents, TorchtitanV022) { ExpectTorchtitan("torchtitan-v0.2.2.log", 5, 1800); }
TEST(LogEvents, TorchtitanMain) { ExpectTorchtitan("torchtitan-main.log", 40, 1830); }

// DeepSpeed's engine log (tests/logs/make_fixtures.py: v0.16.4 and v0.14.5). It counts steps
// and prints train_batch_size (64 sequences) in its configuration dump, but not the sequence
// length: --seq-len 2048 makes 131,072 tokens a step.
void ExpectDeepSpeed(const std::string& name) {
  LogOptions o;
  o.format = LogFormat::kDeepSpeed;
  o.backfill = true;
  o.seq_len = 2048;
  const Tailed t = Feed(ReadLines(name), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(0));  // DeepSpeed's version line
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 0);
  EXPECT_EQ(convert::TimeFromProto(k.starts[1].time()), At(1800));
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 20);  // loaded global_step20
  EXPECT_EQ(StepTokens(k, 10, 1), 10 * 64 * 2048);
  EXPECT_EQ(StepTokens(k, 50, 2), 50 * 64 * 2048);
  ASSERT_EQ(k.saves.size(), 2u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 20);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 8.0);
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(208.5));
  EXPECT_EQ(k.saves[1].checkpoint_saved().step(), 50);
  EXPECT_DOUBLE_EQ(k.saves[1].checkpoint_saved().blocking_seconds(), 6.0);
  const forecast::RunState s = Fold(t.events);
  EXPECT_DOUBLE_EQ(s.seconds.checkpoint, 8.0 + 6.0);
  // Launch 1 trained from its save of step 20 (which ended at 208.5 s; its 8 s are the
  // save's) to step 40 (400 s): the relaunch from global_step20 loses those 191.5 s.
  EXPECT_NEAR(s.seconds.lost, 191.5, 1e-6);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
  EXPECT_EQ(s.step, 50);
}

TEST(LogEvents, DeepSpeedV0164) { ExpectDeepSpeed("deepspeed-v0.16.4.log"); }
TEST(LogEvents, DeepSpeedV0145) { ExpectDeepSpeed("deepspeed-v0.14.5.log"); }

TEST(LogEvents, DeepSpeedWithoutTheSequenceLengthSaysWhatToPass) {
  LogOptions o;
  o.format = LogFormat::kDeepSpeed;
  o.backfill = true;
  const Tailed t = Feed(ReadLines("deepspeed-v0.16.4.log"), o);
  EXPECT_EQ(t.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(t.status.message()).find("--seq-len"), std::string::npos) << t.status;
  EXPECT_TRUE(t.events.empty());
}

// A live tail's clock for NeMo's undated step lines: each read 10 s after the one before, a
// relaunch's restore at 1800 s.
std::function<absl::Time(const std::string&)> NemoClock() {
  return [clock = At(0)](const std::string& line) mutable {
    if (absl::StrContains(line, "Restoring states from")) clock = At(1800);
    if (absl::StrContains(line, "Training epoch")) clock += absl::Seconds(10);
    return clock;
  };
}

LogOptions NemoOptions() {
  LogOptions o;
  o.format = LogFormat::kNemo;
  o.seq_len = 4096;
  return o;
}

// NeMo 2 (tests/logs/make_fixtures.py: v2.4.0). Its step lines are a bare print with no time:
// a live tail reads them 10 s apart; the relaunch's restore is read at 1800 s. global_step is
// the 0-based index of the step, consumed_samples the samples after it (from a launch's
// second step); the global batch is 8 sequences, --seq-len 4096.
TEST(LogEvents, Nemo2TailedLive) {
  const Tailed t = Feed(ReadLines("nemo-v2.4.0.log"), NemoOptions(), NemoClock());
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(10));  // its first step's line
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 0);
  EXPECT_EQ(convert::TimeFromProto(k.starts[1].time()), At(1800));  // the restore
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 10);         // "step=9": ten steps done
  EXPECT_EQ(StepTokens(k, 1, 1), 1 * 8 * 4096);                     // before consumed_samples shows
  EXPECT_EQ(StepTokens(k, 15, 1), 15 * 8 * 4096);
  EXPECT_EQ(StepTokens(k, 20, 2), 160 * 4096);  // consumed_samples: 160
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 10);  // "for step 10", when finalized
  EXPECT_EQ(convert::TimeFromProto(k.saves[0].time()), At(135));
  const forecast::RunState s = Fold(t.events);
  // Launch 1 trained past step 10 (read at 100 s) to step 15 (150 s): 50 s lost.
  EXPECT_NEAR(s.seconds.lost, 50, 1e-6);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
  EXPECT_EQ(s.step, 20);
}

// NeMo 2 with nvidia-resiliency-ext's straggler report (tests/logs/make_fixtures.py:
// nemo_straggler): after every 8th step, relative scores printed to two decimals, 0.97 to
// 0.99 until step 24, then one rank at 0.91; the individual scores (0.85 to 0.89) beside
// them are each rank against itself, not a spread across ranks.
TEST(LogEvents, NemosStragglerReportGivesTheRankSpread) {
  const Tailed t = Feed(ReadLines("nemo-v2.4.0-straggler.log"), NemoOptions(), NemoClock());
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);  // every line of the reports is read
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.steps.size(), 40u);
  for (size_t i = 0; i < k.steps.size(); ++i) {
    // A report follows steps 8, 16, ...: its spread goes with the step after it.
    const int64_t step = k.steps[i].steps().step();
    const double want = step % 8 != 1 || step == 1 ? 0 : step > 24 ? 0.99 / 0.91 - 1 : 0.99 / 0.97 - 1;
    EXPECT_NEAR(k.steps[i].steps().rank_spread(), want, 1e-9) << "step " << step;
  }
  const forecast::RunState s = Fold(t.events);
  EXPECT_NEAR(s.rank_spread, 0.99 / 0.91 - 1, 1e-9);
  // Without the relative block, the individual scores alone give no spread.
  std::vector<std::string> individual;
  bool relative = false;
  for (const std::string& l : ReadLines("nemo-v2.4.0-straggler.log")) {
    if (absl::StrContains(l, "straggler_det_callback:")) relative = absl::StrContains(l, ":154]");
    if (!relative) individual.push_back(l);
  }
  const Tailed alone = Feed(individual, NemoOptions(), NemoClock());
  EXPECT_EQ(alone.unused, 0u);
  for (const v1::Event& e : Split(alone.events).steps) EXPECT_EQ(e.steps().rank_spread(), 0);
}

// Megatron-DeepSpeed as BLOOM-176B ran it (tests/logs/make_fixtures.py): the iteration line
// counts tokens itself ("consumed tokens"), so nothing else is needed; torchrun's
// "[default7]:" prefix is read through. Its first line equals the one BLOOM's chronicle quotes
// (bigscience-workshop/bigscience train/tr11-176B-ml/chronicles.md) but for the measured
// samples per second.
TEST(LogEvents, MegatronDeepSpeedAsBloomRanIt) {
  absl::Time clock = At(0);
  auto read = [&clock](const std::string& line) {
    if (absl::StrContains(line, " iteration ") && absl::StrContains(line, "consumed tokens")) {
      clock += absl::Milliseconds(105220);
    }
    return clock;
  };
  const Tailed t = Feed(ReadLines("megatron-deepspeed-bloom.log"), LogOptions{}, read);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 1u);
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 12694);
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(0));  // "before the start of training step"
  EXPECT_EQ(StepTokens(k, 12695, 1), int64_t{20155564032});      // the chronicle's own figure
  EXPECT_EQ(StepTokens(k, 12701, 1), int64_t{(9841584 + 6 * 2048)} * 2048);
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 12700);
}

// Megatron-Bridge v0.6.0 (tests/logs/make_fixtures.py), which NeMo 2's newer recipes train
// with: Megatron-LM's lines, read by --format megatron; it dumps no arguments, so --seq-len.
TEST(LogEvents, MegatronBridgeV060) {
  LogOptions o;
  o.backfill = true;
  o.seq_len = 4096;
  const Tailed t = Feed(ReadLines("megatron-bridge-v0.6.0.log"), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 2u);
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 0);
  EXPECT_EQ(k.starts[1].job_started().restored_step(), 20);
  EXPECT_EQ(StepTokens(k, 30, 1), int64_t{30} * 512 * 4096);
  EXPECT_EQ(StepTokens(k, 40, 2), int64_t{40} * 512 * 4096);
  EXPECT_EQ(convert::TimeFromProto(k.steps.back().time()), At(1800 + 200));
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 20);
  const forecast::RunState s = Fold(t.events);
  EXPECT_EQ(s.step, 40);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

TEST(LogEvents, TorchtitanWithoutItsBatchLineTakesTheRunsPlanOrSendsNothing) {
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("torchtitan-v0.2.2.log")) {
    if (!absl::StrContains(l, "Trainer is initialized")) lines.push_back(l);
  }
  LogOptions o;
  o.format = LogFormat::kTorchtitan;
  o.backfill = true;
  const Tailed none = Feed(lines, o);
  EXPECT_EQ(none.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(none.status.message()).find("--tokens-per-step"), std::string::npos);
  EXPECT_TRUE(none.events.empty());
  o.plan_tokens_per_step = 131072;
  const Tailed t = Feed(lines, o);
  ASSERT_TRUE(t.status.ok());
  EXPECT_EQ(StepTokens(Split(t.events), 50, 2), 50 * 131072);
}

// An exit saves where it finds the job, between logged iterations (core_v0.19.0 format):
// the save's iteration is reported first (at the last line's batch), or the daemon would
// refuse a checkpoint of a step it never saw.
TEST(LogEvents, MegatronSaveBetweenLoggedIterationsReportsItsStepFirst) {
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("megatron-core_v0.19.0.log")) {
    lines.push_back(l);
    if (absl::StrContains(l, "iteration       20/")) break;
  }
  // Iteration 20 at 00:05:40; SIGTERM at iteration 25.
  lines.push_back(
      "[2027-01-04 00:06:31.000000] saving checkpoint at iteration      25 to /ckpt/gpt in torch_dist format");
  lines.push_back(
      "  [2027-01-04 00:06:51.000000] successfully saved checkpoint from iteration      25 to /ckpt/gpt "
      "[ t 1/8, gtp_remat 1/1, p 1/1 ]");
  lines.push_back("[exiting program after receiving SIGTERM.] datetime: 2027-01-04 00:06:52.000000 ");
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(lines, o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const Kinds k = Split(t.events);
  // 25 x 64 sequences x 4,096 tokens, reported when the save began.
  EXPECT_EQ(StepTokens(k, 25, 1), 25 * 64 * 4096);
  EXPECT_EQ(convert::TimeFromProto(k.steps.back().time()), At(391));
  ASSERT_EQ(k.saves.size(), 1u);
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 25);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 20);
  ASSERT_EQ(k.stops.size(), 1u);
  EXPECT_EQ(k.stops[0].interruption().detail(), "exiting program after receiving SIGTERM.");
  const forecast::RunState s = Fold(t.events);
  EXPECT_EQ(s.planned_interruptions, 1u);
  EXPECT_EQ(s.tokens, 25 * 64 * 4096);
}

// A save with no time of its own, no timer and no iteration after it (core_v0.15.0 with
// --timing-log-option max printing "save-checkpoint ...: 15000.00", and one with no timer
// before an exit): the first takes the timer's figure, the second is counted before the
// exit as long as the log's timed save took, and the daemon takes both in order.
TEST(LogEvents, MegatronSavesDatedByAMaxTimerOrFlushedBeforeTheExit) {
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("megatron-core_v0.15.0-rampup.log")) {
    if (absl::StrContains(l, "(min, max) time across ranks")) {
      lines.push_back("max time across ranks (ms):");
      continue;
    }
    if (absl::StrContains(l, "    save-checkpoint ....")) {
      lines.push_back("    save-checkpoint ................................: 15000.00");
      continue;
    }
    lines.push_back(l);
  }
  lines.push_back("saving checkpoint at iteration      60 to /ckpt/gpt in torch_dist format");
  lines.push_back("  successfully saved checkpoint from iteration      60 to /ckpt/gpt [ t 1/8, p 1/1 ]");
  lines.push_back("[exiting program at iteration 60] datetime: 2027-01-04 00:11:00 ");
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(lines, o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.saves.size(), 2u);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 15);
  EXPECT_EQ(k.saves[1].checkpoint_saved().step(), 60);
  EXPECT_DOUBLE_EQ(k.saves[1].checkpoint_saved().blocking_seconds(), 15);
  EXPECT_EQ(convert::TimeFromProto(k.saves[1].time()), T("2027-01-04 00:10:50"));
  ASSERT_EQ(k.stops.size(), 1u);
  EXPECT_LE(convert::TimeFromProto(k.saves[1].time()), convert::TimeFromProto(k.stops[0].time()));
  const forecast::RunState s = Fold(t.events);
  EXPECT_EQ(s.checkpoint_count, 2u);
  EXPECT_EQ(s.planned_interruptions, 1u);
}

// core_v0.5.0 backfilled from the start: no line but print_datetime has a time, so the
// events take the nearest earlier one, never going back in time (the daemon would have to
// fold the run again for each).
TEST(LogEvents, MegatronOlderFormatBackfilledKeepsTimeOrder) {
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(ReadLines("megatron-core_v0.5.0.log"), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  for (size_t i = 1; i < t.events.size(); ++i) {
    EXPECT_LE(convert::TimeFromProto(t.events[i - 1].time()), convert::TimeFromProto(t.events[i].time())) << i;
  }
  const forecast::RunState s = Fold(t.events);
  EXPECT_EQ(s.tokens, 1280 * 1024);
  EXPECT_EQ(s.checkpoint_count, 1u);
}

// Per-job log files (Slurm's %j in the output path: one file per launch), each tailed from
// its start in turn, the launches numbered as the daemon numbers them (the attempt launched
// at that instant, else one past the run's latest), stitch into the events of the whole log.
TEST(LogEvents, PerJobFilesCutFromEachMegatronFixtureStitchLikeTheWholeLog) {
  int cut = 0;
  for (const char* name :
       {"megatron-core_v0.19.0.log", "megatron-core_v0.15.0-rampup.log", "megatron-core_v0.5.0.log", "nccl"}) {
    SCOPED_TRACE(name);
    const std::vector<std::string> lines = std::string(name) == "nccl" ? MegatronDyingOfNccl() : ReadLines(name);
    // A launch's first line: its world-size line, or its arguments dump when none precedes.
    std::vector<std::vector<std::string>> jobs;
    for (size_t i = 0; i < lines.size(); ++i) {
      const bool header = absl::StartsWith(lines[i], "using world size") ||
                          (absl::StartsWith(lines[i], "------------------------ arguments") &&
                           (i == 0 || !absl::StartsWith(lines[i - 1], "using world size")));
      if (header || jobs.empty()) jobs.emplace_back();
      jobs.back().push_back(lines[i]);
    }
    if (jobs.size() < 2) continue;  // one launch: its file is the whole log
    ++cut;
    struct Daemon {
      std::map<absl::Time, uint32_t> launched;
      uint32_t latest = 0;
      uint32_t Number(absl::Time at) {
        auto [it, added] = launched.emplace(at, latest + 1);
        if (added) ++latest;
        return it->second;
      }
    };
    auto options = [](Daemon& d) {
      LogOptions o;
      o.backfill = true;
      o.number_launch = [&d](absl::Time at, uint32_t) { return d.Number(at); };
      return o;
    };
    Daemon whole_daemon, jobs_daemon;
    const Tailed whole = Feed(lines, options(whole_daemon));
    ASSERT_TRUE(whole.status.ok()) << whole.status;
    std::vector<v1::Event> stitched;
    for (const std::vector<std::string>& job : jobs) {
      const Tailed t = Feed(job, options(jobs_daemon));
      ASSERT_TRUE(t.status.ok()) << t.status;
      stitched.insert(stitched.end(), t.events.begin(), t.events.end());
    }
    ASSERT_EQ(stitched.size(), whole.events.size());
    for (size_t i = 0; i < stitched.size(); ++i) {
      EXPECT_EQ(stitched[i].DebugString(), whole.events[i].DebugString()) << "event " << i;
    }
    // Never the wall clock of the tail (2030 in Feed): every event is the log's own time.
    for (const v1::Event& e : stitched) EXPECT_LT(convert::TimeFromProto(e.time()), At(86400)) << e.DebugString();
    EXPECT_EQ(Fold(stitched).tokens, Fold(whole.events).tokens);
  }
  EXPECT_EQ(cut, 3);  // core_v0.19.0 (also dying of NCCL) and core_v0.5.0 relaunch; the ramp-up log is one launch
}

// A per-job file whose launch lines carry no timestamp (its first datetime line missing):
// the launch is dated at the first timestamp that follows, never at the tail's wall clock.
// A file with no timestamp at all cannot be dated: its events are said, not sent.
TEST(LogEvents, APerJobFileWithoutATimestampBeforeItsLaunchIsDatedFromTheLog) {
  const std::vector<std::string> lines = ReadLines("megatron-core_v0.19.0.log");
  std::vector<std::string> job2;
  bool second = false;
  int headers = 0;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "using world size")) second = ++headers == 2;
    if (second && !absl::StartsWith(line, "[after megatron is initialized]")) job2.push_back(line);
  }
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(job2, o);  // read at 2030
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.starts.size(), 1u);
  EXPECT_EQ(k.starts[0].job_started().restored_step(), 60);
  // "[after model, optimizer, and learning rate scheduler are built] datetime: 00:41:20".
  EXPECT_EQ(convert::TimeFromProto(k.starts[0].time()), At(2480));
  for (const v1::Event& e : t.events) EXPECT_LT(convert::TimeFromProto(e.time()), At(86400)) << e.DebugString();

  // core_v0.5.0's iterations carry no timestamp: its second job without its datetime line.
  std::vector<std::string> old;
  headers = 0;
  for (const std::string& line : ReadLines("megatron-core_v0.5.0.log")) {
    if (absl::StartsWith(line, "------------------------ arguments")) ++headers;
    if (headers == 2 && !absl::StartsWith(line, "[after megatron is initialized]")) old.push_back(line);
  }
  const Tailed u = Feed(old, o);
  ASSERT_TRUE(u.status.ok()) << u.status;
  EXPECT_TRUE(u.events.empty()) << u.events.front().DebugString();
  EXPECT_EQ(u.unused, 4u);  // the loading line, the loaded line, two iterations
}

// torchtitan v0.2.2's last-step save prints no end; a job that dies saving is followed by
// the next launch, which does not end the save.
TEST(LogEvents, TorchtitanLastStepSaveCutByTheNextLaunchIsNotCounted) {
  std::vector<std::string> lines;
  for (const std::string& l : ReadLines("torchtitan-v0.2.2.log")) {
    if (absl::StrContains(l, "Sleeping 2 seconds") || absl::StrContains(l, "Training completed")) continue;
    lines.push_back(l);
  }
  lines.push_back("[rank0]:[titan] 2027-01-04 01:00:00,000 - root - INFO - Starting job: Llama 3 8B training");
  LogOptions o;
  o.format = LogFormat::kTorchtitan;
  o.backfill = true;
  o.run = "r";
  LogEvents c(o);
  std::vector<v1::Event> out;
  for (const std::string& l : lines) ASSERT_TRUE(c.Feed(l, At(0), out).ok());
  c.Finish(out);
  const Kinds k = Split(out);
  ASSERT_EQ(k.saves.size(), 1u);  // the save of 20 only
  EXPECT_EQ(k.saves[0].checkpoint_saved().step(), 20);
  const std::vector<std::string> notes = c.TakeNotices();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the last-step save of step 50 did not finish before the next launch"), std::string::npos)
      << notes[0];
}

TEST(LogEvents, LinesRecognisedButNotUsedAreCounted) {
  LogOptions o;
  o.seq_len = 100;
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time t = At(0);
  // A save before any launch, an iteration too large for int64, a torchtitan-style line
  // that is not Megatron's (ignored, not counted).
  ASSERT_TRUE(c.Feed("  successfully saved checkpoint from iteration      30 to /c [ t 1/1, p 1/1 ]", t, out).ok());
  ASSERT_TRUE(c.Feed(" iteration 99999999999999999999/ 100 | consumed samples: 10 |", t, out).ok());
  ASSERT_TRUE(c.Feed("step: 3  loss: 7", t, out).ok());
  EXPECT_EQ(c.unused(), 2u);
  ASSERT_EQ(c.unused_lines().size(), 2u);
  EXPECT_EQ(c.unused_lines()[0].line, 1u);
  EXPECT_NE(c.unused_lines()[0].why.find("before the log showed a launch"), std::string::npos);
  EXPECT_NE(c.unused_lines()[1].why.find("out of range"), std::string::npos);
  EXPECT_TRUE(out.empty());
}

TEST(LogEvents, TheLogAndThePlanDisagreeingIsSaid) {
  LogOptions o;
  o.plan_seq_len = 8192;
  LogEvents c(o);
  std::vector<v1::Event> out;
  ASSERT_TRUE(c.Feed("  seq_length ...................................... 4096", At(0), out).ok());
  ASSERT_TRUE(c.Feed(" iteration 10/ 100 | consumed samples: 10 |", At(1), out).ok());
  const std::vector<std::string> notes = c.TakeNotices();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the run's plan says 8192; counting with the log's"), std::string::npos) << notes[0];
  EXPECT_EQ(out.back().steps().tokens(), 40960);
}

TEST(LogEvents, WithoutTimestampsASaveIsDatedByTheGapAroundIt) {
  // core_v0.15.0 and older print no timestamp on the save lines; the iterations carry one.
  LogOptions o;
  o.run = "r";
  o.seq_len = 100;
  o.backfill = true;  // the save lines have no time of their own: the gap method
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time read = absl::FromUnixSeconds(1900000000);
  ASSERT_TRUE(c.Feed(" [2027-01-04 00:00:10] iteration 10/ 100 | consumed samples: 10 | elapsed time per iteration "
                     "(ms): 1000.0 |",
                     read, out)
                  .ok());
  ASSERT_TRUE(c.Feed("saving checkpoint at iteration 10 to /ckpt", read, out).ok());
  ASSERT_TRUE(c.Feed("  successfully saved checkpoint at iteration 10 to /ckpt", read, out).ok());
  // 10 iterations of 1 s each, 35 s after the previous one: 25 s were the save.
  ASSERT_TRUE(c.Feed(" [2027-01-04 00:00:45] iteration 20/ 100 | consumed samples: 20 | elapsed time per iteration "
                     "(ms): 1000.0 |",
                     read, out)
                  .ok());
  ASSERT_EQ(out.size(), 4u);  // job_started, steps 10, checkpoint 10, steps 20
  ASSERT_TRUE(out[2].has_checkpoint_saved());
  EXPECT_DOUBLE_EQ(out[2].checkpoint_saved().blocking_seconds(), 25);
  EXPECT_EQ(convert::TimeFromProto(out[2].time()), At(10 + 25));
  EXPECT_EQ(out[3].steps().tokens(), 2000);
}

// Following a log from its start (`tail --from-start` without --exit-at-eof): once caught up,
// the lines still waiting for a first timestamp are said, and the new ones are live.
TEST(LogEvents, ABackfillThatCatchesUpGivesUpItsUndatedLinesAndGoesLive) {
  LogOptions o;
  o.run = "r";
  o.seq_len = 100;
  o.backfill = true;
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time read = absl::FromUnixSeconds(1900000000);
  ASSERT_TRUE(
      c.Feed(" iteration 10/ 100 | consumed samples: 10 | elapsed time per iteration (ms): 1000.0 |", read, out).ok());
  EXPECT_TRUE(out.empty());  // waiting for a timestamp
  c.CaughtUp(out);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(c.unused(), 1u);
  EXPECT_NE(c.unused_lines()[0].why.find("before any timestamp in the log (the file's end came first)"),
            std::string::npos)
      << c.unused_lines()[0].why;
  ASSERT_TRUE(c.Feed(" iteration 20/ 100 | consumed samples: 20 | elapsed time per iteration (ms): 1000.0 |",
                     read + absl::Seconds(10), out)
                  .ok());
  ASSERT_EQ(out.size(), 2u);  // the launch and the iteration, when they were read
  EXPECT_EQ(convert::TimeFromProto(out[1].time()), read + absl::Seconds(10));
}

// A finished log backfilled from its start (read at 2030), with what the converter said.
struct Backfilled {
  std::vector<v1::Event> events;
  std::vector<std::string> notes;
};
Backfilled Backfill(const std::vector<std::string>& lines) {
  LogOptions o;
  o.backfill = true;
  o.run = "r";
  LogEvents c(o);
  Backfilled b;
  for (const std::string& line : lines) {
    const absl::Status st = c.Feed(line, absl::FromUnixSeconds(1900000000), b.events);
    EXPECT_TRUE(st.ok()) << st;
  }
  c.Finish(b.events);
  b.notes = c.TakeNotices();
  return b;
}

// A backfilled log that ends in a save (core_v0.15.0 prints no timestamp on its save lines,
// and no timer follows the last one): the save is counted, as long as the log's own timed
// saves took, and the converter says so.
TEST(LogEvents, ALogEndingInASaveCountsItWithTheLogsOwnSaveTime) {
  std::vector<std::string> lines = ReadLines("megatron-core_v0.15.0-rampup.log");
  // The fixture's own save lines (make_fixtures.py, core_v0.15.0's format), for iteration 60.
  lines.push_back("saving checkpoint at iteration      60 to /ckpt/gpt in torch_dist format");
  lines.push_back("  successfully saved checkpoint from iteration      60 to /ckpt/gpt [ t 1/8, p 1/1 ]");
  const Backfilled b = Backfill(lines);
  const std::vector<v1::Event>& out = b.events;
  const Kinds k = Split(out);
  ASSERT_EQ(k.saves.size(), 2u);
  EXPECT_DOUBLE_EQ(k.saves[0].checkpoint_saved().blocking_seconds(), 15);  // its timer's max
  EXPECT_EQ(k.saves[1].checkpoint_saved().step(), 60);
  EXPECT_DOUBLE_EQ(k.saves[1].checkpoint_saved().blocking_seconds(), 15);  // the mean of the timed ones
  EXPECT_EQ(convert::TimeFromProto(k.saves[1].time()), T("2027-01-04 00:10:35") + absl::Seconds(15));
  const std::vector<std::string>& notes = b.notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no later line tells how long the save of iteration 60 took; counted as 15 s, the "
                          "mean of the log's 1 timed saves"),
            std::string::npos)
      << notes[0];
  EXPECT_DOUBLE_EQ(Fold(out).seconds.checkpoint, 30);
}

TEST(LogEvents, ACrashLineGivesTheInterruptionItsCause) {
  LogOptions o;
  o.backfill = true;
  const Tailed t = Feed(MegatronDyingOfNccl(), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  const Kinds k = Split(t.events);
  ASSERT_EQ(k.stops.size(), 2u);  // the crash, then the exit
  EXPECT_EQ(k.stops[0].interruption().cause(), "nccl");
  EXPECT_FALSE(k.stops[0].interruption().planned());
  EXPECT_NE(k.stops[0].interruption().detail().find("remote process exited or there was a network error"),
            std::string::npos)
      << k.stops[0].interruption().detail();
  // Dated at the attempt's last iteration (80, 00:16:03): the crash lines carry no time.
  EXPECT_EQ(convert::TimeFromProto(k.stops[0].time()), At(963));
  const forecast::RunState s = Fold(t.events);
  ASSERT_EQ(s.interruption_marks.size(), 2u);
  EXPECT_EQ(s.interruption_marks[0].cause, "nccl");
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

TEST(LogEvents, ACrashLineThatIterationsOutliveIsNotAnInterruption) {
  std::vector<std::string> lines;
  for (const std::string& line : ReadLines("megatron-core_v0.19.0.log")) {
    lines.push_back(line);
    if (absl::StrContains(line, "iteration       20/")) {
      lines.push_back(
          "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process "
          "exiting prematurely.");
    }
  }
  const Backfilled b = Backfill(lines);
  const std::vector<v1::Event>& out = b.events;
  EXPECT_EQ(Split(out).stops.size(), 1u);  // the exit alone
  const std::vector<std::string>& notes = b.notes;
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("told of nccl (ncclRemoteError), but the iterations went on"), std::string::npos) << notes[0];
}

TEST(LogEvents, ACrashIsSentOnceTheLogHasBeenQuiet) {
  LogOptions o;
  o.run = "r";
  o.seq_len = 100;
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  ASSERT_TRUE(
      c.Feed(" iteration 10/ 100 | consumed samples: 10 | elapsed time per iteration (ms): 1000.0 |", t0, out).ok());
  ASSERT_TRUE(c.Feed("RuntimeError: CUDA error: uncorrectable ECC error encountered", t0 + absl::Seconds(5), out).ok());
  const size_t before = out.size();
  c.Idle(t0 + absl::Seconds(20), out);  // 15 s of quiet: more lines may come
  EXPECT_EQ(out.size(), before);
  c.Idle(t0 + absl::Seconds(40), out);
  ASSERT_EQ(out.size(), before + 1);
  EXPECT_EQ(out.back().interruption().cause(), "ecc");
  EXPECT_EQ(convert::TimeFromProto(out.back().time()), t0 + absl::Seconds(5));  // live: when it was read
}

TEST(LogEvents, IterationsStartingOverAreARestartFromTheLastSave) {
  LogOptions o;
  o.run = "r";
  o.tokens_per_step = 10;
  o.format = LogFormat::kTorchtitan;
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time t = absl::FromUnixSeconds(1800000000);
  for (const char* line : {"step: 1  loss: 9", "step: 2  loss: 8",
                           "Finished saving the checkpoint (or staging if async is enabled)in 1.00 seconds.",
                           "step: 3  loss: 7", "step: 3  loss: 7", "step: 4  loss: 6"}) {
    ASSERT_TRUE(c.Feed(line, t, out).ok());
  }
  EXPECT_EQ(c.attempt(), 2u);
  int64_t restored = -1;
  for (const v1::Event& e : out) {
    if (e.has_job_started() && e.job_started().attempt() == 2) restored = e.job_started().restored_step();
  }
  EXPECT_EQ(restored, 2);
}

TEST(LogEvents, MissingTokenBasisIsSaid) {
  LogOptions o;
  o.run = "r";
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Status st = c.Feed(" iteration 10/ 100 | consumed samples: 10 |", absl::Now(), out);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(st.message()).find("--seq-len"), std::string::npos);
  EXPECT_TRUE(out.empty());
  // The log's own argument dump gives it.
  ASSERT_TRUE(c.Feed("  seq_length ...................................... 2048", absl::Now(), out).ok());
  ASSERT_TRUE(c.Feed(" iteration 10/ 100 | consumed samples: 10 |", absl::Now(), out).ok());
  EXPECT_EQ(out.back().steps().tokens(), 20480);
}

}  // namespace
}  // namespace flightplan::cli
