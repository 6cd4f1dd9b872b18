// Run accounting on hand-built event logs, to the second (docs/contract.md §5).
#include "forecast/accounting.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/plan_file.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"
#include "tests/flagship_plan.h"

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
      Started(0, 1, 0), Steps(300, 100, 1000),  // launch to first step: startup 300
      Steps(360, 110, 1100),                    // productive 60
      Steps(420, 120, 1200),                    // productive 60
      Checkpoint(430, 120, 10),                 // checkpoint 10: the lineage at step 120 is durable
      Steps(490, 130, 1300),                    // productive 60
      Steps(550, 140, 1400),                    // productive 60
      Interrupted(580, "gpu"),                  // 30 s since the last report: lost
      Started(880, 2, 120),                     // down 300; steps 120..140 (120 s) rolled back to lost
      Steps(1000, 130, 1300),                   // 10 steps at the usual 6 s: 60 s of work, 60 s startup
      Steps(1060, 140, 1400),                   // productive 60
  });
  const RunSnapshot snap = Snapshot(s, At(1060));
  ExpectSeconds(snap, {.productive = 240, .checkpoint = 10, .lost = 150, .startup = 360, .down_unplanned = 300});
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
      Started(0, 1, 0), Steps(60, 10, 100),  // startup 60
      Steps(120, 20, 200),                   // productive 60; usual gap 60 s
      Steps(180, 30, 300),                   // productive 60
  });
  // Live, 1,000 s in: 820 s without a step is past 5 x 60 s, so all but the usual 60 s
  // is stalled right now.
  ExpectSeconds(Snapshot(s, At(1000)), {.productive = 180, .startup = 60, .stalled = 760});
  ASSERT_TRUE(ApplyEvent(s, Interrupted(3780, "hang")).ok());
  // The watchdog's kill: 60 s of the hang is the usual work, lost; 3,540 s stalled.
  ExpectSeconds(Snapshot(s, At(3780)), {.productive = 120, .lost = 60, .startup = 60, .stalled = 3540});
  // Still down 120 s later, on the wall clock: that burns the budget now.
  const RunSnapshot later = Snapshot(s, At(3900));
  ExpectSeconds(later, {.productive = 120, .lost = 60, .startup = 60, .down_unplanned = 120, .stalled = 3540});
  EXPECT_DOUBLE_EQ(later.failure_budget_consumed_seconds, 60 + 3540 + 120);
}

TEST(Accounting, UnreportedCrashImpliesAnInterruptionAtTheLastEvent) {
  const RunState s = Fold({
      Started(0, 1, 0), Steps(100, 10, 100),  // startup 100
      Steps(200, 20, 200),                    // productive 100
      Checkpoint(210, 20, 10),                // checkpoint 10
      Steps(310, 30, 300),                    // productive 100
      // the job dies silently here
      Started(1000, 2, 20),  // down_unplanned 690 since 310; steps 20..30 lost (100 s)
      Steps(1150, 30, 300),  // 10 steps at 10 s: 100 s of work, 50 s startup
  });
  const RunSnapshot snap = Snapshot(s, At(1150));
  ExpectSeconds(snap, {.productive = 200, .checkpoint = 10, .lost = 100, .startup = 150, .down_unplanned = 690});
  ASSERT_EQ(snap.interruptions.size(), 1u);
  EXPECT_EQ(snap.interruptions[0].cause, "unknown");
  EXPECT_FALSE(snap.interruptions[0].planned);
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 100 + 690 + 50);
  EXPECT_EQ(s.unplanned_interruptions, 1u);
}

TEST(Accounting, RestoreToAnOlderCheckpoint) {
  RunState s = Fold({
      Started(0, 1, 0), Steps(100, 10, 100),  // startup 100
      Steps(200, 20, 200),                    // productive 100
      Checkpoint(205, 20, 5),                 // checkpoint 5, lineage at 20: 100 s, 200 tokens
      Steps(305, 30, 300),                    // productive 100
      Steps(405, 40, 400),                    // productive 100
      Checkpoint(410, 40, 5),                 // checkpoint 5
      Steps(510, 50, 500),                    // productive 100
      Interrupted(520, "nccl"),               // lost 10
      Started(820, 2, 20),                    // down 300; the step-40 checkpoint is unusable: back to 20,
                                              // so steps 20..50 (300 s of work) are lost
  });
  RunSnapshot snap = Snapshot(s, At(820));
  ExpectSeconds(snap, {.productive = 100, .checkpoint = 10, .lost = 310, .startup = 100, .down_unplanned = 300});
  EXPECT_EQ(snap.tokens, 200);
  EXPECT_EQ(snap.step, 20);
  ASSERT_TRUE(ApplyEvent(s, Steps(950, 30, 300)).ok());   // 100 s of work, 30 s startup
  ASSERT_TRUE(ApplyEvent(s, Steps(1050, 40, 400)).ok());  // productive 100
  snap = Snapshot(s, At(1050));
  ExpectSeconds(snap, {.productive = 300, .checkpoint = 10, .lost = 310, .startup = 130, .down_unplanned = 300});
  EXPECT_EQ(snap.tokens, 400);
  EXPECT_TRUE(snap.flags.empty());
}

