// The commands that talk to flightpland (and `backup`, beside it): their subcommands and
// runs (cli/commands.h).
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/client_commands.h"
#include "cli/commands.h"
#include "cli/exclude_command.h"
#include "cli/nodes_command.h"
#include "storage/sqlite_store.h"

namespace flightplan::cli {

void AddDaemonCommands(Commands& c) {
  struct State {
    CreateOptions create_options;
    ReplayOptions replay_options;
    bool no_progress = false;
    ReportOptions report_options;
    StatusOptions status_options;
    bool no_wait = false;
    std::string history_run;
    bool history_json = false;
    WhatIfOptions whatif_options;
    NodesOptions nodes_options;
    ExcludeOptions exclude_options;
    std::string plans_run;
    bool plans_json = false;
    RetractOptions retract_options;
    std::string backup_dest;
    TailOptions tail_options;
    SlurmOptions slurm_options;
    std::string backup_db = storage::DefaultDatabasePath();
  };
  auto s = std::make_shared<State>();
  CLI::App* create =
      c.app.add_subcommand("create",
                           "Register a run with its plan (idempotent for the same plan). A plan with error "
                           "findings is refused.");
  create->add_option("PLAN", s->create_options.plan_path, "plan file, YAML or JSON")->required();
  create->add_option("--run", s->create_options.run, "run name (default: the plan's name)");
  create->add_flag("--update", s->create_options.update,
                   "replace the plan of an existing run; the old one is kept as a revision");

  CLI::App* replay =
      c.app.add_subcommand("replay",
                           "Stream a recorded event log (JSON Lines, one flightplan.v1.Event per line) to "
                           "the daemon, then print how many events were accepted, duplicates and rejected. "
                           "Exit 1 when any was rejected.");
  replay->add_option("EVENTS", s->replay_options.path, "events file ('-' reads stdin)")->required();
  replay->add_option("--batch", s->replay_options.batch_events, "events per batch")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  replay->add_flag("--no-progress", s->no_progress, "no progress bar (it shows only on a terminal)");

  CLI::App* report = c.app.add_subcommand("report",
                                          "Send one event by hand: --step with --tokens, --checkpoint, --interruption, "
                                          "--started, --finished, --span-start or --span-end.");
  report->add_option("RUN", s->report_options.run, "run name")->required();
  // Counts are checked as the JSON path checks them: a number that does not fit (a 20-digit
  // token count) is refused, never clamped to the largest integer.
  auto counts = [](int64_t max) {
    return CLI::Validator(
        [max](std::string& text) -> std::string {
          int64_t v = 0;
          if (!absl::SimpleAtoi(text, &v) || v < 0 || v > max) {
            return absl::StrCat("'", text, "' is not a whole number in [0, ", max, "]");
          }
          return "";
        },
        "COUNT");
  };
  const int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  const int64_t kUint32Max = std::numeric_limits<uint32_t>::max();
  report->add_option("--step", s->report_options.step, "training reached this step")->check(counts(kInt64Max));
  report->add_option("--tokens", s->report_options.tokens, "cumulative tokens of the lineage at --step")
      ->check(counts(kInt64Max));
  report->add_option("--checkpoint", s->report_options.checkpoint, "the state at this step is durable")
      ->check(counts(kInt64Max));
  report->add_option("--blocking", s->report_options.blocking_seconds, "seconds the checkpoint blocked training");
  report->add_option("--interruption", s->report_options.interruption,
                     "the job stopped, for this cause (gpu, nccl, hang, maintenance, ...)");
  report->add_flag("--planned", s->report_options.planned, "the interruption was planned");
  report->add_option("--detail", s->report_options.detail, "free text for the interruption");
  report->add_option("--started", s->report_options.started, "a process launch: its attempt number")
      ->check(counts(kUint32Max));
  report
      ->add_option("--restored-step", s->report_options.restored_step,
                   "with --started: the checkpoint step it resumed from (0 = scratch)")
      ->check(counts(kInt64Max));
  report
      ->add_option("--gpus", s->report_options.gpus,
                   "with --started: the GPUs it trains on, when fewer than the plan's (at least 1)")
      ->check(CLI::Range(1u, static_cast<unsigned>(kUint32Max)));
  report->add_flag("--finished", s->report_options.finished, "the target was reached");
  report->add_option("--span-start", s->report_options.span_start,
                     "deliberate work began, of this kind (eval, sdc_check, profiling, ...): its time is custom");
  report
      ->add_option("--expected", s->report_options.expected_seconds,
                   "with --span-start: seconds it promises; silence past them is a stall (default 1800)")
      ->check(CLI::Range(0.0, 30 * 86400.0));
  report->add_option("--span-end", s->report_options.span_end, "the open span of this kind ended");
  report->add_option("--time", s->report_options.time, "when it happened (RFC 3339; default now)");
  report->add_option("--id", s->report_options.id, "idempotency key");
  report->add_option("--attempt", s->report_options.attempt, "the attempt it comes from (default: current)")
      ->check(counts(kUint32Max));

  CLI::App* status =
      c.app.add_subcommand("status",
                           "A run's progress, wall time by category, interruptions, throughput, finish "
                           "forecast (P10/P50/P90), failure budget and burn rates, and reliability. When "
                           "the forecast is behind the run's events it waits for a fresh one (--wait), "
                           "then says how old the one shown is.");
  status->add_option("RUN", s->status_options.run, "run name")->required();
  status->add_flag("--json", s->status_options.json, "print the RunStatus as proto JSON (proto field names)");
  status->add_option("--html", s->status_options.html_path,
                     "write the run's page (the one flightpland serves at /runs/RUN: one self-contained "
                     "HTML file) to FILE ('-': stdout)");
  status
      ->add_option("--wait", s->status_options.wait_seconds,
                   "seconds to wait for a forecast that has caught up with the run's events; "
                   "after it, the status shows the older one, labelled")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  status->add_flag("--no-wait", s->no_wait, "print at once, a stale forecast labelled (--wait 0)");
  status->add_option("--from", s->status_options.from,
                     "an interval's start (RFC 3339 or a date; default the run's first event): the wall time, "
                     "goodput, budget consumed and interruptions of the interval alone");
  status->add_option("--to", s->status_options.to, "the interval's end (default: the run's now)");

  CLI::App* history =
      c.app.add_subcommand("history",
                           "A run's forecast trajectory as flightpland stored it: as of, events, P10/P50/P90 "
                           "finish, failure budget consumed, projected at finish, P(exhausted), burn rate. "
                           "A point per 10 minutes of the run's time and on large moves.");
  history->add_option("RUN", s->history_run, "run name")->required();
  history->add_flag("--json", s->history_json, "print the ForecastHistory as proto JSON (proto field names)");

  CLI::App* whatif =
      c.app.add_subcommand("whatif",
                           "A run's forecast under proposed changes, from its evidence so far, beside the "
                           "baseline: P10/P50/P90 finish, failure budget at finish, P(exhausted), deadline "
                           "probability, cost and energy at the P50. Each change given is a variant of its "
                           "own (repeat a flag for several); the planner checks each (a fleet that breaks "
                           "the layout is BROKEN, exit 1; no fleet meets --deadline, exit 3). Nothing is stored.");
  whatif->add_option("RUN", s->whatif_options.run, "run name")->required();
  whatif->add_option("--gpus", s->whatif_options.gpus,
                     "the fleet, or a change to it (8192, +512, -256): whole replicas, the global "
                     "batch held; repeatable");
  whatif->add_option("--checkpoint-interval", s->whatif_options.checkpoint_intervals,
                     "compute time between saves (300, 300s, 5m); repeatable");
  whatif->add_flag("--async-checkpoint", s->whatif_options.async_checkpoint,
                   "asynchronous saves (only the copy to host memory blocks)");
  // CLI::PositiveNumber names its range up to DBL_MAX in full: say it plainly.
  const CLI::Validator above_zero(
      [](std::string& v) {
        double x = 0;
        return absl::SimpleAtod(v, &x) && x > 0 ? std::string() : "'" + v + "' must be a number above 0";
      },
      "> 0");
  whatif
      ->add_option("--node-mtbf-hours", s->whatif_options.node_mtbf_hours,
                   "the node MTBF from now on, whatever the run has shown (the fleet fixed: the "
                   "plan's own value returns the run to its plan); repeatable")
      ->check(above_zero);
  whatif
      ->add_option("--node-mtbf-factor", s->whatif_options.node_mtbf_factor,
                   "the plan's node MTBF times this from now on, applied to the run's own failure "
                   "rate (2: bad nodes quarantined twice as fast, half the node failures); repeatable")
      ->check(above_zero);
  whatif
      ->add_option("--restart-seconds", s->whatif_options.restart_seconds,
                   "seconds to reschedule and relaunch; repeatable")
      ->check(CLI::NonNegativeNumber);
  whatif
      ->add_option("--mfu", s->whatif_options.mfu,
                   "the model FLOPs utilisation end to end (the bubble included) from now on; repeatable")
      ->check(CLI::Range(1e-6, 1.0));
  whatif->add_option("--exclude-nodes", s->whatif_options.exclude_nodes,
                     "nodes to leave out (a,b or Slurm's gpu-node-[117,121]): the failure rate ahead without "
                     "their failures beyond the fleet's rate (flightplan nodes shows them)");
  whatif->add_flag("--combined", s->whatif_options.combined, "also one variant with every change given");
  whatif->add_option("--deadline", s->whatif_options.deadline,
                     "the deadline the probability is of (RFC 3339 or a date; default: the plan's)");
  whatif->add_flag("--json", s->whatif_options.json, "print the WhatIfResponse as proto JSON");

  CLI::App* runs = c.app.add_subcommand("runs", "The runs the daemon tracks and their state.");

  CLI::App* nodes = c.app.add_subcommand(
      "nodes",
      "The daemon's node ledger across every run it tracks: per node the launches that held it, its "
      "node-hours, the failures and slow stretches that named it, and which nodes are suspects (failures "
      "improbable under the fleet's own rate, or two slow stretches), with the evidence and the Slurm option "
      "that drains them.");
  nodes->add_option("--run", s->nodes_options.run, "only the nodes this run held or named");
  nodes->add_flag("--suspects", s->nodes_options.suspects, "only the suspects");
  nodes->add_flag("--json", s->nodes_options.json, "print the NodeLedger as proto JSON");

  CLI::App* exclude = c.app.add_subcommand(
      "exclude",
      "Leave a window of a run's time out of its accounting (a site outage the team does not count): its "
      "seconds become 'excluded', outside goodput's denominator and the failure budget; the status shows "
      "goodput with and without it. Stored as an event; undo with flightplan retract --id.");
  exclude->add_option("RUN", s->exclude_options.run, "run name")->required();
  exclude->add_option("--from", s->exclude_options.from, "the window's start (RFC 3339 or a date)")->required();
  exclude->add_option("--to", s->exclude_options.to, "its end: in the past, after --from")->required();
  exclude->add_option("--reason", s->exclude_options.reason, "why, in words (shown in the status)");
  exclude->add_option("--id", s->exclude_options.id, "idempotency key (default: ~ex/t<from in microseconds>)");

  CLI::App* plans = c.app.add_subcommand("plans",
                                         "A run's plan revisions, oldest first, with when each took effect (flightplan "
                                         "create --update adds one; the forecast uses the latest for the work ahead).");
  plans->add_option("RUN", s->plans_run, "run name")->required();
  plans->add_flag("--json", s->plans_json, "print the revisions, plans and reports as JSON");

  CLI::App* retract =
      c.app.add_subcommand("retract",
                           "Take wrong events out of a run (a typo'd date, a report for the wrong run): "
                           "they move to the database's retracted log with an audit row (nothing is lost), "
                           "and the run is folded again from the rest. Needs the write token.");
  retract->add_option("RUN", s->retract_options.run, "run name")->required();
  retract->add_option("--id", s->retract_options.ids, "an event's id, or its natural key (~st/a1/s1200); repeatable");
  retract->add_option("--after", s->retract_options.after, "every event dated after this time (RFC 3339, or a date)");
  retract->add_option("--reason", s->retract_options.reason, "why, for the audit row");
  retract->add_flag("--dry-run", s->retract_options.dry_run,
                    "list what would go (with the keys --id takes) and check that the rest folds; "
                    "change nothing");
  retract->add_flag("--json", s->retract_options.json, "print the response as JSON");

  CLI::App* backup =
      c.app.add_subcommand("backup",
                           "Take a consistent copy of flightpland's database while it runs (SQLite's "
                           "online backup); restore by stopping the daemon and putting the copy in place.");
  backup->add_option("DEST", s->backup_dest, "where to write the copy")->required();
  backup->add_option("--db", s->backup_db, "the database to copy")->capture_default_str();

  CLI::App* tail =
      c.app.add_subcommand("tail",
                           "Follow a training log (as tail -F: across rotation and truncation) and report "
                           "its iterations, checkpoint saves, restarts and deaths (with the cause the crash lines "
                           "name: NCCL, a hang, CUDA, ECC, OOM, a driver Xid, Slurm's cancellations) as events. "
                           "Its launches continue the "
                           "run's attempts (asked of the daemon), so per-job logs tailed in turn, or a tailer "
                           "restarted on the same log, stitch into one run. Tokens per iteration come from "
                           "--seq-len/--tokens-per-step/--plan, else the log (Megatron's arguments dump, "
                           "torchtitan's batch line), else the run's plan in the daemon; when none gives them, "
                           "nothing is sent and it exits 2 saying what to pass. Lines it recognises but cannot "
                           "use are named on stderr and make it exit 1.");
  tail->add_option("LOGFILE", s->tail_options.path, "the training log")->required();
  tail->add_option("--run", s->tail_options.run, "run name")->required();
  tail->add_option("--format", s->tail_options.format,
                   "megatron (Megatron-LM, Megatron-DeepSpeed), torchtitan, deepspeed (DeepSpeed's "
                   "engine log) or nemo (NeMo 2)")
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed", "nemo"}))
      ->capture_default_str();
  tail->add_flag("--from-start", s->tail_options.from_start,
                 "read what the file already holds (a backfill) before following it");
  tail->add_flag("--exit-at-eof", s->tail_options.exit_at_eof,
                 "stop at the end of the file and print a summary (backfill a finished log)");
  tail->add_option("--seq-len", s->tail_options.seq_len,
                   "tokens per sample, for logs that count samples (default: the log's seq_length, "
                   "else the run's plan)");
  tail->add_option("--tokens-per-step", s->tail_options.tokens_per_step,
                   "tokens per step, for logs that count neither (default: from the log, else the "
                   "run's plan)");
  tail->add_option("--plan", s->tail_options.plan_path,
                   "take seq_len and tokens per step from this plan file (over the log's)");
  tail->add_option("--timezone", s->tail_options.timezone, "zone of the log's timestamps (e.g. Europe/Paris)")
      ->capture_default_str();
  tail->add_option("--launch", s->tail_options.launch,
                   "the scheduler's name for the launch followed live, so that its report and flightplan slurm's are "
                   "one attempt (default inside a Slurm job: slurm:$SLURM_JOB_ID.$SLURM_RESTART_COUNT)");
  tail->add_option("--nodes", s->tail_options.nodes,
                   "the nodes of the launches followed live, in rank order, as a Slurm hostlist (gpu-[001-016]), "
                   "for node attribution (default inside a Slurm job: $SLURM_JOB_NODELIST; a DeepSpeed log's own "
                   "worker list wins)");

  CLI::App* slurm = c.app.add_subcommand(
      "slurm",
      "Follow a Slurm job (or every job of a name: a chain, an array) through squeue --json, sinfo --json and "
      "accounting (sacct -D, sacctmgr show event) or the job completion log, and report each real start and end with "
      "Slurm's cause: a node failure (naming the "
      "node and its reason), a preemption, a time limit (planned when the job comes back by itself), an "
      "operator's requeue or cancel, an OOM kill, an exit code. The time in the queue counts as down time. "
      "Restart-safe: each event's id names its launch, so a restarted watcher resends duplicates and backfills "
      "what it missed. Exits when every followed job has ended.");
  slurm->add_option("--run", s->slurm_options.run, "run name")->required();
  slurm->add_option("--job", s->slurm_options.job, "the job id (an array's id: every task)");
  slurm->add_option("--name", s->slurm_options.name, "every job of this name (a chain of jobs, an array)");
  slurm->add_option("--interval", s->slurm_options.interval_seconds, "seconds between looks")->capture_default_str();
  slurm->add_flag("--once", s->slurm_options.once, "one look, then exit");
  slurm
      ->add_option("--records", s->slurm_options.records,
                   "where the ended runs are read: sacct (accounting), jobcomp (the completion log), none, or auto: "
                   "sacct when AccountingStorageType=accounting_storage/slurmdbd, else jobcomp when "
                   "JobCompType=jobcomp/filetxt, else none")
      ->check(CLI::IsMember({"auto", "sacct", "jobcomp", "none"}))
      ->capture_default_str();
  slurm->add_option("--jobcomp", s->slurm_options.jobcomp,
                    "the job completion log (default: JobCompLoc when JobCompType=jobcomp/filetxt)");
  slurm->add_option("--timezone", s->slurm_options.timezone,
                    "slurmctld's zone, for sacct's and the completion log's times (default: this machine's)");

  ClientOptions& client = c.client;
  c.Add(create, [s, &client] { return RunCreate(client, s->create_options, std::cout, std::cerr); });
  c.Add(replay, [s, &client] {
    s->replay_options.progress = !s->no_progress;
    return RunReplay(client, s->replay_options, std::cout, std::cerr);
  });
  c.Add(report, [s, &client] { return RunReport(client, s->report_options, std::cout, std::cerr); });
  c.Add(status, [s, &client] {
    if (s->no_wait) s->status_options.wait_seconds = 0;
    return RunStatus(client, s->status_options, std::cout, std::cerr);
  });
  c.Add(history, [s, &client] { return RunHistory(client, s->history_run, s->history_json, std::cout, std::cerr); });
  c.Add(runs, [&client] { return RunList(client, std::cout, std::cerr); });
  c.Add(whatif, [s, &client] { return RunWhatIf(client, s->whatif_options, std::cout, std::cerr); });
  c.Add(nodes, [s, &client] { return RunNodes(client, s->nodes_options, std::cout, std::cerr); });
  c.Add(exclude, [s, &client] { return RunExclude(client, s->exclude_options, std::cout, std::cerr); });
  c.Add(plans, [s, &client] { return RunPlans(client, s->plans_run, s->plans_json, std::cout, std::cerr); });
  c.Add(retract, [s, &client] { return RunRetract(client, s->retract_options, std::cout, std::cerr); });
  c.Add(backup, [s] {
    const absl::Status st = storage::SqliteStore::Backup(s->backup_db, s->backup_dest);
    if (!st.ok()) {
      std::cerr << "flightplan backup: " << st.message() << "\n";
      return 1;
    }
    std::cout << "backed up " << s->backup_db << " to " << s->backup_dest << "\n";
    return 0;
  });
  c.Add(tail, [s, &client] { return RunTail(client, s->tail_options, std::cout, std::cerr); });
  c.Add(slurm, [s, &client] { return RunSlurm(client, s->slurm_options, std::cout, std::cerr); });
}

}  // namespace flightplan::cli
