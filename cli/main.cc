// flightplan: plan a pre-training run from explicit assumptions, and talk to flightpland.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/client_commands.h"
#include "cli/plan_command.h"
#include "cli/sim_commands.h"
#include "forecast/simulator.h"
#include "storage/sqlite_store.h"

int main(int argc, char** argv) {
  CLI::App app{
      "flightplan: plan a large pre-training run from explicit assumptions, and follow it live "
      "through flightpland.\n"
      "Plan fields and report fields are documented in proto/flightplan/v1/plan.proto; see "
      "README.md and docs/."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flightplan " FLIGHTPLAN_VERSION);

  flightplan::PlanCommandOptions plan_options;
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Print the compute, fleet, layout, memory, checkpoint, failure, schedule, power and data "
      "figures of a plan, with every inconsistency as a finding. Exit 0: no error finding; "
      "1: an error finding (or no fleet meets --deadline); 2: the file can't be read or parsed.");
  plan->add_option("PLAN", plan_options.path, "plan file, YAML or JSON ('-' reads stdin)")
      ->required();
  plan->add_flag("--json", plan_options.json,
                 "print the PlanReport as proto JSON (proto field names) instead of the table");
  plan->add_option("--deadline", plan_options.deadline,
                   "also find the smallest fleet, in whole data-parallel replicas on whole "
                   "nodes, that finishes by this time (RFC 3339 or YYYY-MM-DD, UTC), holding "
                   "the plan's global batch (grad_accum adapts to each dp)");
  plan->add_flag("--allow-batch-change", plan_options.allow_batch_change,
                 "let --deadline grow the global batch with dp (each replica keeps its "
                 "micro-batch and grad_accum): a different training recipe, printed as such");
  std::string plan_run;
  plan->add_option("--run", plan_run,
                   "with --deadline, also the fleet that meets it at P90 from this run's evidence so "
                   "far (asks flightpland, as flightplan whatif RUN --deadline does)")
      ->needs("--deadline")
      ->excludes("--json");

  flightplan::ClientOptions client;
  app.add_option("--server", client.server,
                 "flightpland's gRPC address (commands that talk to the daemon)")
      ->envname("FLIGHTPLAN_SERVER")
      ->capture_default_str();
  app.add_option("--timeout", client.timeout_seconds, "seconds to wait for each call")
      ->capture_default_str();
  std::string token_file, tls_ca;
  app.add_option("--tls-ca", tls_ca, "PEM root certificates: talk to flightpland over TLS")
      ->envname("FLIGHTPLAN_TLS_CA");
  app.add_option("--token-file", token_file,
                 "file holding the bearer token flightpland asks for (or FLIGHTPLAN_TOKEN)")
      ->envname("FLIGHTPLAN_TOKEN_FILE");

  flightplan::CreateOptions create_options;
  CLI::App* create = app.add_subcommand(
      "create", "Register a run with its plan (idempotent for the same plan). A plan with error "
                "findings is refused.");
  create->add_option("PLAN", create_options.plan_path, "plan file, YAML or JSON")->required();
  create->add_option("--run", create_options.run, "run name (default: the plan's name)");
  create->add_flag("--update", create_options.update,
                   "replace the plan of an existing run; the old one is kept as a revision");

  flightplan::ReplayOptions replay_options;
  CLI::App* replay = app.add_subcommand(
      "replay", "Stream a recorded event log (JSON Lines, one flightplan.v1.Event per line) to "
                "the daemon, then print how many events were accepted, duplicates and rejected. "
                "Exit 1 when any was rejected.");
  replay->add_option("EVENTS", replay_options.path, "events file ('-' reads stdin)")->required();
  replay->add_option("--batch", replay_options.batch_events, "events per batch")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  bool no_progress = false;
  replay->add_flag("--no-progress", no_progress, "no progress bar (it shows only on a terminal)");

  flightplan::ReportOptions report_options;
  CLI::App* report = app.add_subcommand(
      "report", "Send one event by hand: --step with --tokens, --checkpoint, --interruption, "
                "--started or --finished.");
  report->add_option("RUN", report_options.run, "run name")->required();
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
  report->add_option("--step", report_options.step, "training reached this step")->check(counts(kInt64Max));
  report->add_option("--tokens", report_options.tokens, "cumulative tokens of the lineage at --step")
      ->check(counts(kInt64Max));
  report->add_option("--checkpoint", report_options.checkpoint, "the state at this step is durable")
      ->check(counts(kInt64Max));
  report->add_option("--blocking", report_options.blocking_seconds,
                     "seconds the checkpoint blocked training");
  report->add_option("--interruption", report_options.interruption,
                     "the job stopped, for this cause (gpu, nccl, hang, maintenance, ...)");
  report->add_flag("--planned", report_options.planned, "the interruption was planned");
  report->add_option("--detail", report_options.detail, "free text for the interruption");
  report->add_option("--started", report_options.started, "a process launch: its attempt number")
      ->check(counts(kUint32Max));
  report->add_option("--restored-step", report_options.restored_step,
                     "with --started: the checkpoint step it resumed from (0 = scratch)")
      ->check(counts(kInt64Max));
  report->add_flag("--finished", report_options.finished, "the target was reached");
  report->add_option("--time", report_options.time, "when it happened (RFC 3339; default now)");
  report->add_option("--id", report_options.id, "idempotency key");
  report->add_option("--attempt", report_options.attempt, "the attempt it comes from (default: current)")
      ->check(counts(kUint32Max));

  flightplan::StatusOptions status_options;
  bool no_wait = false;
  CLI::App* status = app.add_subcommand(
      "status", "A run's progress, wall time by category, interruptions, throughput, finish "
                "forecast (P10/P50/P90), failure budget and burn rates, and reliability. When "
                "the forecast is behind the run's events it waits for a fresh one (--wait), "
                "then says how old the one shown is.");
  status->add_option("RUN", status_options.run, "run name")->required();
  status->add_flag("--json", status_options.json, "print the RunStatus as proto JSON (proto field names)");
  status->add_option("--html", status_options.html_path,
                     "write the run's page (the one flightpland serves at /runs/RUN: one self-contained "
                     "HTML file) to FILE ('-': stdout)");
  status->add_option("--wait", status_options.wait_seconds,
                     "seconds to wait for a forecast that has caught up with the run's events; "
                     "after it, the status shows the older one, labelled")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  status->add_flag("--no-wait", no_wait, "print at once, a stale forecast labelled (--wait 0)");

  std::string history_run;
  bool history_json = false;
  CLI::App* history = app.add_subcommand(
      "history", "A run's forecast trajectory as flightpland stored it: as of, events, P10/P50/P90 "
                 "finish, failure budget consumed, projected at finish, P(exhausted), burn rate. "
                 "A point per 10 minutes of the run's time and on large moves.");
  history->add_option("RUN", history_run, "run name")->required();
  history->add_flag("--json", history_json,
                    "print the ForecastHistory as proto JSON (proto field names)");

  flightplan::WhatIfOptions whatif_options;
  CLI::App* whatif = app.add_subcommand(
      "whatif", "A run's forecast under proposed changes, from its evidence so far, beside the "
                "baseline: P10/P50/P90 finish, failure budget at finish, P(exhausted), deadline "
                "probability, cost and energy at the P50. Each change given is a variant of its "
                "own (repeat a flag for several); the planner checks each (a fleet that breaks "
                "the layout is BROKEN, exit 1). Nothing is stored.");
  whatif->add_option("RUN", whatif_options.run, "run name")->required();
  whatif->add_option("--gpus", whatif_options.gpus,
                     "the fleet, or a change to it (8192, +512, -256): whole replicas, the global "
                     "batch held; repeatable");
  whatif->add_option("--checkpoint-interval", whatif_options.checkpoint_intervals,
                     "compute time between saves (300, 300s, 5m); repeatable");
  whatif->add_flag("--async-checkpoint", whatif_options.async_checkpoint,
                   "asynchronous saves (only the copy to host memory blocks)");
  // CLI::PositiveNumber names its range up to DBL_MAX in full: say it plainly.
  const CLI::Validator above_zero(
      [](std::string& v) {
        double x = 0;
        return absl::SimpleAtod(v, &x) && x > 0 ? std::string() : "'" + v + "' must be a number above 0";
      },
      "> 0");
  whatif->add_option("--node-mtbf-hours", whatif_options.node_mtbf_hours,
                     "the node MTBF from now on, whatever the run has shown (the fleet fixed: the "
                     "plan's own value returns the run to its plan); repeatable")
      ->check(above_zero);
  whatif->add_option("--node-mtbf-factor", whatif_options.node_mtbf_factor,
                     "the plan's node MTBF times this from now on, applied to the run's own failure "
                     "rate (2: bad nodes quarantined twice as fast, half the node failures); repeatable")
      ->check(above_zero);
  whatif->add_option("--restart-seconds", whatif_options.restart_seconds,
                     "seconds to reschedule and relaunch; repeatable")
      ->check(CLI::NonNegativeNumber);
  whatif->add_option("--mfu", whatif_options.mfu, "the model FLOPs utilisation end to end (the bubble included) from now on; repeatable")
      ->check(CLI::Range(1e-6, 1.0));
  whatif->add_flag("--combined", whatif_options.combined, "also one variant with every change given");
  whatif->add_option("--deadline", whatif_options.deadline,
                     "the deadline the probability is of (RFC 3339 or a date; default: the plan's)");
  whatif->add_flag("--json", whatif_options.json, "print the WhatIfResponse as proto JSON");

  CLI::App* runs = app.add_subcommand("runs", "The runs the daemon tracks and their state.");

  std::string plans_run;
  bool plans_json = false;
  CLI::App* plans = app.add_subcommand(
      "plans", "A run's plan revisions, oldest first, with when each took effect (flightplan "
               "create --update adds one; the forecast uses the latest for the work ahead).");
  plans->add_option("RUN", plans_run, "run name")->required();
  plans->add_flag("--json", plans_json, "print the revisions, plans and reports as JSON");

  flightplan::RetractOptions retract_options;
  CLI::App* retract = app.add_subcommand(
      "retract", "Take wrong events out of a run (a typo'd date, a report for the wrong run): "
                 "they move to the database's retracted log with an audit row (nothing is lost), "
                 "and the run is folded again from the rest. Needs the write token.");
  retract->add_option("RUN", retract_options.run, "run name")->required();
  retract->add_option("--id", retract_options.ids,
                      "an event's id, or its natural key (~st/a1/s1200); repeatable");
  retract->add_option("--after", retract_options.after,
                      "every event dated after this time (RFC 3339, or a date)");
  retract->add_option("--reason", retract_options.reason, "why, for the audit row");
  retract->add_flag("--dry-run", retract_options.dry_run,
                    "list what would go (with the keys --id takes) and check that the rest folds; "
                    "change nothing");
  retract->add_flag("--json", retract_options.json, "print the response as JSON");

  std::string backup_dest, backup_db = flightplan::storage::DefaultDatabasePath();
  CLI::App* backup = app.add_subcommand(
      "backup", "Take a consistent copy of flightpland's database while it runs (SQLite's "
                "online backup); restore by stopping the daemon and putting the copy in place.");
  backup->add_option("DEST", backup_dest, "where to write the copy")->required();
  backup->add_option("--db", backup_db, "the database to copy")->capture_default_str();

  flightplan::TailOptions tail_options;
  CLI::App* tail = app.add_subcommand(
      "tail", "Follow a training log (as tail -F: across rotation and truncation) and report "
              "its iterations, checkpoint saves, restarts and deaths (with the cause the crash lines "
              "name: NCCL, a hang, CUDA, ECC, OOM, a driver Xid, Slurm's cancellations) as events. "
              "Its launches continue the "
              "run's attempts (asked of the daemon), so per-job logs tailed in turn, or a tailer "
              "restarted on the same log, stitch into one run. Tokens per iteration come from "
              "--seq-len/--tokens-per-step/--plan, else the log (Megatron's arguments dump, "
              "torchtitan's batch line), else the run's plan in the daemon; when none gives them, "
              "nothing is sent and it exits 2 saying what to pass. Lines it recognises but cannot "
              "use are named on stderr and make it exit 1.");
  tail->add_option("LOGFILE", tail_options.path, "the training log")->required();
  tail->add_option("--run", tail_options.run, "run name")->required();
  tail->add_option("--format", tail_options.format, "megatron (Megatron-LM, Megatron-DeepSpeed) or torchtitan")
      ->check(CLI::IsMember({"megatron", "torchtitan"}))
      ->capture_default_str();
  tail->add_flag("--from-start", tail_options.from_start,
                 "read what the file already holds (a backfill) before following it");
  tail->add_flag("--exit-at-eof", tail_options.exit_at_eof,
                 "stop at the end of the file and print a summary (backfill a finished log)");
  tail->add_option("--seq-len", tail_options.seq_len,
                   "tokens per sample, for logs that count samples (default: the log's seq_length, "
                   "else the run's plan)");
  tail->add_option("--tokens-per-step", tail_options.tokens_per_step,
                   "tokens per step, for logs that count neither (default: from the log, else the "
                   "run's plan)");
  tail->add_option("--plan", tail_options.plan_path,
                   "take seq_len and tokens per step from this plan file (over the log's)");
  tail->add_option("--timezone", tail_options.timezone,
                   "zone of the log's timestamps (e.g. Europe/Paris)")->capture_default_str();

  flightplan::SimulateOptions sim;
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Print a synthetic event log (JSON Lines) drawn from a plan's own assumptions; "
                  "the flags make reality differ from the plan.");
  simulate->add_option("PLAN", sim.plan_path, "plan file")->required();
  simulate->add_option("--run", sim.run, "run name in the events (default: the plan's)");
  simulate->add_option("--seed", sim.simulation.seed, "random seed")->capture_default_str();
  std::string scenario_names;
  for (const auto& sc : flightplan::forecast::Scenarios()) {
    absl::StrAppend(&scenario_names, "\n    ", sc.name, ": ", sc.description);
  }
  std::vector<std::string> scenario_list;
  for (const auto& sc : flightplan::forecast::Scenarios()) scenario_list.push_back(sc.name);
  simulate->add_option("--scenario", sim.scenario,
                       "start from a named scenario (the calibration test's); flags given too "
                       "override its settings:" + scenario_names)
      ->check(CLI::IsMember(scenario_list));
  // Each knob: an option, and (with --scenario) an override when given explicitly.
  std::vector<std::function<void(flightplan::forecast::SimulationOptions&)>> overrides;
  auto knob = [&](const std::string& flag, auto member, const std::string& help) {
    simulate->add_option(flag, sim.simulation.*member, help)->capture_default_str();
    overrides.push_back([&sim, simulate, flag, member](flightplan::forecast::SimulationOptions& o) {
      if (simulate->count(flag) > 0) o.*member = sim.simulation.*member;
    });
  };
  using SO = flightplan::forecast::SimulationOptions;
  knob("--failure-rate-factor", &SO::failure_rate_factor, "failures x k");
  knob("--throughput-factor", &SO::throughput_factor, "achieved / planned tokens per second");
  knob("--degrade-per-tenth", &SO::degrade_per_tenth, "throughput lost per tenth of progress");
  knob("--regime-at", &SO::regime_at, "progress (0-1) where a regime change (a bad rack) starts; 0 = none");
  knob("--regime-failure-factor", &SO::regime_failure_factor, "failures x k after the regime change");
  knob("--regime-throughput-factor", &SO::regime_throughput_factor, "throughput x f after the regime change");
  knob("--early-until", &SO::early_until, "progress (0-1) until which failures are x --early-failure-factor");
  knob("--early-failure-factor", &SO::early_failure_factor, "failures x k before --early-until (a chaotic start)");
  knob("--early-failure-ramp-to", &SO::early_failure_ramp_to,
       "failures rise linearly to x k at --early-until (0 = constant): the worst stretch last");
  knob("--step-time-noise", &SO::step_time_noise, "log-normal sigma of each report interval's time");
  knob("--bad-day-every-days", &SO::bad_day_every_days, "mean days between bad days (bursty failures); 0 = none");
  knob("--bad-day-hours", &SO::bad_day_hours, "length of a bad day");
  knob("--bad-day-failure-factor", &SO::bad_day_failure_factor, "failures x k on a bad day");
  knob("--maintenance-every-days", &SO::maintenance_every_days,
       "planned maintenance on a calendar, every N days (0 = the plan's allotment as windows)");
  knob("--maintenance-hours", &SO::maintenance_hours, "length of each calendar maintenance window");
  knob("--intervention-every-days", &SO::intervention_every_days,
       "a deliberate planned restart that rolls back checkpoints, every N days; 0 = none");
  knob("--intervention-rollback-checkpoints", &SO::intervention_rollback_checkpoints,
       "checkpoints an intervention rolls back");
  knob("--restart-tail-alpha", &SO::restart_tail_alpha, "> 0: Pareto-tailed restarts of this shape");
  knob("--hang-fraction", &SO::hang_fraction, "share of failures that hang until the watchdog");
  knob("--watchdog-seconds", &SO::watchdog_seconds, "watchdog timeout");
  knob("--unreported-fraction", &SO::unreported_fraction, "share of crashes nobody reports");
  knob("--duplicate-fraction", &SO::duplicate_fraction, "share of events sent twice");
  bool no_maintenance = false;
  simulate->add_flag("--no-maintenance", no_maintenance, "no planned maintenance windows");
  simulate->add_option("--reports", sim.simulation.target_reports, "step reports over the run")
      ->capture_default_str();

  flightplan::BacktestOptions backtest_options;
  CLI::App* backtest = app.add_subcommand(
      "backtest", "Replay a recorded run offline with the event clock and print, at each tenth "
                  "of progress, the P10/P50/P90 finish against the actual one, beside two naive "
                  "estimates.");
  backtest->add_option("EVENTS", backtest_options.events_path, "events file ('-' reads stdin)")->required();
  backtest->add_option("--plan", backtest_options.plan_path, "the run's plan")->required();
  backtest->add_flag("--json", backtest_options.json, "print JSON");
  backtest->add_option("--draws", backtest_options.draws, "Monte Carlo draws per forecast")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (const char* token = std::getenv("FLIGHTPLAN_TOKEN"); token && *token) client.token = token;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, client.token);
    while (!client.token.empty() && std::isspace(static_cast<unsigned char>(client.token.back()))) {
      client.token.pop_back();
    }
    if (!in && client.token.empty()) {
      std::cerr << "flightplan: cannot read token file " << token_file << "\n";
      return 2;
    }
  }
  if (!tls_ca.empty()) {
    std::ifstream in(tls_ca);
    std::stringstream text;
    text << in.rdbuf();
    client.tls_ca_pem = text.str();
    if (!in || client.tls_ca_pem.empty()) {
      std::cerr << "flightplan: cannot read --tls-ca " << tls_ca << "\n";
      return 2;
    }
  }
  if (app.got_subcommand(plan)) {
    const int planned = flightplan::RunPlanCommand(plan_options, std::cout, std::cerr);
    if (plan_run.empty() || planned == 2) return planned;
    std::cout << "\nFrom run " << plan_run << "'s evidence so far\n";
    flightplan::WhatIfOptions live;
    live.run = plan_run;
    live.deadline = plan_options.deadline;
    return std::max(planned, flightplan::RunWhatIf(client, live, std::cout, std::cerr));
  }
  if (app.got_subcommand(create)) return flightplan::RunCreate(client, create_options, std::cout, std::cerr);
  if (app.got_subcommand(replay)) {
    replay_options.progress = !no_progress;
    return flightplan::RunReplay(client, replay_options, std::cout, std::cerr);
  }
  if (app.got_subcommand(report)) return flightplan::RunReport(client, report_options, std::cout, std::cerr);
  if (app.got_subcommand(status)) {
    if (no_wait) status_options.wait_seconds = 0;
    return flightplan::RunStatus(client, status_options, std::cout, std::cerr);
  }
  if (app.got_subcommand(history)) {
    return flightplan::RunHistory(client, history_run, history_json, std::cout, std::cerr);
  }
  if (app.got_subcommand(runs)) return flightplan::RunList(client, std::cout, std::cerr);
  if (app.got_subcommand(whatif)) return flightplan::RunWhatIf(client, whatif_options, std::cout, std::cerr);
  if (app.got_subcommand(plans)) return flightplan::RunPlans(client, plans_run, plans_json, std::cout, std::cerr);
  if (app.got_subcommand(retract)) return flightplan::RunRetract(client, retract_options, std::cout, std::cerr);
  if (app.got_subcommand(backup)) {
    const absl::Status st = flightplan::storage::SqliteStore::Backup(backup_db, backup_dest);
    if (!st.ok()) {
      std::cerr << "flightplan backup: " << st.message() << "\n";
      return 1;
    }
    std::cout << "backed up " << backup_db << " to " << backup_dest << "\n";
    return 0;
  }
  if (app.got_subcommand(tail)) return flightplan::RunTail(client, tail_options, std::cout, std::cerr);
  if (app.got_subcommand(simulate)) {
    if (!sim.scenario.empty()) {
      flightplan::forecast::SimulationOptions preset = flightplan::forecast::FindScenario(sim.scenario)->options;
      preset.seed = sim.simulation.seed;
      preset.target_reports = sim.simulation.target_reports;
      for (const auto& apply : overrides) apply(preset);
      sim.simulation = preset;
    }
    if (no_maintenance) sim.simulation.maintenance = false;  // a scenario may have none already
    return flightplan::RunSimulate(sim, std::cout, std::cerr);
  }
  if (app.got_subcommand(backtest)) {
    return flightplan::RunBacktestCommand(backtest_options, std::cout, std::cerr);
  }
  return 2;
}
