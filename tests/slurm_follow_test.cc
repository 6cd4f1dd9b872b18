// The Slurm follower (cli/slurm_follow.h) on Slurm's real output: the fixtures in
// tests/slurm/fixtures were printed by Debian 12's Slurm 22.05.8 (squeue --json, sinfo
// --json: openapi/v0.0.38; the jobcomp/filetxt completion log) for one job's life, recorded
// by tests/slurm/record_fixtures.py: running, requeued by an operator, running, its node set
// DOWN, running, killed at its time limit; with accounting's record of the same runs (sacct
// -D -P -X) and the node's events (sacctmgr show event); and, on a cluster that keeps
// accounting only, a preemption, an operator's scancel, and a --dependency chain of one name
// that exits 3 and is killed by signal 9. The expected times are read from the same files
// (the job's start_time, submit_time and end_time at each stage, sacct's Start and End), not
// typed in.
#include "cli/slurm_follow.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "convert/plan_convert.h"
#include "gtest/gtest.h"

namespace flightplan::cli {
namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(FLIGHTPLAN_SLURM_FIXTURES) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Stage {
  std::vector<SlurmJob> jobs;
  std::vector<SlurmNode> nodes;
};

Stage Load(const std::string& stage) {
  Stage s;
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(Read(stage + "-squeue.json"));
  absl::StatusOr<std::vector<SlurmNode>> nodes = ParseSinfoJson(Read(stage + "-sinfo.json"));
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  if (jobs.ok()) s.jobs = *jobs;
  if (nodes.ok()) s.nodes = *nodes;
  EXPECT_EQ(s.jobs.size(), 1u) << stage;
  return s;
}

std::vector<SlurmRunRecord> Records() {
  std::vector<SlurmRunRecord> out;
  std::istringstream in(Read("jobcomp.log"));
  // The recorder runs slurmctld with TZ=UTC (tests/slurm/cluster.py).
  for (std::string line; std::getline(in, line);) {
    if (auto r = ParseJobCompLine(line, absl::UTCTimeZone())) out.push_back(*r);
  }
  return out;
}

// The recorder's sacct and sacctmgr print in slurmctld's zone too: UTC.
std::vector<SlurmRunRecord> Accounting(const std::string& name) {
  absl::StatusOr<std::vector<SlurmRunRecord>> r = ParseSacct(Read(name), absl::UTCTimeZone());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<SlurmRunRecord>{};
}

// The records as they stood at a look: of each job shown, the runs ended by then (those
// before its restart count, and its current one once it has ended).
std::vector<SlurmRunRecord> EndedBy(const std::vector<SlurmRunRecord>& all, const std::vector<SlurmJob>& jobs) {
  std::vector<SlurmRunRecord> out;
  for (const SlurmJob& j : jobs) {
    const bool ended = j.state != "PENDING" && j.state != "RUNNING" && j.state != "COMPLETING";
    size_t n = 0;
    for (const SlurmRunRecord& r : all) {
      if (r.job_id == j.job_id && n++ < j.restarts + (ended ? 1u : 0u)) out.push_back(r);
    }
  }
  return out;
}

SlurmFollowOptions Options() {
  SlurmFollowOptions o;
  o.run = "r";
  return o;
}

absl::Time T(const v1::Event& e) { return convert::TimeFromProto(e.time()); }

const char* const kStages[] = {"1-running", "2-requeued", "3-running", "4-node-down", "5-running", "6-timeout"};

TEST(SlurmFollow, ParsesSlurm2205sOwnOutput) {
  const Stage running = Load("1-running");
  ASSERT_EQ(running.jobs.size(), 1u);
  const SlurmJob& j = running.jobs[0];
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.name, "fixture");
  EXPECT_EQ(j.restarts, 0u);
  EXPECT_TRUE(j.requeue);
  ASSERT_TRUE(j.start && j.submit);
  EXPECT_GE(*j.start, *j.submit);
  const Stage down = Load("4-node-down");
  ASSERT_EQ(down.nodes.size(), 1u);
  EXPECT_EQ(down.nodes[0].state, "down");
  EXPECT_EQ(down.nodes[0].reason, "gpu_xid_79_on_gpu3");
  EXPECT_EQ(down.jobs[0].state, "PENDING");
  EXPECT_EQ(down.jobs[0].restarts, 2u);
  // The completion log: one record per ended run of the job, in order.
  const std::vector<SlurmRunRecord> records = Records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].state, "PENDING");  // how 22.05 logs an operator's requeue
  EXPECT_EQ(records[1].state, "NODE_FAIL");
  EXPECT_EQ(records[2].state, "TIMEOUT");
  for (const SlurmRunRecord& r : records) EXPECT_EQ(r.job_id, j.job_id);
}

