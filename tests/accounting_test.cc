// Run accounting on hand-built event logs, to the second (DESIGN.md §5).
#include "forecast/accounting.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flightplan::forecast {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1799020800);  // 2027-01-04T00:00:00Z
absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

Event Started(double t, uint32_t attempt, int64_t restored) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kJobStarted;
  e.attempt = attempt;
  e.restored_step = restored;
  return e;
}
Event Steps(double t, int64_t step, int64_t tokens, uint32_t attempt = 0) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kSteps;
  e.step = step;
  e.tokens = tokens;
  e.attempt = attempt;
  return e;
}
Event Checkpoint(double t, int64_t step, double blocking) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kCheckpointSaved;
  e.step = step;
  e.blocking_seconds = blocking;
  return e;
}
Event Interrupted(double t, const std::string& cause, bool planned = false) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kInterruption;
  e.cause = cause;
  e.planned = planned;
  return e;
}
Event Finished(double t) {
  Event e;
  e.time = At(t);
  e.kind = EventKind::kRunFinished;
  return e;
}

RunState Fold(const std::vector<Event>& events) {
  RunState s;
  for (const Event& e : events) {
    const absl::Status st = ApplyEvent(s, e);
    EXPECT_TRUE(st.ok()) << st;
  }
  return s;
}

void ExpectSeconds(const RunSnapshot& snap, const TimeSeconds& want) {
  EXPECT_DOUBLE_EQ(snap.seconds.productive, want.productive);
  EXPECT_DOUBLE_EQ(snap.seconds.checkpoint, want.checkpoint);
  EXPECT_DOUBLE_EQ(snap.seconds.lost, want.lost);
  EXPECT_DOUBLE_EQ(snap.seconds.startup, want.startup);
  EXPECT_DOUBLE_EQ(snap.seconds.down_unplanned, want.down_unplanned);
  EXPECT_DOUBLE_EQ(snap.seconds.down_planned, want.down_planned);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, want.stalled);
  // Every second of wall time falls in exactly one category.
  EXPECT_DOUBLE_EQ(snap.seconds.Sum(), snap.elapsed_seconds);
}

TEST(Accounting, CrashAndRestoreFromTheLatestCheckpoint) {
  const RunState s = Fold({
      Started(0, 1, 0),
      Steps(300, 100, 1000),      // launch to first step: startup 300
      Steps(360, 110, 1100),      // productive 60
      Steps(420, 120, 1200),      // productive 60
      Checkpoint(430, 120, 10),   // checkpoint 10: the lineage at step 120 is durable
      Steps(490, 130, 1300),      // productive 60
      Steps(550, 140, 1400),      // productive 60
      Interrupted(580, "gpu"),    // 30 s since the last report: lost
      Started(880, 2, 120),       // down 300; steps 120..140 (120 s) rolled back to lost
      Steps(1000, 130, 1300),     // 10 steps at the usual 6 s: 60 s of work, 60 s startup
      Steps(1060, 140, 1400),     // productive 60
  });
  const RunSnapshot snap = Snapshot(s, At(1060));
  ExpectSeconds(snap, {.productive = 240, .checkpoint = 10, .lost = 150, .startup = 360,
                       .down_unplanned = 300});
  EXPECT_DOUBLE_EQ(snap.elapsed_seconds, 1060);
  EXPECT_EQ(snap.tokens, 1400);
  EXPECT_EQ(snap.step, 140);
  EXPECT_EQ(snap.attempt, 2u);
  ASSERT_EQ(snap.interruptions.size(), 1u);
  EXPECT_EQ(snap.interruptions[0].cause, "gpu");
  EXPECT_FALSE(snap.interruptions[0].planned);
  EXPECT_EQ(snap.interruptions[0].count, 1u);
  // Budget: lost 150 + down 300 + startup after the crash 60.
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 510);
  // Throughput per productive second that still counts: 200 tokens in the 120 s up to
  // the checkpoint, then 100 in 60 s twice.
  EXPECT_DOUBLE_EQ(snap.tokens_per_second, 400.0 / 240.0);
  // One incident: from the crash's lost tail to the first step after: 30 + 120 rolled
  // back + 300 down + 60 startup.
  ASSERT_EQ(s.incident_losses.size(), 1u);
  EXPECT_DOUBLE_EQ(s.incident_losses[0], 510);
  EXPECT_TRUE(snap.flags.empty());
}