TEST(Accounting, RestoreToANeverCheckpointedStepIsAcceptedAndFlagged) {
  RunState s = Fold({
      Started(0, 1, 0), Steps(100, 10, 100), Steps(200, 20, 200),  // productive 100
      Steps(300, 30, 300),                                         // productive 200
      Interrupted(300, "gpu"), Started(400, 2, 15),  // no checkpoint at 15: halfway between 10 (0 s) and 30 (200 s)
  });
  const RunSnapshot snap = Snapshot(s, At(400));
  ASSERT_EQ(snap.flags.size(), 1u);
  EXPECT_NE(snap.flags[0].find("restored step 15, which was never checkpointed nor reported"), std::string::npos)
      << snap.flags[0];
  EXPECT_EQ(snap.step, 15);
  EXPECT_EQ(snap.tokens, 150);  // interpolated between the reports of steps 10 and 20
  ExpectSeconds(snap, {.productive = 50, .lost = 150, .startup = 100, .down_unplanned = 100});
}

// Rollbacks are timed from the step reports (Google's ml-goodput-measurement scenario of
// a relaunch to a step whose save was never reported): restoring a reported step moves
// exactly the time after its report to lost.
TEST(Accounting, ARestoreToAReportedStepLosesTheTimeAfterItsReport) {
  RunState s = Fold({
      Started(0, 1, 0), Steps(0, 0, 0), Steps(10, 1, 100), Steps(11, 2, 200),
      Started(20, 2, 1),  // relaunched from step 1, whose save was never reported
  });
  RunSnapshot snap = Snapshot(s, At(20));
  EXPECT_EQ(snap.step, 1);
  EXPECT_EQ(snap.tokens, 100);
  EXPECT_NEAR(snap.seconds.productive, 10, 1e-9);
  EXPECT_NEAR(snap.seconds.lost, 1, 1e-9);
  EXPECT_NEAR(snap.seconds.down_unplanned, 9, 1e-9);
  ASSERT_EQ(snap.flags.size(), 1u);
  EXPECT_NE(snap.flags[0].find("restored step 1, which was reported but never checkpointed"), std::string::npos)
      << snap.flags[0];

  // Asynchronous saves: step 1's save is reported after step 2 (Megatron's --async-save).
  s = Fold({
      Started(0, 1, 0),
      Steps(0, 0, 0),
      Steps(10, 1, 100),
      Steps(11, 2, 200),
      Checkpoint(11.5, 1, 0),
      Started(20, 2, 1),
  });
  snap = Snapshot(s, At(20));
  EXPECT_NEAR(snap.seconds.productive, 10, 1e-9);
  EXPECT_NEAR(snap.seconds.lost, 1.5, 1e-9);
  EXPECT_NEAR(snap.seconds.down_unplanned, 8.5, 1e-9);
  EXPECT_TRUE(snap.flags.empty()) << snap.flags[0];
}

// A stall's threshold is not evidence of the usual gap: the second stall keeps one usual
// step (180 s) as work, like the first.
TEST(Accounting, AStallDoesNotWidenTheNextStallsThreshold) {
  std::vector<Event> events = {Started(0, 1, 0), Steps(0, 0, 0)};
  double t = 0;
  int64_t step = 0;
  auto steps = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ++step;
      events.push_back(Steps(t += 180, step, step * 10));
    }
  };
  steps(10);
  t += 3600 - 180;  // a stall: the next report 3,600 s after the last
  steps(4);
  t += 3600 - 180;
  steps(4);
  const RunSnapshot snap = Snapshot(Fold(events), At(t));
  EXPECT_NEAR(snap.seconds.stalled, 2 * (3600 - 180), 1e-6);
  EXPECT_NEAR(snap.seconds.productive, 18 * 180, 1e-6);
}

// A client that reports every N steps and saves at its exit names a step the reports have
// not reached: the step was reached, its tokens inferred from the tokens per step, flagged,
// and set by the next report, even below the inference.
TEST(Accounting, ASaveAheadOfTheReportsIsAcceptedWithItsTokensInferred) {
  RunState s = Fold({
      Started(0, 1, 0),
      Steps(0, 0, 0),
      Steps(100, 10, 1000),
      Steps(200, 20, 2000),
      Checkpoint(230, 23, 0),
  });
  RunSnapshot snap = Snapshot(s, At(230));
  EXPECT_EQ(snap.step, 23);
  EXPECT_EQ(snap.tokens, 2300);
  EXPECT_NEAR(snap.seconds.productive, 230, 1e-9);
  ASSERT_EQ(snap.flags.size(), 1u);
  EXPECT_NE(snap.flags[0].find("checkpoint_saved.step 23 is ahead of the latest reported step 20: the step is "
                               "taken as reached, its tokens inferred at 100 per step (2300)"),
            std::string::npos)
      << snap.flags[0];
  // The job exits and is relaunched from that save; its first report sets the tokens.
  RunState relaunched = s;
  ASSERT_TRUE(ApplyEvent(relaunched, Interrupted(240, "exit", true)).ok());
  ASSERT_TRUE(ApplyEvent(relaunched, Started(300, 2, 23)).ok());
  ASSERT_TRUE(ApplyEvent(relaunched, Steps(400, 23, 2290)).ok());
  snap = Snapshot(relaunched, At(400));
  EXPECT_EQ(snap.tokens, 2290);
  EXPECT_NEAR(relaunched.productive_tokens, 2290, 1e-9);
  ASSERT_TRUE(ApplyEvent(relaunched, Steps(500, 24, 2390)).ok());
  // Or the job goes on: the next report sets them.
  ASSERT_TRUE(ApplyEvent(s, Steps(260, 25, 2480)).ok());
  EXPECT_EQ(s.tokens, 2480);
  EXPECT_NEAR(s.productive_tokens, 2480, 1e-9);
  // A second report of the same step with other tokens is refused again.
  const absl::Status st = ApplyEvent(s, Steps(270, 25, 2490));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

// Interruption causes become label values: past the run's limit, new ones count as
// "other" and nothing is lost from the counts or the time accounting.
TEST(Accounting, CausesPastTheLimitCountAsOther) {
  RunState s;
  s.settings.max_causes = 3;
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
      Started(0, 1, 0), Steps(100, 100, 1000), Steps(200, 200, 3000), Interrupted(210, "gpu"),
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
      Started(0, 1, 0), Steps(100, 200, 2000), Interrupted(110, "gpu"),
      Started(200, 2, 300),     // beyond step 200: tokens unknown
      Checkpoint(210, 300, 5),  // saved during startup, tokens still unknown: not a mark
      Interrupted(220, "gpu"), Started(300, 3, 300), Steps(400, 310, 3100),  // the first report sets the tokens
  });
  const RunSnapshot snap = Snapshot(s, At(400));
  EXPECT_EQ(snap.tokens, 3100);
  EXPECT_EQ(snap.step, 310);
}