TEST(SlurmFollow, RefusesWhatIsNotSqueuesJson) {
  EXPECT_EQ(ParseSqueueJson("not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSqueueJson("{\"meta\": {}}").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseJobCompLine("a line with no record", absl::UTCTimeZone()).has_value());
}

// Watching every stage, as a watcher polling through the job's life does.
TEST(SlurmFollow, EveryLaunchAndEndOfARealJob) {
  SlurmFollower follower(Options());
  std::vector<v1::Event> events;
  std::vector<Stage> stages;
  for (const char* name : kStages) {
    stages.push_back(Load(name));
    // The completion log as it stood then: the records of the runs ended so far.
    std::vector<SlurmRunRecord> records = Records();
    records.resize(std::min<size_t>(
        records.size(), stages.back().jobs[0].restarts + (stages.back().jobs[0].state == "TIMEOUT" ? 1 : 0)));
    for (v1::Event& e : follower.Observe(stages.back().jobs, stages.back().nodes, records)) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 6u);
  const SlurmJob &run0 = stages[0].jobs[0], &requeued = stages[1].jobs[0], &run1 = stages[2].jobs[0],
                 &down = stages[3].jobs[0], &run2 = stages[4].jobs[0], &timeout = stages[5].jobs[0];
  // Three launches, at Slurm's start times, numbered 1, 2, 3.
  EXPECT_EQ(T(events[0]), *run0.start);
  EXPECT_EQ(events[0].job_started().attempt(), 1u);
  EXPECT_EQ(T(events[2]), *run1.start);
  EXPECT_EQ(events[2].job_started().attempt(), 2u);
  EXPECT_EQ(T(events[4]), *run2.start);
  EXPECT_EQ(events[4].job_started().attempt(), 3u);
  // The operator's requeue, at the moment Slurm requeued it (its new submit time): planned.
  ASSERT_TRUE(events[1].has_interruption());
  EXPECT_EQ(T(events[1]), *requeued.submit);
  EXPECT_EQ(events[1].interruption().cause(), "operator");
  EXPECT_TRUE(events[1].interruption().planned());
  EXPECT_EQ(events[1].attempt(), 1u);
  // The node's failure, naming the node and the reason it was set down with.
  ASSERT_TRUE(events[3].has_interruption());
  EXPECT_EQ(T(events[3]), *down.submit);
  EXPECT_EQ(events[3].interruption().cause(), "node");
  EXPECT_FALSE(events[3].interruption().planned());
  EXPECT_NE(events[3].interruption().detail().find("gpu_xid_79_on_gpu3"), std::string::npos)
      << events[3].interruption().detail();
  EXPECT_NE(events[3].interruption().detail().find(Read("node").substr(0, Read("node").size() - 1)), std::string::npos);
  // And names it as Interruption.nodes (issue 39); each launch carries its NodeList, expanded.
  const std::string node = Read("node").substr(0, Read("node").size() - 1);
  EXPECT_EQ(std::vector<std::string>(events[3].interruption().nodes().begin(), events[3].interruption().nodes().end()),
            std::vector<std::string>{node});
  for (int i : {0, 2, 4}) {
    EXPECT_EQ(std::vector<std::string>(events[i].job_started().nodes().begin(), events[i].job_started().nodes().end()),
              std::vector<std::string>{node})
        << i;
  }
  EXPECT_TRUE(events[1].interruption().nodes().empty());  // an operator's requeue blames no node
  EXPECT_TRUE(events[5].interruption().nodes().empty());  // nor does a time limit
  // The time limit, at Slurm's end time; nothing brings the job back, so not planned.
  ASSERT_TRUE(events[5].has_interruption());
  EXPECT_EQ(T(events[5]), *timeout.end);
  EXPECT_EQ(events[5].interruption().cause(), "time_limit");
  EXPECT_FALSE(events[5].interruption().planned());
  EXPECT_TRUE(follower.Done());
  // Ids name the launch: "slurm-JOB-RESTART-start|end"; so does JobStarted.launch, as the
  // training's own reports name it ("slurm:JOB.RESTARTS"), and each is the scheduler's.
  EXPECT_EQ(events[3].id(), absl::StrCat("slurm-", run0.job_id, "-1-end"));
  EXPECT_EQ(events[2].job_started().launch(), absl::StrCat("slurm:", run0.job_id, ".1"));
  for (const v1::Event& e : events) EXPECT_EQ(e.source(), "slurm");
}

// A requeue caught while the last run completes: squeue shows the new restart count in
// COMPLETING, with the requeue's second as its start (seen on the real cluster under a
// preemption). The new run starts when it runs, at its own start time, not before.
TEST(SlurmFollow, ARequeueStillCompletingIsNotTheNewRunsStart) {
  SlurmFollower follower(Options());
  const Stage running = Load(kStages[0]), requeued = Load(kStages[1]), again = Load(kStages[2]);
  std::vector<v1::Event> events = follower.Observe(running.jobs, running.nodes, {});
  std::vector<SlurmJob> completing = requeued.jobs;
  completing[0].state = "COMPLETING";
  completing[0].start = completing[0].submit;
  for (v1::Event& e : follower.Observe(completing, requeued.nodes, {})) events.push_back(e);
  for (const v1::Event& e : events)
    EXPECT_FALSE(e.has_job_started() && e.job_started().attempt() == 2) << e.DebugString();
  for (v1::Event& e : follower.Observe(again.jobs, again.nodes, {})) events.push_back(e);
  ASSERT_EQ(events.size(), 3u);
  ASSERT_TRUE(events[2].has_job_started());
  EXPECT_EQ(events[2].job_started().attempt(), 2u);
  EXPECT_EQ(T(events[2]), *again.jobs[0].start);
  EXPECT_GT(*again.jobs[0].start, *completing[0].start);
}

// A watcher that was away from the first look to the last: the completion log gives the
// runs it missed, with the same ids and times as if it had watched (so a restarted
// watcher's resends are duplicates).
TEST(SlurmFollow, AWatcherAwayBackfillsFromTheCompletionLog) {
  SlurmFollower watched(Options());
  std::vector<v1::Event> live;
  for (const char* name : kStages) {
    const Stage s = Load(name);
    std::vector<SlurmRunRecord> records = Records();
    records.resize(std::min<size_t>(records.size(), s.jobs[0].restarts + (s.jobs[0].state == "TIMEOUT" ? 1 : 0)));
    for (v1::Event& e : watched.Observe(s.jobs, s.nodes, records)) live.push_back(e);
  }
  SlurmFollower away(Options());
  const Stage first = Load("1-running");
  std::vector<v1::Event> got = away.Observe(first.jobs, first.nodes, {});
  const Stage last = Load("6-timeout");
  for (v1::Event& e : away.Observe(last.jobs, last.nodes, Records())) got.push_back(e);
  ASSERT_EQ(got.size(), live.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id(), live[i].id()) << i;
    EXPECT_EQ(got[i].kind_case(), live[i].kind_case()) << i;
    EXPECT_EQ(got[i].interruption().cause(), live[i].interruption().cause()) << i;
    // The record's times are whole seconds in slurmctld's zone, as squeue's are.
    EXPECT_EQ(T(got[i]), T(live[i])) << i << " " << got[i].ShortDebugString() << " vs " << live[i].ShortDebugString();
  }
}