TEST(Accounting, HangCaughtByAWatchdog) {
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(60, 10, 100),   // startup 60
      Steps(120, 20, 200),  // productive 60; usual gap 60 s
      Steps(180, 30, 300),  // productive 60
  });
  // Live, 1,000 s in: 820 s without a step is past 5 x 60 s, so all but the usual 60 s
  // is stalled right now.
  ExpectSeconds(Snapshot(s, At(1000)),
                {.productive = 180, .startup = 60, .stalled = 760});
  ASSERT_TRUE(ApplyEvent(s, Interrupted(3780, "hang")).ok());
  // The watchdog's kill: 60 s of the hang is the usual work, lost; 3,540 s stalled.
  ExpectSeconds(Snapshot(s, At(3780)), {.productive = 120, .lost = 60, .startup = 60,
                                        .stalled = 3540});
  // Still down 120 s later, on the wall clock: that burns the budget now.
  const RunSnapshot later = Snapshot(s, At(3900));
  ExpectSeconds(later, {.productive = 120, .lost = 60, .startup = 60, .down_unplanned = 120,
                        .stalled = 3540});
  EXPECT_DOUBLE_EQ(later.failure_budget_consumed_seconds, 60 + 3540 + 120);
}

TEST(Accounting, UnreportedCrashImpliesAnInterruptionAtTheLastEvent) {
  const RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 10, 100),      // startup 100
      Steps(200, 20, 200),      // productive 100
      Checkpoint(210, 20, 10),  // checkpoint 10
      Steps(310, 30, 300),      // productive 100
      // the job dies silently here
      Started(1000, 2, 20),     // down_unplanned 690 since 310; steps 20..30 lost (100 s)
      Steps(1150, 30, 300),     // 10 steps at 10 s: 100 s of work, 50 s startup
  });
  const RunSnapshot snap = Snapshot(s, At(1150));
  ExpectSeconds(snap, {.productive = 200, .checkpoint = 10, .lost = 100, .startup = 150,
                       .down_unplanned = 690});
  ASSERT_EQ(snap.interruptions.size(), 1u);
  EXPECT_EQ(snap.interruptions[0].cause, "unknown");
  EXPECT_FALSE(snap.interruptions[0].planned);
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 100 + 690 + 50);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

TEST(Accounting, RestoreToAnOlderCheckpoint) {
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 10, 100),     // startup 100
      Steps(200, 20, 200),     // productive 100
      Checkpoint(205, 20, 5),  // checkpoint 5, lineage at 20: 100 s, 200 tokens
      Steps(305, 30, 300),     // productive 100
      Steps(405, 40, 400),     // productive 100
      Checkpoint(410, 40, 5),  // checkpoint 5
      Steps(510, 50, 500),     // productive 100
      Interrupted(520, "nccl"),  // lost 10
      Started(820, 2, 20),     // down 300; the step-40 checkpoint is unusable: back to 20,
                               // so steps 20..50 (300 s of work) are lost
  });
  RunSnapshot snap = Snapshot(s, At(820));
  ExpectSeconds(snap, {.productive = 100, .checkpoint = 10, .lost = 310, .startup = 100,
                       .down_unplanned = 300});
  EXPECT_EQ(snap.tokens, 200);
  EXPECT_EQ(snap.step, 20);
  ASSERT_TRUE(ApplyEvent(s, Steps(950, 30, 300)).ok());   // 100 s of work, 30 s startup
  ASSERT_TRUE(ApplyEvent(s, Steps(1050, 40, 400)).ok());  // productive 100
  snap = Snapshot(s, At(1050));
  ExpectSeconds(snap, {.productive = 300, .checkpoint = 10, .lost = 310, .startup = 130,
                       .down_unplanned = 300});
  EXPECT_EQ(snap.tokens, 400);
  EXPECT_TRUE(snap.flags.empty());
}