TEST(Accounting, ChecksAgainstAnExactCheckpointStillHold) {
  RunState s = Fold({Started(0, 1, 0), Steps(100, 100, 1000), Checkpoint(105, 100, 5), Steps(200, 200, 2000),
                     Interrupted(210, "gpu"), Started(300, 2, 100)});
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
  const RunState s = Fold({Started(0, 1, 0), Steps(100, 10, 100), Checkpoint(120, 10, 20), Steps(220, 20, 200)});
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
  const RunState s =
      Fold({Started(0, 1, 0), Steps(100, 10, 100), Interrupted(150, "gpu"), Started(200, 2, 0), Steps(300, 10, 100)});
  // Resent later, an attempt-1 event without an attempt still belongs to attempt 1, so its
  // natural key is the one it was stored under.
  EXPECT_EQ(AttemptOf(s, Steps(100, 10, 100)), 1u);
  EXPECT_EQ(AttemptOf(s, Interrupted(150, "gpu")), 1u);
  EXPECT_EQ(AttemptOf(s, Steps(300, 10, 100)), 2u);
  EXPECT_EQ(AttemptOf(s, Steps(300, 10, 100, 7)), 7u);  // its own, when given
}

TEST(Accounting, PlannedMaintenanceIsNotChargedToTheBudget) {
  const RunState s = Fold({
      Started(0, 1, 0), Steps(100, 10, 100),  // startup 100
      Steps(200, 20, 200),                    // productive 100
      Checkpoint(205, 20, 5), Interrupted(205, "maintenance", true),
      Started(3805, 2, 20),  // down_planned 3,600; nothing lost
      Steps(3955, 30, 300),  // 100 s of work, 50 s startup, not charged: the stop was planned
  });
  const RunSnapshot snap = Snapshot(s, At(3955));
  ExpectSeconds(snap, {.productive = 200, .checkpoint = 5, .startup = 150, .down_planned = 3600});
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
  RunState s = Fold({Started(0, 1, 0), Steps(100, 10, 100), Interrupted(150, "gpu"), Started(200, 2, 0),
                     Steps(300, 20, 200), Checkpoint(310, 20, 10), Steps(400, 30, 300)});
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
     "steps.step 25 goes backwards from step 30 without a restore"},
    {"NegativeTokens", Steps(500, 31, -1), absl::StatusCode::kInvalidArgument, "steps.tokens -1 is negative"},
    {"SameStepOtherTokens", Steps(500, 30, 310), absl::StatusCode::kInvalidArgument,
     "which was reported with 300 tokens"},
    {"SupersededAttempt", Steps(500, 31, 310, 1), absl::StatusCode::kFailedPrecondition,
     "from attempt 1, which attempt 2 superseded"},
    {"UnstartedAttempt", Steps(500, 31, 310, 3), absl::StatusCode::kFailedPrecondition, "which has not started"},
    {"OldJobStart", Started(500, 2, 0), absl::StatusCode::kAlreadyExists,
     "was already launched: the run's current attempt is 2; a relaunch is attempt 3"},
    {"AttemptZero", Started(500, 0, 0), absl::StatusCode::kInvalidArgument, "job_started.attempt must be >= 1"},
    {"NegativeRestore", Started(500, 3, -5), absl::StatusCode::kInvalidArgument, "restored_step -5 is negative"},
    {"NegativeBlocking", Checkpoint(500, 30, -1), absl::StatusCode::kInvalidArgument, "blocking_seconds"},
    {"BadCause", Interrupted(500, "GPU Xid 79!"), absl::StatusCode::kInvalidArgument,
     "interruption.cause 'GPU Xid 79!'"},
    {"LongId", WithId(Steps(500, 31, 310), std::string(200, 'x')), absl::StatusCode::kInvalidArgument,
     "id is 200 bytes"},
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
  // Room for one more at most: a run at rest does not hold twice its marks' memory.
  EXPECT_LE(s.checkpoints.capacity(), kMaxCheckpointMarks + 1);
  EXPECT_LE(s.recent.size(), 260u);  // an hour of reports every 10 s, thinned
}

