// Training logs to events: the shipped Megatron and torchtitan samples, and the edge cases.
#include "cli/log_events.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/plan_convert.h"

namespace flightplan {
namespace {

std::vector<v1::Event> FeedFile(const std::string& name, LogOptions options) {
  std::ifstream in(std::string(FLIGHTPLAN_LOGS_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  LogEvents converter(options);
  std::vector<v1::Event> out;
  std::string line;
  const absl::Time read = absl::FromUnixSeconds(1900000000);
  while (std::getline(in, line)) EXPECT_TRUE(converter.Feed(line, read, out).ok()) << line;
  return out;
}

absl::Time T(const char* text) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime("%Y-%m-%d %H:%M:%S", text, &t, &err)) << err;
  return t;
}

TEST(LogEvents, MegatronIterationsSavesAndARestart) {
  LogOptions o;
  o.run = "r";
  o.seq_len = 4096;
  o.backfill = true;
  const std::vector<v1::Event> e = FeedFile("megatron.log", o);
  std::vector<v1::Event> starts, steps, saves;
  for (const v1::Event& x : e) {
    if (x.has_job_started()) starts.push_back(x);
    if (x.has_steps()) steps.push_back(x);
    if (x.has_checkpoint_saved()) saves.push_back(x);
  }
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].job_started().attempt(), 1u);
  EXPECT_EQ(starts[0].job_started().restored_step(), 0);
  // The NCCL timeout is not reported; the load line starts attempt 2 from iteration 30.
  EXPECT_EQ(starts[1].job_started().attempt(), 2u);
  EXPECT_EQ(starts[1].job_started().restored_step(), 30);
  EXPECT_EQ(TimeFromProto(starts[1].time()), T("2027-01-04 00:40:30"));
  ASSERT_EQ(steps.size(), 9u);  // 10..50, then 40..70 after the restore
  // consumed samples x seq_len; times from the lines' own timestamps.
  EXPECT_EQ(steps[0].steps().step(), 10);
  EXPECT_EQ(steps[0].steps().tokens(), 640 * 4096);
  EXPECT_EQ(TimeFromProto(steps[0].time()), T("2027-01-04 00:05:00"));
  EXPECT_EQ(steps.back().steps().step(), 70);
  EXPECT_EQ(steps.back().attempt(), 2u);
  ASSERT_EQ(saves.size(), 2u);
  // Saving 00:08:21 -> saved 00:08:41: 20 s blocking, dated when the save finished.
  EXPECT_EQ(saves[0].checkpoint_saved().step(), 30);
  EXPECT_DOUBLE_EQ(saves[0].checkpoint_saved().blocking_seconds(), 20);
  EXPECT_EQ(TimeFromProto(saves[0].time()), T("2027-01-04 00:08:41"));
  EXPECT_DOUBLE_EQ(saves[1].checkpoint_saved().blocking_seconds(), 15);
}

TEST(LogEvents, TorchtitanStepsFromTheLogsOwnBatchAndARestore) {
  LogOptions o;
  o.run = "r";
  o.format = LogFormat::kTorchtitan;
  o.backfill = true;
  const std::vector<v1::Event> e = FeedFile("torchtitan.log", o);
  int starts = 0;
  for (const v1::Event& x : e) {
    if (x.has_job_started()) {
      ++starts;
      if (starts == 2) {
        EXPECT_EQ(x.job_started().restored_step(), 20);
      }
    }
    if (x.has_steps() && x.steps().step() == 50) {
      EXPECT_EQ(x.steps().tokens(), 50 * 16 * 8192);  // global batch 16 x sequence 8192
    }
    if (x.has_checkpoint_saved()) {
      EXPECT_EQ(x.checkpoint_saved().step(), 20);
      EXPECT_DOUBLE_EQ(x.checkpoint_saved().blocking_seconds(), 8.25);
    }
  }
  EXPECT_EQ(starts, 2);
}

TEST(LogEvents, WithoutTimestampsASaveIsDatedByTheGapAroundIt) {
  LogOptions o;
  o.run = "r";
  o.seq_len = 100;
  LogEvents c(o);
  std::vector<v1::Event> out;
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  ASSERT_TRUE(c.Feed(" iteration 10/ 100 | consumed samples: 10 | elapsed time per iteration (ms): 1000.0 |", t0, out).ok());
  ASSERT_TRUE(c.Feed("saving checkpoint at iteration 10 to /ckpt", t0 + absl::Seconds(1), out).ok());
  ASSERT_TRUE(c.Feed("  successfully saved checkpoint at iteration 10 to /ckpt", t0 + absl::Seconds(20), out).ok());
  // 10 iterations of 1 s each, 35 s after the previous line: 25 s were the save.
  ASSERT_TRUE(c.Feed(" iteration 20/ 100 | consumed samples: 20 | elapsed time per iteration (ms): 1000.0 |", t0 + absl::Seconds(35), out).ok());
  ASSERT_EQ(out.size(), 4u);  // job_started, steps 10, checkpoint 10, steps 20
  ASSERT_TRUE(out[2].has_checkpoint_saved());
  EXPECT_DOUBLE_EQ(out[2].checkpoint_saved().blocking_seconds(), 25);
  EXPECT_EQ(TimeFromProto(out[2].time()), t0 + absl::Seconds(25));
  EXPECT_EQ(out[3].steps().tokens(), 2000);
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
}  // namespace flightplan