TEST(Accounting, RestoreToANeverCheckpointedStepIsAcceptedAndFlagged) {
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 10, 100),
      Steps(200, 20, 200),  // productive 100
      Steps(300, 30, 300),  // productive 200
      Interrupted(300, "gpu"),
      Started(400, 2, 15),  // no checkpoint at 15: halfway between 10 (0 s) and 30 (200 s)
  });
  const RunSnapshot snap = Snapshot(s, At(400));
  ASSERT_EQ(snap.flags.size(), 1u);
  EXPECT_NE(snap.flags[0].find("restored step 15, which was never checkpointed"),
            std::string::npos)
      << snap.flags[0];
  EXPECT_EQ(snap.step, 15);
  EXPECT_EQ(snap.tokens, 150);  // interpolated between (0, 0) and (30, 300)
  ExpectSeconds(snap, {.productive = 100, .lost = 100, .startup = 100, .down_unplanned = 100});
}

// Interruption causes become label values: past the run's limit, new ones count as
// "other" and nothing is lost from the counts or the time accounting.
TEST(Accounting, CausesPastTheLimitCountAsOther) {
  RunState s;
  s.max_causes = 3;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  double t = 0;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(ApplyEvent(s, Steps(t += 100, i + 1, 10 * (i + 1), 0)).ok());
    ASSERT_TRUE(ApplyEvent(s, Interrupted(t += 10, absl::StrCat("cause", i % 5))).ok());
    ASSERT_TRUE(ApplyEvent(s, Started(t += 50, static_cast<uint32_t>(i + 2), i + 1)).ok());
  }
  std::map<std::string, uint32_t> counts;
  uint32_t total = 0;
  for (const InterruptionCount& c : s.interruptions) {
    counts[c.cause] += c.count;
    total += c.count;
  }
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(counts.size(), 4u);  // three kept, and "other"
  EXPECT_EQ(counts["cause0"], 2u);
  EXPECT_EQ(counts["cause1"], 2u);
  EXPECT_EQ(counts["cause2"], 2u);
  EXPECT_EQ(counts["other"], 4u);  // cause3 and cause4, twice each
  EXPECT_EQ(s.unplanned_interruptions, 10u);
}

TEST(Accounting, AfterAnInterpolatedRestoreTheFirstReportSetsTheTokens) {
  // Tokens per step grew (a batch ramp): the interpolation at step 150 over-estimates.
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 100, 1000),
      Steps(200, 200, 3000),
      Interrupted(210, "gpu"),
      Started(300, 2, 150),  // never checkpointed: estimated at 2,000 tokens... or so
  });
  ASSERT_TRUE(s.tokens_uncertain);
  // The job knows better: 1,500 tokens at step 150. Accepted, not "backwards".
  ASSERT_TRUE(ApplyEvent(s, Steps(400, 150, 1500)).ok());
  EXPECT_EQ(s.tokens, 1500);
  EXPECT_FALSE(s.tokens_uncertain);
  // From then on the usual rule holds.
  EXPECT_EQ(ApplyEvent(s, Steps(500, 160, 1400)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Accounting, RestoreBeyondTheReportsDoesNotRememberStaleTokens) {
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 200, 2000),
      Interrupted(110, "gpu"),
      Started(200, 2, 300),      // beyond step 200: tokens unknown
      Checkpoint(210, 300, 5),   // saved during startup, tokens still unknown: not a mark
      Interrupted(220, "gpu"),
      Started(300, 3, 300),
      Steps(400, 310, 3100),     // the first report sets the tokens
  });
  const RunSnapshot snap = Snapshot(s, At(400));
  EXPECT_EQ(snap.tokens, 3100);
  EXPECT_EQ(snap.step, 310);
}