// --- Evidence samples over whole simulated runs of the flagship plan ---

using ::flightplan::testing::FlagshipPlan;

double Rel(double a, double b) { return std::fabs(a - b) / std::max({1.0, std::fabs(a), std::fabs(b)}); }

bool SameSample(const EvidenceSample& a, const EvidenceSample& b) {
  return a.time == b.time && Rel(a.running_seconds, b.running_seconds) <= 1e-6 &&
         Rel(a.productive_seconds, b.productive_seconds) <= 1e-6 &&
         Rel(a.productive_tokens, b.productive_tokens) <= 1e-6 && Rel(a.incidents, b.incidents) <= 1e-6 &&
         Rel(a.incident_loss_seconds, b.incident_loss_seconds) <= 1e-6 &&
         Rel(a.other_seconds, b.other_seconds) <= 1e-6 && Rel(a.planned_stops, b.planned_stops) <= 1e-6;
}
std::string Describe(const EvidenceSample& e) {
  return absl::StrCat(absl::FormatTime(e.time), " running ", e.running_seconds, " productive ", e.productive_seconds,
                      " tokens ", e.productive_tokens, " incidents ", e.incidents, " loss ", e.incident_loss_seconds,
                      " other ", e.other_seconds, " stops ", e.planned_stops);
}
void ExpectSameSample(const EvidenceSample& got, const EvidenceSample& want, const std::string& where) {
  EXPECT_TRUE(SameSample(got, want)) << where << "\n got  " << Describe(got) << "\n want " << Describe(want);
}

// Folds a simulated run event by event, checking after each one that the newest sample is
// the evidence as of that event; returns the state and every sample as it was when it
// was the newest (keyed by its time), to check later that thinning keeps them unchanged.
struct FoldedRun {
  std::vector<Event> events;
  RunState state;
  std::map<absl::Time, EvidenceSample> as_newest;
};
FoldedRun FoldChecked(const SimulationOptions& options, double stop_at_progress = 2) {
  FoldedRun r;
  r.events = SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, options);
  const double target = static_cast<double>(FlagshipPlan().plan.data.tokens);
  size_t applied = 0;
  bool reported = false;
  for (const Event& e : r.events) {
    if (static_cast<double>(r.state.tokens) >= stop_at_progress * target) break;
    const absl::Status st = ApplyEvent(r.state, e);
    EXPECT_TRUE(st.ok()) << st;
    ++applied;
    if (r.state.evidence.empty()) {
      ADD_FAILURE() << "no evidence after event " << applied;
      continue;
    }
    // The newest sample is always the evidence as of the latest event (the first event
    // that differs is reported, not all of them).
    const EvidenceSample now = EvidenceNow(r.state, Snapshot(r.state, r.state.last_time));
    if (!SameSample(r.state.evidence.back(), now) && !reported) {
      reported = true;
      ExpectSameSample(r.state.evidence.back(), now, absl::StrCat("after event ", applied));
    }
    r.as_newest[r.state.evidence.back().time] = r.state.evidence.back();
  }
  r.events.resize(applied);
  return r;
}

