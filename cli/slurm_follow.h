// Slurm's record of a job, turned into the run's launches and interruptions (the
// `flightplan slurm` converter). No I/O: the command runs squeue, sinfo, sacct and sacctmgr
// or reads the job completion log, and hands what they printed here; events come out. Not thread-safe (one
// per watcher).
//
// What it reads is Slurm 22.05's own output, as Debian 12 ships it (the fixtures in
// tests/slurm are recorded from it):
//   - `squeue --json` and `sinfo --json`: the OpenAPI data of plugin openapi/v0.0.38
//     (src/plugins/openapi/v0.0.38/jobs.c and nodes.c in SchedMD/slurm, slurm-22-05-8-1):
//     per job job_id, name, job_state, state_reason, restart_cnt, submit_time, start_time,
//     end_time, nodes, exit_code, requeue, array_job_id, array_task_id; per node name,
//     state, reason, reason_changed_at;
//   - the job completion log of jobcomp/filetxt (src/plugins/jobcomp/filetxt/
//     jobcomp_filetxt.c): one line of Key=Value per ended run of a job, with JobId,
//     JobState, StartTime, EndTime (local time, as %Y-%m-%dT%H:%M:%S), NodeList, ExitCode;
//   - accounting, where the site keeps it (AccountingStorageType=accounting_storage/slurmdbd):
//     `sacct -D -P -X -j IDS -o JobIDRaw,JobName,State,Start,End,NodeList,ExitCode,Submit`,
//     one row per run of a job (-D keeps the runs a requeue replaced), with the same local
//     times, states as the job ended ("CANCELLED by 0", REQUEUED for an operator's requeue,
//     PREEMPTED, NODE_FAIL; src/sacct/print.c's "%s by %u") and "code:signal" exit codes;
//   - node events from accounting, `sacctmgr -n -P show event Nodes=N Start=T
//     format=NodeName,TimeStart,TimeEnd,State,Reason`: a node's down or drain reason, kept
//     after the node is back. Both as Debian 12's 22.05.8 prints them (tests/slurm/fixtures).
//
// One launch is one run of a job: (job id, restart count). Its start is squeue's
// start_time while it runs. Its end, and why, is read where it lasts: the job's own end
// state while squeue still shows it (TIMEOUT, NODE_FAIL, ...), accounting's or the
// completion log's record of that run, or, for a job back in the queue with its restart count
// up and no record, the state and reason of the nodes it held (a node now down or drained:
// node) and else an operator's requeue, at the job's new submit_time, which Slurm sets then.
// A failed node is named with its reason: accounting's event covering the run's end, else
// the node's reason while sinfo still shows it.
#ifndef FLIGHTPLAN_CLI_SLURM_FOLLOW_H_
#define FLIGHTPLAN_CLI_SLURM_FOLLOW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "flightplan/v1/event.pb.h"