std::vector<SlurmRunRecord> RecordsAt(const Stage& s) {
  std::vector<SlurmRunRecord> records = Records();
  records.resize(std::min<size_t>(records.size(), s.jobs[0].restarts + (s.jobs[0].state == "TIMEOUT" ? 1 : 0)));
  return records;
}

// A watcher killed while the job waited after its node's failure, and started again once the
// job runs a third time: it knows the daemon's attempts and does not report their launches
// again; it sends the ends of the first two runs again (the daemon acknowledges those it has
// as duplicates: same id, same stop), and the third launch and its end exactly as a watcher
// that never stopped did.
TEST(SlurmFollow, ARestartedWatcherResendsEndsAndGoesOn) {
  SlurmFollower whole(Options());
  std::vector<v1::Event> all;
  SlurmFollowOptions restarted = Options();
  for (const char* name : kStages) {
    const Stage s = Load(name);
    for (v1::Event& e : whole.Observe(s.jobs, s.nodes, RecordsAt(s))) {
      if (name[0] <= '4' && e.has_job_started()) {
        restarted.known_attempts.push_back({e.job_started().attempt(), T(e), e.job_started().launch()});
      }
      all.push_back(e);
    }
  }
  ASSERT_EQ(all.size(), 6u);
  restarted.number_launch = [](const std::string&, absl::Time) { return 3u; };  // one past the daemon's latest
  SlurmFollower again(restarted);
  std::vector<v1::Event> got;
  for (const char* name : {"5-running", "6-timeout"}) {
    const Stage s = Load(name);
    for (v1::Event& e : again.Observe(s.jobs, s.nodes, RecordsAt(s))) got.push_back(e);
  }
  ASSERT_EQ(got.size(), 4u);
  const v1::Event* want[] = {&all[1], &all[3], &all[4], &all[5]};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id(), want[i]->id()) << i;
    EXPECT_EQ(T(got[i]), T(*want[i])) << i;
    EXPECT_EQ(got[i].attempt(), want[i]->attempt()) << i;
    EXPECT_EQ(got[i].interruption().cause(), want[i]->interruption().cause()) << i;
    EXPECT_EQ(got[i].interruption().planned(), want[i]->interruption().planned()) << i;
    EXPECT_EQ(got[i].job_started().ShortDebugString(), want[i]->job_started().ShortDebugString()) << i;
  }
  // The node's reason was Slurm's only while the node was down: the resend says less.
  EXPECT_NE(all[3].interruption().detail().find("gpu_xid_79_on_gpu3"), std::string::npos);
  EXPECT_EQ(got[1].interruption().detail().find("gpu_xid_79_on_gpu3"), std::string::npos);
}