// What any folded run's samples must satisfy; `events` are the events folded.
void ExpectEvidenceInvariants(const RunState& s, const std::vector<Event>& events,
                              const std::map<absl::Time, EvidenceSample>& as_newest) {
  const std::deque<EvidenceSample>& ev = s.evidence;
  ASSERT_GE(ev.size(), 2u);
  EXPECT_LE(ev.size(), kMaxEvidenceSamples);
  // The first sample is the first event's, kept through every thinning: the run's start,
  // with nothing accumulated yet (a job_started charges nothing).
  EXPECT_EQ(ev.front().time, PackedTime(s.first_time));  // to the microsecond, as kept
  EXPECT_EQ(ev.front().running_seconds, 0);
  EXPECT_EQ(ev.front().productive_tokens, 0);
  EXPECT_EQ(ev.front().incidents, 0);
  // The last is the state as of its latest event.
  ExpectSameSample(ev.back(), EvidenceNow(s, Snapshot(s, s.last_time)), "last sample");
  EXPECT_EQ(ev.back().time, PackedTime(s.last_time));

  const double elapsed = absl::ToDoubleSeconds(s.last_time - s.first_time);
  const double spacing = absl::ToDoubleSeconds(s.evidence_spacing);
  const double base = absl::ToDoubleSeconds(kEvidenceSpacing);
  // The spacing only ever doubles from kEvidenceSpacing.
  const double doublings = std::log2(spacing / base);
  EXPECT_GE(spacing, base);
  EXPECT_NEAR(doublings, std::round(doublings), 1e-9) << spacing;

  for (size_t i = 1; i < ev.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("sample ", i, " of ", ev.size()));
    const EvidenceSample& a = ev[i - 1];
    const EvidenceSample& b = ev[i];
    EXPECT_LT(a.time, b.time);
    // Every gap but the newest (still filling) is at least the spacing.
    if (i + 1 < ev.size()) {
      EXPECT_GE(absl::ToDoubleSeconds(b.time - a.time), spacing);
    }
    // Cumulative: these only grow. (productive_seconds and productive_tokens are the work
    // that still counts: a restore takes them back, so they are not among them.)
    EXPECT_GE(b.running_seconds, a.running_seconds);
    EXPECT_GE(b.incidents, a.incidents);
    EXPECT_GE(b.incident_loss_seconds, a.incident_loss_seconds);
    EXPECT_GE(b.other_seconds, a.other_seconds - 1e-6);
    EXPECT_GE(b.planned_stops, a.planned_stops);
    // Bounded by the wall clock: running time is part of the time since the start, the
    // work that counts part of the running time.
    EXPECT_LE(b.running_seconds, absl::ToDoubleSeconds(b.time - s.first_time) + 1e-6);
    EXPECT_LE(b.productive_seconds, b.running_seconds + 1e-6);
    EXPECT_LE(b.other_seconds, absl::ToDoubleSeconds(b.time - s.first_time) + 1e-6);
  }
  // Thinning drops samples, never changes one: each is what it was as the newest.
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    auto it = as_newest.find(ev[i].time);
    ASSERT_NE(it, as_newest.end()) << i;
    ExpectSameSample(ev[i], it->second, absl::StrCat("kept sample ", i));
  }
  // Planned stops and incidents against the events themselves (these runs report every
  // crash): a sample counts those before its time, and at most those at its time too.
  for (const EvidenceSample& e : ev) {
    auto count = [&](bool planned, const std::function<bool(absl::Time)>& in) {
      return static_cast<double>(std::count_if(events.begin(), events.end(), [&](const Event& x) {
        return x.kind == EventKind::kInterruption && x.planned == planned && in(x.time);
      }));
    };
    EXPECT_GE(e.planned_stops, count(true, [&](absl::Time t) { return t < e.time; }));
    EXPECT_LE(e.planned_stops, count(true, [&](absl::Time t) { return t <= e.time; }));
    EXPECT_LE(e.incidents, count(false, [&](absl::Time t) { return t <= e.time; }));
  }
  const auto planned = static_cast<double>(std::count_if(
      events.begin(), events.end(), [](const Event& x) { return x.kind == EventKind::kInterruption && x.planned; }));
  EXPECT_EQ(ev.back().planned_stops, planned);
  EXPECT_EQ(ev.back().planned_stops, s.planned_interruptions);

  // Thinning: at the latest doubling, 1,023 gaps of at least the old spacing had passed.
  if (spacing > base) {
    EXPECT_GE(elapsed, (kMaxEvidenceSamples - 1) * spacing / 2);
  }
  // Without thinning the spacing stays; and no run shorter than 1,023 spacings can have
  // thinned (it would have needed 1,025 samples that far apart).
  if (elapsed < (kMaxEvidenceSamples - 1) * base) {
    EXPECT_EQ(s.evidence_spacing, kEvidenceSpacing);
  }
}

// The samples fill in when the newest is at least the spacing past the one before it, so
// each gap is under the spacing plus one gap between events, a different one each time:
// a run that never thinned spans less than 1,023 spacings plus its 1,023 longest gaps
// between events. A run longer than that must have thinned.
bool MustHaveThinned(const std::vector<Event>& events) {
  std::vector<double> gaps;
  for (size_t i = 1; i < events.size(); ++i) gaps.push_back(absl::ToDoubleSeconds(events[i].time - events[i - 1].time));
  std::sort(gaps.rbegin(), gaps.rend());
  double longest = 0;
  for (size_t i = 0; i < std::min(gaps.size(), kMaxEvidenceSamples - 1); ++i) longest += gaps[i];
  const double elapsed = absl::ToDoubleSeconds(events.back().time - events.front().time);
  return elapsed >= (kMaxEvidenceSamples - 1) * absl::ToDoubleSeconds(kEvidenceSpacing) + longest;
}

TEST(Evidence, AWholeSimulatedRunKeepsBoundedOrderedSamples) {
  const FoldedRun r = FoldChecked(SimulationOptions{});
  ASSERT_EQ(r.state.phase, Phase::kFinished);
  ExpectEvidenceInvariants(r.state, r.events, r.as_newest);
  // 38 days of reports every few minutes: more than 1,024 half-hours, thinned at least once.
  ASSERT_TRUE(MustHaveThinned(r.events));
  EXPECT_GT(r.state.evidence_spacing, kEvidenceSpacing);
  EXPECT_GT(r.state.planned_interruptions, 0u);  // the plan's maintenance windows
}

TEST(Evidence, FrequentReportsThinTheSamplesButNotTheirReach) {
  SimulationOptions o;
  o.target_reports = 20000;
  const FoldedRun r = FoldChecked(o);
  ASSERT_EQ(r.state.phase, Phase::kFinished);
  ExpectEvidenceInvariants(r.state, r.events, r.as_newest);
  ASSERT_TRUE(MustHaveThinned(r.events));
  EXPECT_GT(r.state.evidence_spacing, kEvidenceSpacing);
  // Ten times the reports, the same reach: the samples still span the whole run.
  EXPECT_EQ(r.state.evidence.front().time, r.events.front().time);
}