namespace flightplan::cli {

struct SlurmJob {
  int64_t job_id = 0;
  std::string name;
  std::string state;   // job_state: PENDING, RUNNING, COMPLETED, TIMEOUT, NODE_FAIL, ...
  std::string reason;  // state_reason
  uint32_t restarts = 0;
  std::optional<absl::Time> submit, start, end;  // absent when Slurm has none (0) or a placeholder
  std::string nodes;
  int32_t exit_status = 0;  // the wait(2) status: code << 8 | signal
  bool requeue = false;     // the job returns to the queue when it fails or is preempted
  int64_t array_job_id = 0;
  std::optional<int64_t> array_task_id;
};

struct SlurmNode {
  std::string name;
  std::string state;  // idle, allocated, down, drained, draining, ...
  std::string reason;
  std::optional<absl::Time> reason_changed_at;
};

// One ended run of a job, from the completion log or accounting.
struct SlurmRunRecord {
  int64_t job_id = 0;
  std::string state;  // as it ended: NODE_FAIL, TIMEOUT, COMPLETED, REQUEUED, ... (the log: PENDING when requeued)
  std::optional<absl::Time> submit;  // accounting's: when this run was queued
  std::optional<absl::Time> start, end;
  std::string nodes;
  std::string exit_code;  // "code:signal"
};

// The jobs a watcher follows, out of squeue --json's list: those of the job id (an array's id:
// its tasks too) or of the name. Debian 12's squeue 22.05 prints every job with --json,
// whatever --jobs, --name or --states say (tests/slurm/fixtures/preempted.json holds the
// job that preempted the followed one).
[[nodiscard]] std::vector<SlurmJob> FollowedJobs(std::vector<SlurmJob> jobs, std::optional<int64_t> job_id,
                                                 const std::string& name);

// INVALID_ARGUMENT naming what is missing when the text is not that JSON.
[[nodiscard]] absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(absl::string_view json);
[[nodiscard]] absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(absl::string_view json);
// nullopt for a line that is not a record. Times are read in `zone` (slurmctld's).
[[nodiscard]] std::optional<SlurmRunRecord> ParseJobCompLine(absl::string_view line, absl::TimeZone zone);

// A node's down, drain or failure time as accounting keeps it.
struct SlurmNodeEvent {
  std::string node;
  std::optional<absl::Time> start, end;  // end absent while it lasts
  std::string state;                     // DOWN, DRAIN, ...
  std::string reason;
};

// sacct -P's rows (with its header line, which names the columns) as records, one per ended
// run, each job's runs in the order they were queued; rows of runs not ended yet (PENDING,
// RUNNING) are left out. INVALID_ARGUMENT naming the column when JobIDRaw or State is missing.
[[nodiscard]] absl::StatusOr<std::vector<SlurmRunRecord>> ParseSacct(absl::string_view text, absl::TimeZone zone);
// sacctmgr -n -P show event's rows in the format above; rows of another shape are skipped.
[[nodiscard]] std::vector<SlurmNodeEvent> ParseNodeEvents(absl::string_view text, absl::TimeZone zone);
// "code:signal" (sacct's and the completion log's ExitCode) as a wait(2) status; 0 when unreadable.
[[nodiscard]] int32_t ExitStatusOf(absl::string_view exit_code);

// A launch's interruption as Slurm names it: cause, planned, detail (docs/contract.md §4).
struct SlurmCause {
  std::string cause;
  bool planned = false;
  std::string detail;
  std::vector<std::string> nodes;  // the failed node, when Slurm names one (Interruption.nodes)
};
// From a job's end state. `resubmits`: the job comes back by itself (set to requeue, or
// another job of its chain or array waits), so a time limit is the plan's.
[[nodiscard]] SlurmCause CauseOfEndState(const std::string& state, int32_t exit_status, const std::string& nodes,
                                         bool resubmits);

// An attempt as the daemon has it (RunInfo.attempts).
struct KnownAttempt {
  uint32_t attempt = 0;
  absl::Time started;
  std::string launch;  // JobStarted.launch, "" when it had none
};

// The name a launch of Slurm's has in JobStarted.launch: "slurm:JOB.RESTARTS". The
// training's own reports (the client, the tail) name it alike from SLURM_JOB_ID and
// SLURM_RESTART_COUNT, so that both reports join into one attempt.
[[nodiscard]] std::string SlurmLaunchName(int64_t job_id, uint32_t restarts);

struct SlurmFollowOptions {
  std::string run;
  // Numbers a launch named `launch` that starts at `at`: the attempt the daemon already
  // has for that launch (the training reported it first), else the attempt launched at
  // that very instant, else one past the run's latest. Unset: from 1.
  std::function<uint32_t(const std::string& launch, absl::Time at)> number_launch;
  // The run's attempts as the daemon had them when the watcher started. A launch of one of
  // these names starting at that time is that attempt, reported by an earlier watcher: not
  // sent again. Its end is: an end the daemon has is acknowledged as a duplicate (its id),
  // and one it lacks (the watcher was killed before sending it) joins the training's report
  // of that stop, or corrects the stop the daemon inferred.
  std::vector<KnownAttempt> known_attempts;
  // The run's latest event as the daemon has it, read when a launch is numbered. Slurm's
  // times are whole seconds: a launch Slurm dates in the second the run's latest report
  // fell in (the training's own stop, a fraction of a second past Slurm's end of the run
  // before) starts at that report, since its real start lies in that second and after it.
  // Unset: Slurm's time as it is.
  std::function<std::optional<absl::Time>()> latest_event;
};

class SlurmFollower {
 public:
  explicit SlurmFollower(SlurmFollowOptions options) : options_(std::move(options)) {}

  // One look at Slurm: the followed jobs as squeue shows them now (the job, or every job
  // of the name), the nodes, the records of those jobs' ended runs so far (the completion
  // log's or accounting's, each job's in order: the whole record each time, nothing is sent
  // twice), and accounting's node events (a failed node's reason after it is back). The events this look implies, in
  // time order, each with an id naming its launch ("slurm-J-R-start", "slurm-J-R-end"), so a watcher that is restarted
  // sends them again as duplicates.
  std::vector<v1::Event> Observe(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes,
                                 const std::vector<SlurmRunRecord>& records,
                                 const std::vector<SlurmNodeEvent>& node_events = {});

  // Every job followed so far (squeue may stop showing one whose record is still wanted).
  [[nodiscard]] const std::set<int64_t>& followed() const { return seen_; }

  // Every launch seen has ended, and no followed job is waiting or running.
  [[nodiscard]] bool Done() const;
  [[nodiscard]] size_t launches() const { return launches_.size(); }

 private:
  struct Launch {
    std::optional<absl::Time> start;
    std::vector<std::string> nodes;
    bool started_sent = false, ended_sent = false;
    uint32_t attempt = 0;
  };
  using Key = std::pair<int64_t, uint32_t>;  // job id, restart count

  void Start(std::vector<v1::Event>& out, const Key& key, Launch& launch, absl::Time at);
  void End(std::vector<v1::Event>& out, const Key& key, Launch& launch, absl::Time at, const SlurmCause& cause);

  SlurmFollowOptions options_;
  std::map<Key, Launch> launches_;
  std::set<int64_t> active_;   // jobs pending or running at the last look
  std::set<int64_t> seen_;     // every job ever followed
  uint32_t last_attempt_ = 0;  // without number_launch
};

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_SLURM_FOLLOW_H_