// A job array run one task at a time (--array=1-2%1), followed by its name: each task is a
// job of its own (its own id), so a launch of its own; a task that ends while the next waits
// ends as the plan's, and the last one too (COMPLETED: the job's own end).
TEST(SlurmFollow, AJobArrayFollowedByName) {
  SlurmFollower follower(Options());
  std::vector<v1::Event> events;
  std::vector<std::vector<SlurmJob>> looks;
  for (int i = 1; i <= 5; ++i) {
    absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(Read(absl::StrCat("array-", i, ".json")));
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    looks.push_back(*jobs);
    for (v1::Event& e : follower.Observe(*jobs, {}, {})) events.push_back(e);
  }
  // The first look: one record for the whole array, waiting; nothing to report.
  ASSERT_EQ(looks[0].size(), 1u);
  EXPECT_EQ(looks[0][0].state, "PENDING");
  ASSERT_EQ(events.size(), 4u);
  ASSERT_EQ(looks[4].size(), 2u);  // both completed: each task's own record
  ASSERT_TRUE(looks[4][0].start && looks[4][0].end && looks[4][1].start && looks[4][1].end);
  const bool in_order = *looks[4][0].start <= *looks[4][1].start;
  const SlurmJob& first = looks[4][in_order ? 0 : 1];
  const SlurmJob& second = looks[4][in_order ? 1 : 0];
  ASSERT_NE(first.job_id, second.job_id);
  EXPECT_EQ(events[0].job_started().launch(), SlurmLaunchName(first.job_id, 0));
  EXPECT_EQ(T(events[0]), *first.start);
  EXPECT_EQ(events[1].interruption().cause(), "job_completed");
  EXPECT_TRUE(events[1].interruption().planned());
  EXPECT_EQ(T(events[1]), *first.end);
  EXPECT_EQ(events[2].job_started().launch(), SlurmLaunchName(second.job_id, 0));
  EXPECT_EQ(events[2].job_started().attempt(), 2u);
  EXPECT_EQ(T(events[2]), *second.start);
  EXPECT_EQ(T(events[3]), *second.end);
  EXPECT_TRUE(follower.Done());
}