TEST(Evidence, AShortRunIsNotThinned) {
  // The first 40% of the run: about 15 days, under 1,023 half-hours (21.3 days).
  const FoldedRun r = FoldChecked(SimulationOptions{}, 0.4);
  ASSERT_NE(r.state.phase, Phase::kFinished);
  ASSERT_LT(absl::ToDoubleSeconds(r.state.last_time - r.state.first_time),
            (kMaxEvidenceSamples - 1) * absl::ToDoubleSeconds(kEvidenceSpacing));
  ExpectEvidenceInvariants(r.state, r.events, r.as_newest);
  EXPECT_EQ(r.state.evidence_spacing, kEvidenceSpacing);
}

TEST(Evidence, SurvivesTheSnapshotAndThinsOnAlike) {
  SimulationOptions o;
  o.target_reports = 20000;
  o.intervention_every_days = 10;  // planned stops of a second cause
  // Cut at 75%: about 29 days, past the first thinning.
  FoldedRun r = FoldChecked(o, 0.75);
  ASSERT_GT(r.state.evidence_spacing, kEvidenceSpacing);
  ASSERT_GT(r.state.planned_interruptions, 0u);
  RunState restored = convert::StateFromProto(convert::StateToProto(r.state));
  EXPECT_EQ(restored.evidence_spacing, r.state.evidence_spacing);
  EXPECT_EQ(restored.planned_interruptions, r.state.planned_interruptions);
  auto expect_same = [](const RunState& a, const RunState& b) {
    ASSERT_EQ(a.evidence.size(), b.evidence.size());
    for (size_t i = 0; i < a.evidence.size(); ++i) {
      // Times are stored in microseconds; the simulator's are finer.
      EXPECT_LT(absl::AbsDuration(a.evidence[i].time - b.evidence[i].time), absl::Microseconds(1)) << i;
      EvidenceSample x = b.evidence[i];
      x.time = a.evidence[i].time;
      ExpectSameSample(a.evidence[i], x, absl::StrCat("sample ", i));
    }
  };
  expect_same(r.state, restored);
  // The rest of the run into both: the same samples, thinned at the same moments (a lost
  // spacing would restart at half-hours and keep other ones).
  const std::vector<Event> all = SimulateRun(FlagshipPlan().plan, FlagshipPlan().report, o);
  for (size_t i = r.events.size(); i < all.size(); ++i) {
    ASSERT_TRUE(ApplyEvent(r.state, all[i]).ok());
    ASSERT_TRUE(ApplyEvent(restored, all[i]).ok());
  }
  EXPECT_EQ(restored.phase, Phase::kFinished);
  EXPECT_EQ(restored.evidence_spacing, r.state.evidence_spacing);
  EXPECT_EQ(restored.planned_interruptions, r.state.planned_interruptions);
  expect_same(r.state, restored);
}

// Two events at the same instant (a report and an async save of its step, which blocks for
// 0 s) must not make two samples of one moment: the second is the newer state of it.
// DISABLED: fails. PushEvidence pushes a new sample whenever the newest one is complete,
// whatever the new event's time, so the event right after the one that completed a sample
// makes a second sample of the same instant when it shares its time (run with
// --gtest_also_run_disabled_tests).
TEST(Evidence, EventsAtOneInstantMakeOneSample) {
  const double spacing = absl::ToDoubleSeconds(kEvidenceSpacing);
  const RunState s = Fold({
      Started(0, 1, 0), Steps(60, 10, 100), Steps(spacing + 60, 20, 200),  // the newest sample is now a full spacing on
      Checkpoint(spacing + 60, 20, 0),                                     // the same instant
      Interrupted(spacing + 60, "maintenance", true),                      // and again
  });
  ASSERT_GE(s.evidence.size(), 2u);
  for (size_t i = 1; i < s.evidence.size(); ++i) {
    EXPECT_LT(s.evidence[i - 1].time, s.evidence[i].time) << "samples " << i - 1 << " and " << i;
  }
  EXPECT_EQ(s.evidence.back().planned_stops, 1);
}

// A relaunch that hangs before its first step (issue 12): past 5x the run's usual startup
// (at least 10 minutes), the time in `starting` is `stalled` and charged to the failure
// budget, also while it is still hanging (the open interval of a snapshot) and also after
// a planned stop, whose startup is otherwise not charged.
TEST(Accounting, ALaunchThatHangsInStartupStallsPastItsBound) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  ASSERT_TRUE(ApplyEvent(s, Steps(300, 10, 100)).ok());  // a 300 s startup: the usual one
  ASSERT_TRUE(ApplyEvent(s, Steps(400, 20, 200)).ok());
  ASSERT_TRUE(ApplyEvent(s, Interrupted(400, "maintenance", /*planned=*/true)).ok());
  ASSERT_TRUE(ApplyEvent(s, Started(1400, 2, 20)).ok());
  EXPECT_DOUBLE_EQ(StartupStallSeconds(s), 1500);  // 5 x 300 s
  // Four hours later, still no step: 1,500 s of startup, the rest stalled.
  RunSnapshot snap = Snapshot(s, At(1400 + 4 * 3600));
  ExpectSeconds(snap, {.productive = 100, .startup = 300 + 1500, .down_planned = 1000, .stalled = 4 * 3600 - 1500});
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 4 * 3600 - 1500);
  // The step that ends it folds the same split, less the 10 s its one step took (the
  // usual seconds per step: a report covers the steps before it).
  ASSERT_TRUE(ApplyEvent(s, Steps(1400 + 4 * 3600, 21, 210)).ok());
  snap = Snapshot(s, s.last_time);
  EXPECT_DOUBLE_EQ(snap.seconds.startup, 300 + 1500);
  EXPECT_DOUBLE_EQ(snap.seconds.productive, 100 + 10);
  EXPECT_DOUBLE_EQ(snap.seconds.stalled, 4 * 3600 - 1500 - 10);
  EXPECT_DOUBLE_EQ(BudgetConsumed(s), 4 * 3600 - 1500 - 10);
  // A hang does not teach the run that startups take hours.
  EXPECT_LE(s.typical_startup, 1500);
}

