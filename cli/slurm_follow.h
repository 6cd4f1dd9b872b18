// Slurm's record of a job, turned into the run's launches and interruptions (the
// `flightplan slurm` converter). No I/O: the command runs squeue, sinfo and reads the job
// completion log, and hands what they printed here; events come out. Not thread-safe (one
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
//     JobState, StartTime, EndTime (local time, as %Y-%m-%dT%H:%M:%S), NodeList, ExitCode.
//
// One launch is one run of a job: (job id, restart count). Its start is squeue's
// start_time while it runs. Its end, and why, is read where it lasts: the job's own end
// state while squeue still shows it (TIMEOUT, NODE_FAIL, ...), the completion log's record
// of that run, or, for a job back in the queue with its restart count up, the state and
// reason of the nodes it held (a node now down or drained: node) and else an operator's
// requeue. A requeue's time is the job's new submit_time, which Slurm sets then.
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

// One ended run of a job, from the completion log.
struct JobCompRecord {
  int64_t job_id = 0;
  std::string state;  // as it ended: NODE_FAIL, TIMEOUT, COMPLETED, ... or PENDING (requeued)
  std::optional<absl::Time> start, end;
  std::string nodes;
  std::string exit_code;  // "code:signal"
};

// INVALID_ARGUMENT naming what is missing when the text is not that JSON.
[[nodiscard]] absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(absl::string_view json);
[[nodiscard]] absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(absl::string_view json);
// nullopt for a line that is not a record. Times are read in `zone` (slurmctld's).
[[nodiscard]] std::optional<JobCompRecord> ParseJobCompLine(absl::string_view line, absl::TimeZone zone);

// A launch's interruption as Slurm names it: cause, planned, detail (docs/contract.md §4).
struct SlurmCause {
  std::string cause;
  bool planned = false;
  std::string detail;
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
};

class SlurmFollower {
 public:
  explicit SlurmFollower(SlurmFollowOptions options) : options_(std::move(options)) {}

  // One look at Slurm: the followed jobs as squeue shows them now (the job, or every job
  // of the name), the nodes, and the completion log's records of those jobs so far, in the
  // log's order (the whole log each time: nothing is sent twice). The events this look implies, in time order,
  // each with an id naming its launch ("slurm-J-R-start", "slurm-J-R-end"), so a watcher
  // that is restarted sends them again as duplicates.
  std::vector<v1::Event> Observe(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes,
                                 const std::vector<JobCompRecord>& records);

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