// Accounting's record of the job: one row per run (-D keeps those a requeue replaced), with
// the completion log's times, and the operator's requeue named REQUEUED where the log says
// PENDING.
TEST(SlurmFollow, AccountingRecordsEveryRunAsTheCompletionLogDoes) {
  const std::vector<SlurmRunRecord> log = Records(), acct = Accounting("sacct.txt");
  ASSERT_EQ(acct.size(), 3u);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(acct[0].state, "REQUEUED");
  EXPECT_EQ(acct[1].state, "NODE_FAIL");
  EXPECT_EQ(acct[2].state, "TIMEOUT");
  for (size_t i = 0; i < acct.size(); ++i) {
    EXPECT_EQ(acct[i].job_id, log[i].job_id) << i;
    EXPECT_EQ(acct[i].start, log[i].start) << i;
    EXPECT_EQ(acct[i].end, log[i].end) << i;
    EXPECT_EQ(acct[i].nodes, log[i].nodes) << i;
    ASSERT_TRUE(acct[i].submit && acct[i].start) << i;
    EXPECT_LE(*acct[i].submit, *acct[i].start) << i;
  }
  // The node's events: the DOWN it was set with, and its reason, kept after it came back.
  const std::vector<SlurmNodeEvent> events = ParseNodeEvents(Read("node-events.txt"), absl::UTCTimeZone());
  const std::string node = Read("node").substr(0, Read("node").size() - 1);
  const auto down = std::find_if(events.begin(), events.end(),
                                 [](const SlurmNodeEvent& e) { return e.reason == "gpu_xid_79_on_gpu3"; });
  ASSERT_NE(down, events.end()) << Read("node-events.txt");
  EXPECT_EQ(down->node, node);
  EXPECT_EQ(down->state, "DOWN");
  ASSERT_TRUE(down->start && down->end && acct[1].end);
  EXPECT_LE(*down->start, *acct[1].end + absl::Seconds(5));
  EXPECT_GE(*down->end, *acct[1].end);
  EXPECT_EQ(ParseSacct("JobID|Start\n1|None\n", absl::UTCTimeZone()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExitStatusOf("3:0"), 3 << 8);
  EXPECT_EQ(ExitStatusOf("0:9"), 9);
  EXPECT_EQ(ExitStatusOf("junk"), 0);
}

// Watched throughout, with accounting in place of the completion log: the same launches and
// ends, ids, times and causes.
TEST(SlurmFollow, AccountingGivesWhatTheCompletionLogGives) {
  SlurmFollower by_log(Options()), by_acct(Options());
  std::vector<v1::Event> a, b;
  const std::vector<SlurmRunRecord> acct = Accounting("sacct.txt");
  for (const char* name : kStages) {
    const Stage s = Load(name);
    for (v1::Event& e : by_log.Observe(s.jobs, s.nodes, RecordsAt(s))) a.push_back(e);
    for (v1::Event& e : by_acct.Observe(s.jobs, s.nodes, EndedBy(acct, s.jobs))) b.push_back(e);
  }
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].id(), a[i].id()) << i;
    EXPECT_EQ(T(b[i]), T(a[i])) << i;
    EXPECT_EQ(b[i].interruption().cause(), a[i].interruption().cause()) << i;
    EXPECT_EQ(b[i].interruption().planned(), a[i].interruption().planned()) << i;
  }
}

// A watcher away from the node's failure until the node was back and the job ran again: sinfo
// no longer has the reason, accounting's node event does.
TEST(SlurmFollow, AWatcherAwayForANodesFailureNamesItsReasonFromAccounting) {
  const std::vector<SlurmNodeEvent> events = ParseNodeEvents(Read("node-events.txt"), absl::UTCTimeZone());
  const std::vector<SlurmRunRecord> acct = Accounting("sacct.txt");
  auto node_end = [&](const std::vector<SlurmNodeEvent>& with) {
    SlurmFollower away(Options());
    const Stage first = Load("1-running"), back = Load("5-running");
    away.Observe(first.jobs, first.nodes, {});
    for (const v1::Event& e : away.Observe(back.jobs, back.nodes, EndedBy(acct, back.jobs), with)) {
      if (e.id() == absl::StrCat("slurm-", back.jobs[0].job_id, "-1-end")) return e;
    }
    return v1::Event();
  };
  const Stage back = Load("5-running");
  ASSERT_EQ(back.nodes.size(), 1u);
  EXPECT_EQ(back.nodes[0].reason, "");  // the node is back: Slurm's node record has no reason
  const v1::Event with = node_end(events), without = node_end({});
  EXPECT_EQ(with.interruption().cause(), "node");
  EXPECT_EQ(T(with), *acct[1].end);
  EXPECT_NE(with.interruption().detail().find("gpu_xid_79_on_gpu3"), std::string::npos) << with.interruption().detail();
  ASSERT_EQ(with.interruption().nodes_size(), 1);
  EXPECT_EQ(with.interruption().nodes(0), events.front().node);
  EXPECT_EQ(without.interruption().cause(), "node");
  EXPECT_TRUE(without.interruption().nodes().empty());  // no record names the node: not known
  EXPECT_EQ(without.interruption().detail().find("gpu_xid_79_on_gpu3"), std::string::npos);
}