// A first launch has no usual startup yet: 30 minutes, then stalled.
TEST(Accounting, AFirstLaunchWithoutAStepStallsAfterHalfAnHour) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  const RunSnapshot snap = Snapshot(s, At(90 * 60));
  ExpectSeconds(snap, {.startup = 1800, .stalled = 3600});
  EXPECT_DOUBLE_EQ(snap.failure_budget_consumed_seconds, 3600);
}

// "One launch, one attempt" (FoldOrder): the training's own reports and the scheduler's
// (`flightplan slurm`, source "slurm") of one launch or one stop fold as one event.
Event Scheduler(Event e) {
  e.source = kSchedulerSource;
  return e;
}
Event Launch(Event e, const std::string& launch) {
  e.launch = launch;
  return e;
}

RunState FoldLog(const std::vector<Event>& events) {
  std::vector<LoggedEvent> log;
  for (size_t i = 0; i < events.size(); ++i) log.push_back({static_cast<int64_t>(i + 1), events[i]});
  int64_t failed = 0;
  absl::StatusOr<RunState> state = Refold(log, FoldSettings{}, failed);
  EXPECT_TRUE(state.ok()) << state.status() << " at seq " << failed;
  return state.ok() ? *state : RunState{};
}

TEST(JoinReports, TheSchedulersLaunchAndTheTrainingsAreOneAttempt) {
  // Slurm started the job at 0 s; the training said so at 40 s (imports, NCCL), resuming
  // from step 0, and reported step 10 at 100 s.
  const std::vector<Event> joined = {Scheduler(Launch(Started(0, 1, 0), "slurm:7.0")),
                                     Launch(Started(40, 1, 0), "slurm:7.0"), Steps(100, 10, 1000)};
  const RunState s = FoldLog(joined);
  EXPECT_EQ(s.attempt, 1u);
  ASSERT_EQ(s.attempt_starts.size(), 1u);
  EXPECT_EQ(s.attempt_starts[0].time, At(0));  // the allocation's start: better dated
  EXPECT_EQ(s.attempt_starts[0].launch, "slurm:7.0");
  EXPECT_DOUBLE_EQ(s.seconds.startup + s.seconds.productive, 100);  // from Slurm's start
  EXPECT_TRUE(s.scheduler_reports);
  // The same, whichever report came first in the log.
  const RunState reversed = FoldLog({joined[1], joined[2], joined[0]});
  EXPECT_EQ(reversed.attempt_starts.size(), 1u);
  EXPECT_DOUBLE_EQ(reversed.seconds.startup, s.seconds.startup);
  EXPECT_DOUBLE_EQ(reversed.seconds.productive, s.seconds.productive);
}

TEST(JoinReports, TheTrainingsRestoredStepWins) {
  // A relaunch: the scheduler does not know the checkpoint; the training resumes from step
  // 100 after reaching 150, so the work after step 100 is lost.
  const RunState s =
      FoldLog({Started(0, 1, 0), Steps(1000, 100, 10000), Checkpoint(1000, 100, 0), Steps(1500, 150, 15000),
               Scheduler(Interrupted(1600, "node")), Scheduler(Launch(Started(2000, 2, 0), "slurm:8.1")),
               Launch(Started(2030, 2, 100), "slurm:8.1"), Steps(2600, 160, 16000)});
  EXPECT_EQ(s.attempt, 2u);
  EXPECT_EQ(s.step, 160);
  EXPECT_EQ(s.tokens, 16000);
  EXPECT_GT(s.seconds.lost, 0);  // steps 100..150 went
}

TEST(JoinReports, AStopNamedByTheSchedulerKeepsTheTrainingsWordInItsDetail) {
  // The training caught SIGTERM at 500 s and called it a preemption; Slurm ended the job
  // at 530 s at its time limit, set to come back.
  Event training = Interrupted(500, "preemption", true);
  training.detail = "SIGTERM";
  Event slurm = Scheduler(Interrupted(530, "time_limit", true));
  slurm.attempt = 1;
  slurm.detail = "Slurm: TIMEOUT on gpu07";
  const RunState s = FoldLog({Started(0, 1, 0), Steps(400, 40, 4000), training, slurm});
  ASSERT_EQ(s.interruptions.size(), 1u);
  EXPECT_EQ(s.interruptions[0].cause, "time_limit");
  EXPECT_TRUE(s.interruptions[0].planned);
  ASSERT_EQ(s.interruption_marks.size(), 1u);
  EXPECT_EQ(s.interruption_marks[0].time, At(500));  // when work stopped: the earlier report
  EXPECT_EQ(s.last_time, At(500));
  // The joined event, as the fold applies it: the scheduler's words, then the training's.
  std::vector<LoggedEvent> log = {{1, Started(0, 1, 0)}, {2, Steps(400, 40, 4000)}, {3, training}, {4, slurm}};
  const std::vector<LoggedEvent> folded = FoldOrder(log);
  ASSERT_EQ(folded.size(), 3u);
  EXPECT_EQ(folded[2].event.detail, "Slurm: TIMEOUT on gpu07 (also reported by the training: preemption: SIGTERM)");
  EXPECT_EQ(folded[2].seq, 3);  // the first report's place in the log
}