TEST(Accounting, ChecksAgainstAnExactCheckpointStillHold) {
  RunState s = Fold({Started(0, 1, 0), Steps(100, 100, 1000), Checkpoint(105, 100, 5),
                     Steps(200, 200, 2000), Interrupted(210, "gpu"), Started(300, 2, 100)});
  EXPECT_FALSE(s.tokens_uncertain);
  EXPECT_EQ(ApplyEvent(s, Steps(400, 110, 900)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Accounting, AStallIsSeenBeforeTheUsualGapIsKnown) {
  // One report, then silence: past 30 minutes without a known cadence, the rest is stalled.
  const RunState s = Fold({Started(0, 1, 0), Steps(60, 10, 100)});
  ExpectSeconds(Snapshot(s, At(60 + 1800)), {.productive = 1800, .startup = 60});
  ExpectSeconds(Snapshot(s, At(60 + 5000)), {.productive = 1800, .startup = 60, .stalled = 3200});
}

TEST(Accounting, AHugeFirstGapDoesNotBecomeTheUsualOne) {
  // The first running gap is a day: it must not teach the run that a day is usual.
  RunState s = Fold({Started(0, 1, 0), Steps(60, 10, 100), Steps(60 + 86400, 20, 200)});
  EXPECT_LE(s.typical_step_gap, kStallUnknownSeconds);
  EXPECT_LE(s.typical_seconds_per_step, kStallUnknownSeconds / 10);
}

TEST(Accounting, SecondsPerStepLeaveOutTheSaves) {
  // Reports every 100 s of work for 10 steps, with a 20 s save between two of them.
  const RunState s = Fold({Started(0, 1, 0), Steps(100, 10, 100), Checkpoint(120, 10, 20),
                           Steps(220, 20, 200)});
  EXPECT_DOUBLE_EQ(s.typical_seconds_per_step, 10);
}

TEST(Accounting, SameInstantEventsAreOrderedByAttemptAndKind) {
  Event steps = Steps(100, 10, 100);
  Event checkpoint = Checkpoint(100, 10, 0);
  Event interruption = Interrupted(100, "gpu");
  EXPECT_TRUE(EventBefore(steps, checkpoint));
  EXPECT_TRUE(EventBefore(checkpoint, interruption));
  EXPECT_FALSE(EventBefore(interruption, steps));
  Event old_attempt = Steps(100, 10, 100, 1);
  Event next_start = Started(100, 2, 0);
  Event next_steps = Steps(100, 0, 0, 2);
  EXPECT_TRUE(EventBefore(old_attempt, next_start));
  EXPECT_TRUE(EventBefore(next_start, next_steps));
}

TEST(Accounting, AnEventsAttemptFollowsFromItsTime) {
  const RunState s = Fold({Started(0, 1, 0), Steps(100, 10, 100), Interrupted(150, "gpu"),
                           Started(200, 2, 0), Steps(300, 10, 100)});
  // Resent later, an attempt-1 event without an attempt still belongs to attempt 1, so its
  // natural key is the one it was stored under.
  EXPECT_EQ(AttemptOf(s, Steps(100, 10, 100)), 1u);
  EXPECT_EQ(AttemptOf(s, Interrupted(150, "gpu")), 1u);
  EXPECT_EQ(AttemptOf(s, Steps(300, 10, 100)), 2u);
  EXPECT_EQ(AttemptOf(s, Steps(300, 10, 100, 7)), 7u);  // its own, when given
}

TEST(Accounting, PlannedMaintenanceIsNotChargedToTheBudget) {
  const RunState s = Fold({
      Started(0, 1, 0),
      Steps(100, 10, 100),   // startup 100
      Steps(200, 20, 200),   // productive 100
      Checkpoint(205, 20, 5),
      Interrupted(205, "maintenance", true),
      Started(3805, 2, 20),  // down_planned 3,600; nothing lost
      Steps(3955, 30, 300),  // 100 s of work, 50 s startup, not charged: the stop was planned
  });
  const RunSnapshot snap = Snapshot(s, At(3955));
  ExpectSeconds(snap, {.productive = 200, .checkpoint = 5, .startup = 150,
                       .down_planned = 3600});
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 0);
  ASSERT_EQ(snap.interruptions.size(), 1u);
  EXPECT_TRUE(snap.interruptions[0].planned);
}

TEST(Accounting, FinishedRunStopsTheClock) {
  RunState s = Fold({Started(0, 1, 0), Steps(10, 1, 10), Steps(20, 2, 20), Finished(30)});
  const RunSnapshot snap = Snapshot(s, At(100000));
  EXPECT_DOUBLE_EQ(snap.elapsed_seconds, 30);
  ExpectSeconds(snap, {.productive = 20, .startup = 10});
  EXPECT_EQ(snap.phase, Phase::kFinished);
}

TEST(Accounting, ThroughputOverTheLastHour) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  // Two hours at 100 tokens/s, then one hour at 50 tokens/s; a report every minute.
  int64_t tokens = 0;
  for (int minute = 1; minute <= 180; ++minute) {
    tokens += minute <= 120 ? 6000 : 3000;
    ASSERT_TRUE(ApplyEvent(s, Steps(minute * 60.0, minute, tokens)).ok());
  }
  const RunSnapshot snap = Snapshot(s, At(180 * 60));
  EXPECT_DOUBLE_EQ(snap.recent_tokens_per_second, 50);
  // Overall (the first minute was startup): (179 minutes' tokens) / (179 x 60 s).
  EXPECT_DOUBLE_EQ(snap.tokens_per_second, static_cast<double>(tokens - 6000) / (179 * 60.0));
}

