// The `flightplan` commands that talk to flightpland: create, replay, report, status,
// history, runs, plans, retract, tail.
//
// Each returns the process exit status: 0 on success, 1 when the daemon refused something
// (its status code and message are printed), 2 on bad usage or an unreadable input file.
#ifndef FLIGHTPLAN_CLI_CLIENT_COMMANDS_H_
#define FLIGHTPLAN_CLI_CLIENT_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace flightplan::cli {

struct ClientOptions {
  std::string server = "127.0.0.1:50051";
  double timeout_seconds = 30;
  std::string token;       // bearer token sent with every call ("" = none)
  std::string tls_ca_pem;  // TLS with these root certificates ("" = plaintext)
};

struct CreateOptions {
  std::string plan_path;
  std::string run;      // default: the plan's name
  bool update = false;  // replace the plan of an existing run (kept as a revision)
};
int RunCreate(const ClientOptions& client, const CreateOptions& options, std::ostream& out, std::ostream& err);

struct ReplayOptions {
  std::string path;  // JSON Lines, one flightplan.v1.Event per line; "-" = stdin
  size_t batch_events = 1000;
  bool progress = true;  // a progress bar on stderr when it is a terminal
};
int RunReplay(const ClientOptions& client, const ReplayOptions& options, std::ostream& out, std::ostream& err);

struct ReportOptions {
  std::string run;
  std::string time;  // RFC 3339; default now
  std::string id;
  uint32_t attempt = 0;
  std::optional<int64_t> step;
  std::optional<int64_t> tokens;
  std::optional<int64_t> checkpoint;  // step saved
  double blocking_seconds = 0;
  std::string interruption;  // cause
  bool planned = false;
  std::string detail;
  std::optional<uint32_t> started;  // attempt launched
  int64_t restored_step = 0;
  uint32_t gpus = 0;  // with started: 0 = the plan's fleet
  bool finished = false;
  std::string span_start, span_end;  // a span's kind
  double expected_seconds = 0;
};
int RunReport(const ClientOptions& client, const ReportOptions& options, std::ostream& out, std::ostream& err);

struct TailOptions {
  std::string path;
  std::string run;
  std::string format = "megatron";  // megatron | torchtitan
  bool from_start = false;          // read what the file already holds (else only new lines)
  bool exit_at_eof = false;         // backfill a finished log and exit with a summary
  int64_t seq_len = 0;
  int64_t tokens_per_step = 0;
  std::string plan_path;  // seq_len and tokens per step from a plan file
  std::string timezone = "UTC";
  // The scheduler's name for the launch followed live (JobStarted.launch); default inside a
  // Slurm job: "slurm:SLURM_JOB_ID.SLURM_RESTART_COUNT", as `flightplan slurm` names it.
  std::string launch;
  // The launch's nodes in rank order, a hostlist (gpu-[001-016]); default inside a Slurm
  // job: SLURM_JOB_NODELIST.
  std::string nodes;
};
// Follows a training log (as tail -F does, across rotation and truncation) and sends the
// events it implies. What neither the options nor the log give (the sequence length, the
// tokens per step) comes from the run's plan (GetPlan). Exit 0; 1 when events were
// rejected or lines recognised could not be used (named on stderr); 2 on bad usage, or
// when the tokens cannot be counted (found before anything is sent).
int RunTail(const ClientOptions& client, const TailOptions& options, std::ostream& out, std::ostream& err);

struct SlurmOptions {
  std::string run;
  std::string job;   // a job id (an array's id follows every task of it)
  std::string name;  // or every job of this name: a chain of dependent jobs, an array
  double interval_seconds = 10;
  bool once = false;             // one look, then exit
  std::string records = "auto";  // where ended runs are read: auto, sacct, jobcomp, none
  std::string jobcomp;           // the completion log (jobcomp/filetxt); default: scontrol show config's
  std::string timezone;          // slurmctld's zone, for sacct's and the log's times; default: this machine's
};
// Follows the job through squeue --json, sinfo --json and accounting (sacct, sacctmgr) or the
// completion log, and reports
// each launch (job_started) and its end (interruption, with Slurm's cause) as events with
// ids naming the launch, so a restarted watcher resends duplicates and backfills what it
// missed. Exit 0 when every followed job has ended; 1 when Slurm shows no such job or
// events were rejected; 2 on bad usage.
int RunSlurm(const ClientOptions& client, const SlurmOptions& options, std::ostream& out, std::ostream& err);

struct StatusOptions {
  std::string run;
  bool json = false;
  // Write the run's page (as flightpland serves it at /runs/NAME) to this file; "-": stdout.
  std::string html_path;
  // How long to wait for a forecast that has caught up with the run's events (polling
  // every 100 ms); after it, the status is printed as it is, its forecast labelled stale.
  // 0: no wait.
  double wait_seconds = 2;
  // An interval (RFC 3339 or a date; "" = the run's first event / its now): the time,
  // goodput and interruptions of that interval alone.
  std::string from, to;
};
int RunStatus(const ClientOptions& client, const StatusOptions& options, std::ostream& out, std::ostream& err);
// The run's stored forecast trajectory: a table, or the ForecastHistory as proto JSON.
int RunHistory(const ClientOptions& client, const std::string& run, bool json, std::ostream& out, std::ostream& err);
int RunList(const ClientOptions& client, std::ostream& out, std::ostream& err);

// The run's plan revisions, oldest first, with when each took effect (a table, or the
// RunInfo as proto JSON).
int RunPlans(const ClientOptions& client, const std::string& run, bool json, std::ostream& out, std::ostream& err);

struct WhatIfOptions {
  std::string run;
  // Each value given is a variant of its own; `combined` adds one with all of them.
  std::vector<std::string> gpus;                  // "8192", "+512", "-256"
  std::vector<std::string> checkpoint_intervals;  // "5m", "300s", "300"
  bool async_checkpoint = false;
  std::vector<double> node_mtbf_hours, node_mtbf_factor, restart_seconds, mfu;
  bool combined = false;
  std::string deadline;       // RFC 3339 or a date; "" = the plan's
  std::string exclude_nodes;  // a hostlist; "" = none
  bool json = false;
};
// The run's forecast under each proposed change beside the baseline (see
// flightplan.v1.Tracker.WhatIf); with a deadline, also the smallest fleet that meets it at
// P90. Exit 2 on bad usage (no change, an unreadable value), 1 when the daemon refuses, a
// variant breaks the plan (its findings printed) or no fleet meets the deadline, else 0.
int RunWhatIf(const ClientOptions& client, const WhatIfOptions& options, std::ostream& out, std::ostream& err);

struct RetractOptions {
  std::string run;
  std::vector<std::string> ids;
  std::string after;  // RFC 3339 or a date; "" = none
  std::string reason;
  bool dry_run = false;
  bool json = false;
};
// Retracts events from a run's log (see flightplan.v1.Tracker.RetractEvents) and prints
// what went and the run's status after it. Exit 2 on bad usage (neither --id nor --after,
// an unreadable time), 1 when the daemon refuses.
int RunRetract(const ClientOptions& client, const RetractOptions& options, std::ostream& out, std::ostream& err);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_CLIENT_COMMANDS_H_