// Accounting only (no completion log): a preemption, an operator's scancel, and a
// --dependency chain of the same name followed by it, ending with exit code 3 and signal 9.
TEST(SlurmFollow, PreemptionCancelAndAChainFromAccounting) {
  const std::vector<SlurmRunRecord> acct = Accounting("accounting.txt");
  ASSERT_EQ(acct.size(), 4u);
  EXPECT_EQ(acct[0].state, "PREEMPTED");
  EXPECT_EQ(acct[1].state, "CANCELLED");  // sacct: "CANCELLED by 0"
  EXPECT_EQ(acct[2].state, "FAILED");
  EXPECT_EQ(acct[2].exit_code, "3:0");
  EXPECT_EQ(acct[3].exit_code, "0:9");
  SlurmFollower follower(Options());
  std::vector<v1::Event> events;
  for (const char* look : {"preempted.json", "chain-1.json", "chain-2.json"}) {
    absl::StatusOr<std::vector<SlurmJob>> all = ParseSqueueJson(Read(look));
    ASSERT_TRUE(all.ok()) << all.status();
    // squeue --json printed every job, the urgent one that preempted `pretrain` too.
    const size_t printed = all->size();
    const std::vector<SlurmJob> jobs = FollowedJobs(*all, std::nullopt, "pretrain");
    EXPECT_EQ(printed, jobs.size() + 1) << look;
    for (v1::Event& e : follower.Observe(jobs, {}, EndedBy(acct, jobs))) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 8u);
  const struct {
    const SlurmRunRecord& run;
    const char* cause;
    bool planned;
  } want[] = {{acct[0], "preemption", false},
              {acct[1], "operator", true},
              {acct[2], "exit_code_3", false},
              {acct[3], "signal_9", false}};
  for (size_t i = 0; i < 4; ++i) {
    const v1::Event &start = events[2 * i], &end = events[2 * i + 1];
    ASSERT_TRUE(start.has_job_started()) << i;
    EXPECT_EQ(start.job_started().attempt(), i + 1);
    EXPECT_EQ(T(start), *want[i].run.start) << i;
    ASSERT_TRUE(end.has_interruption()) << i;
    EXPECT_EQ(end.attempt(), i + 1);
    EXPECT_EQ(T(end), *want[i].run.end) << i;
    EXPECT_EQ(end.interruption().cause(), want[i].cause) << i << " " << end.interruption().detail();
    EXPECT_EQ(end.interruption().planned(), want[i].planned) << i;
  }
  EXPECT_TRUE(follower.Done());
}

TEST(SlurmFollow, CausesOfEndStates) {
  EXPECT_EQ(CauseOfEndState("NODE_FAIL", 0, "gpu07", false).cause, "node");
  EXPECT_EQ(CauseOfEndState("PREEMPTED", 0, "", false).cause, "preemption");
  EXPECT_TRUE(CauseOfEndState("TIMEOUT", 0, "", true).planned);
  EXPECT_FALSE(CauseOfEndState("TIMEOUT", 0, "", false).planned);
  EXPECT_EQ(CauseOfEndState("OUT_OF_MEMORY", 0, "", false).cause, "oom");
  EXPECT_EQ(CauseOfEndState("CANCELLED", 0, "", false).cause, "operator");
  EXPECT_EQ(CauseOfEndState("FAILED", 3 << 8, "", false).cause, "exit_code_3");
  EXPECT_EQ(CauseOfEndState("FAILED", 9, "", false).cause, "signal_9");
}

}  // namespace
}  // namespace flightplan::cli