struct BadEvent {
  const char* name;
  Event event;
  absl::StatusCode code;
  const char* says;
};

void PrintTo(const BadEvent& b, std::ostream* os) { *os << b.name; }

class BadEvents : public ::testing::TestWithParam<BadEvent> {};

TEST_P(BadEvents, AreRefusedAndChangeNothing) {
  // A run at step 30 in attempt 2, with a checkpoint at 20.
  RunState s = Fold({Started(0, 1, 0), Steps(100, 10, 100), Interrupted(150, "gpu"),
                     Started(200, 2, 0), Steps(300, 20, 200), Checkpoint(310, 20, 10),
                     Steps(400, 30, 300)});
  const RunState before = s;
  const absl::Status st = ApplyEvent(s, GetParam().event);
  EXPECT_EQ(st.code(), GetParam().code) << st;
  EXPECT_NE(std::string(st.message()).find(GetParam().says), std::string::npos) << st;
  EXPECT_EQ(s.events, before.events);
  EXPECT_EQ(s.tokens, before.tokens);
  EXPECT_EQ(s.step, before.step);
  EXPECT_EQ(s.last_time, before.last_time);
  EXPECT_DOUBLE_EQ(s.seconds.Sum(), before.seconds.Sum());
  EXPECT_EQ(s.attempt, before.attempt);
}

Event WithId(Event e, std::string id) {
  e.id = std::move(id);
  return e;
}

