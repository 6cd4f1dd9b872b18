// flightplan plan: its subcommand and its run (cli/commands.h).
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "cli/client_commands.h"
#include "cli/commands.h"
#include "cli/plan_command.h"

namespace flightplan::cli {

void AddPlanCommands(Commands& c) {
  struct State {
    PlanCommandOptions plan_options;
    std::string plan_run;
  };
  auto s = std::make_shared<State>();
  CLI::App* plan =
      c.app.add_subcommand("plan",
                           "Print the compute, fleet, layout, memory, checkpoint, failure, schedule, power and data "
                           "figures of a plan, with every inconsistency as a finding (an invalid input: the findings "
                           "only). Exit 0: no error finding, and with --deadline a fleet meets it; 1: an error "
                           "finding (with --deadline: other than the plan's own DEADLINE_MISSED, which the search "
                           "answers); 2: the file can't be read or parsed, or a bad option; 3: with --deadline, "
                           "no fleet meets it. With --run, the live search's 1 (a variant broken) counts too.");
  plan->add_option("PLAN", s->plan_options.path, "plan file, YAML or JSON ('-' reads stdin)")->required();
  plan->add_flag("--json", s->plan_options.json,
                 "print the PlanReport as proto JSON (proto field names) instead of the table");
  plan->add_option("--deadline", s->plan_options.deadline,
                   "also find the smallest fleet, in whole data-parallel replicas on whole "
                   "nodes, that finishes by this time (RFC 3339 or YYYY-MM-DD, UTC), holding "
                   "the plan's global batch (grad_accum adapts to each dp)");
  plan->add_flag("--allow-batch-change", s->plan_options.allow_batch_change,
                 "let --deadline grow the global batch with dp (each replica keeps its "
                 "micro-batch and grad_accum): a different training recipe, printed as such");
  plan->add_option("--run", s->plan_run,
                   "with --deadline, also the fleet that meets it at P90 from this run's evidence so "
                   "far (asks flightpland, as flightplan whatif RUN --deadline does)")
      ->needs("--deadline")
      ->excludes("--json");

  c.Add(plan, [s, &c] {
    const int planned = RunPlanCommand(s->plan_options, std::cout, std::cerr);
    if (s->plan_run.empty() || planned == kPlanUnreadable) return planned;
    std::cout << "\nFrom run " << s->plan_run << "'s evidence so far\n";
    WhatIfOptions live;
    live.run = s->plan_run;
    live.deadline = s->plan_options.deadline;
    const int live_exit = RunWhatIf(c.client, live, std::cout, std::cerr);
    // The plan's answer first; the live search's failure when the plan had none.
    return planned != kPlanOk ? planned : live_exit;
  });
}

}  // namespace flightplan::cli