TEST(JoinReports, ANamedCauseOfTheTrainingBeatsTheSchedulersExitCode) {
  Event slurm = Scheduler(Interrupted(530, "exit_code_1"));
  slurm.attempt = 1;
  const RunState s = FoldLog({Started(0, 1, 0), Steps(400, 40, 4000), Interrupted(520, "nccl_timeout"), slurm});
  ASSERT_EQ(s.interruptions.size(), 1u);
  EXPECT_EQ(s.interruptions[0].cause, "nccl_timeout");
  EXPECT_FALSE(s.interruptions[0].planned);
}

TEST(JoinReports, TheSchedulersWholeSecondStopDoesNotPrecedeTheLastReport) {
  // Slurm ended the job at 500 s (its record's whole second); the training's last step was
  // reported at 500.4 s, before its SIGTERM reached it. The stop is placed at that report.
  Event slurm = Scheduler(Interrupted(500, "operator", true));
  slurm.attempt = 1;
  const RunState s =
      FoldLog({Started(0, 1, 0), Steps(400, 40, 4000), Steps(500.4, 50, 5000), slurm, Started(600, 2, 50)});
  EXPECT_EQ(s.attempt, 2u);
  ASSERT_EQ(s.interruption_marks.size(), 1u);
  EXPECT_EQ(s.interruption_marks[0].time, At(500.4));
  EXPECT_NEAR(s.seconds.down_planned, 99.6, 1e-9);
}

TEST(JoinReports, TwoStopsFromOneSourceAreNotJoined) {
  // The same source saying twice that one attempt stopped is still a contradiction.
  std::vector<LoggedEvent> log = {
      {1, Started(0, 1, 0)}, {2, Interrupted(100, "software")}, {3, Interrupted(200, "oom")}};
  int64_t failed = 0;
  EXPECT_EQ(Refold(log, FoldSettings{}, failed).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed, 3);
}

TEST(JoinReports, LaunchesAndStopsOfAWatchedRunAreFoldedWithTheLog) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  ASSERT_TRUE(ApplyEvent(s, Steps(100, 10, 1000)).ok());
  EXPECT_FALSE(NeedsRefold(s, Interrupted(200, "software")));  // no scheduler: as before
  EXPECT_TRUE(NeedsRefold(s, Scheduler(Interrupted(200, "node"))));
  EXPECT_FALSE(NeedsRefold(s, Launch(Started(300, 2, 0), "slurm:9.1")));  // its first report of a launch
  RunState watched = FoldLog({Scheduler(Launch(Started(0, 1, 0), "slurm:9.0")), Steps(100, 10, 1000)});
  EXPECT_TRUE(NeedsRefold(watched, Interrupted(200, "software")));
  EXPECT_TRUE(NeedsRefold(watched, Launch(Started(50, 1, 0), "slurm:9.0")));
  EXPECT_TRUE(ReportsAKnownLaunch(watched, Launch(Started(50, 1, 0), "slurm:9.0")));
  EXPECT_FALSE(ReportsAKnownLaunch(watched, Launch(Started(50, 2, 0), "slurm:9.1")));
}

// The spread across ranks the training reports with its steps: the latest and the usual,
// kept through a snapshot; a spread that is not one is refused, naming the field and value.
TEST(Accounting, RankSpreadIsKeptAndBadOnesAreRefused) {
  RunState s;
  ASSERT_TRUE(ApplyEvent(s, Started(0, 1, 0)).ok());
  double t = 0;
  for (int i = 1; i <= 10; ++i) {
    Event e = Steps(t += 60, i, i * 100);
    e.rank_spread = i <= 5 ? 0.01 : 0.05;
    ASSERT_TRUE(ApplyEvent(s, e).ok());
  }
  ASSERT_TRUE(ApplyEvent(s, Steps(t += 60, 11, 1100)).ok());  // one that does not say
  EXPECT_DOUBLE_EQ(s.rank_spread, 0.05);
  EXPECT_GT(s.typical_rank_spread, 0.01);
  EXPECT_LT(s.typical_rank_spread, 0.05);
  const RunState restored = convert::StateFromProto(convert::StateToProto(s));
  EXPECT_DOUBLE_EQ(restored.rank_spread, s.rank_spread);
  EXPECT_DOUBLE_EQ(restored.typical_rank_spread, s.typical_rank_spread);
  EXPECT_DOUBLE_EQ(Snapshot(s, s.last_time).rank_spread, 0.05);
  for (double bad : {-0.1, 1e9, std::nan("")}) {
    Event e = Steps(t + 60, 12, 1200);
    e.rank_spread = bad;
    const RunState before = s;
    const absl::Status st = ApplyEvent(s, e);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(std::string(st.message()).find("steps.rank_spread"), std::string::npos) << st;
    EXPECT_EQ(s.events, before.events);
  }
}

}  // namespace
}  // namespace flightplan::forecast