const BadEvent kBadEvents[] = {
    {"TimeBeforeLatest", Steps(399, 31, 310), absl::StatusCode::kFailedPrecondition,
     "is before the run's latest event"},
    {"TokensBackwards", Steps(500, 31, 250), absl::StatusCode::kFailedPrecondition,
     "goes backwards from 300 at step 30 without a restore"},
    {"StepBackwards", Steps(500, 25, 350), absl::StatusCode::kFailedPrecondition,
     "goes backwards"},
    {"NegativeTokens", Steps(500, 31, -1), absl::StatusCode::kInvalidArgument,
     "steps.tokens -1 is negative"},
    {"SameStepOtherTokens", Steps(500, 30, 310), absl::StatusCode::kInvalidArgument,
     "which was reported with 300 tokens"},
    {"SupersededAttempt", Steps(500, 31, 310, 1), absl::StatusCode::kFailedPrecondition,
     "from attempt 1, which attempt 2 superseded"},
    {"UnstartedAttempt", Steps(500, 31, 310, 3), absl::StatusCode::kFailedPrecondition,
     "which has not started"},
    {"OldJobStart", Started(500, 2, 0), absl::StatusCode::kFailedPrecondition,
     "is not after the run's latest attempt 2"},
    {"AttemptZero", Started(500, 0, 0), absl::StatusCode::kInvalidArgument,
     "job_started.attempt must be >= 1"},
    {"NegativeRestore", Started(500, 3, -5), absl::StatusCode::kInvalidArgument,
     "restored_step -5 is negative"},
    {"CheckpointAhead", Checkpoint(500, 40, 1), absl::StatusCode::kFailedPrecondition,
     "is ahead of the latest reported step 30"},
    {"NegativeBlocking", Checkpoint(500, 30, -1), absl::StatusCode::kInvalidArgument,
     "blocking_seconds"},
    {"BadCause", Interrupted(500, "GPU Xid 79!"), absl::StatusCode::kInvalidArgument,
     "interruption.cause 'GPU Xid 79!'"},
    {"LongId", WithId(Steps(500, 31, 310), std::string(200, 'x')),
     absl::StatusCode::kInvalidArgument, "id is 200 bytes"},
    {"ReservedId", WithId(Steps(500, 31, 310), "~st/a2/s31"), absl::StatusCode::kInvalidArgument,
     "reserved for natural keys"},
};

INSTANTIATE_TEST_SUITE_P(Accounting, BadEvents, ::testing::ValuesIn(kBadEvents),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Accounting, OrderOfLifeIsEnforced) {
  RunState s;
  EXPECT_EQ(ApplyEvent(s, Steps(10, 1, 10)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.events, 0u);
  s = Fold({Started(0, 1, 0), Steps(10, 1, 10), Interrupted(20, "gpu")});
  // Steps while down: the interrupted attempt cannot report more.
  EXPECT_EQ(ApplyEvent(s, Steps(30, 2, 20)).code(), absl::StatusCode::kFailedPrecondition);
  // A second interruption while down.
  EXPECT_EQ(ApplyEvent(s, Interrupted(30, "gpu")).code(), absl::StatusCode::kFailedPrecondition);
  s = Fold({Started(0, 1, 0), Steps(10, 1, 10), Finished(20)});
  const absl::Status after = ApplyEvent(s, Steps(30, 2, 20));
  EXPECT_EQ(after.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(after.message()).find("after run_finished"), std::string::npos);
}

TEST(Accounting, NaturalKeysIdentifyAnEventWithoutAnId) {
  EXPECT_EQ(EventKey(Steps(1, 7, 70), 3), "~st/a3/s7");
  EXPECT_EQ(EventKey(WithId(Steps(1, 7, 70), "abc"), 3), "abc");
  EXPECT_NE(EventKey(Steps(1, 7, 70), 3), EventKey(Steps(1, 7, 70), 4));
  EXPECT_NE(EventKey(Checkpoint(1, 7, 1), 3), EventKey(Steps(1, 7, 70), 3));
  EXPECT_EQ(EventKey(Started(5, 2, 0), 0), "~js/a2");
}

TEST(Accounting, StateIsBoundedPerRunNotPerEvent) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  for (int i = 1; i <= 20000; ++i) {
    ASSERT_TRUE(ApplyEvent(s, Steps(i * 10.0, i, i * 100)).ok());
    if (i % 2 == 0) {
      ASSERT_TRUE(ApplyEvent(s, Checkpoint(i * 10.0, i, 0)).ok());
    }
  }
  EXPECT_LE(s.checkpoints.size(), kMaxCheckpointMarks);
  EXPECT_LE(s.recent.size(), 260u);  // an hour of reports every 10 s, thinned
}

}  // namespace
}  // namespace flightplan::forecast
