// flightplan: plan a pre-training run from explicit assumptions.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/plan_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "flightplan: plan a large pre-training run from explicit assumptions.\n"
      "The plan format and the report's fields: ../shared/DESIGN.md section 3 and "
      "proto/flightplan/v1/plan.proto."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flightplan 0.1.0");

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
                   "nodes, that finishes by this time (RFC 3339 or YYYY-MM-DD, UTC)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (app.got_subcommand(plan)) {
    return flightplan::RunPlanCommand(plan_options, std::cout, std::cerr);
  }
  return 2;
}
