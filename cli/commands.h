// How flightplan's commands join the command line: each command file (cli/cmd_*.cc) adds
// its own subcommands, with their options and what runs each, and main is only the wiring
// (the global options, the parse, the run of the subcommand given).
#ifndef FLIGHTPLAN_CLI_COMMANDS_H_
#define FLIGHTPLAN_CLI_COMMANDS_H_

#include <functional>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/client_commands.h"

namespace flightplan::cli {

struct Commands {
  CLI::App& app;
  // The daemon's address, token and TLS, complete once parsed (main reads the files).
  ClientOptions& client;
  struct Entry {
    CLI::App* subcommand;
    std::function<int()> run;  // the exit code
  };
  std::vector<Entry> entries;
  void Add(CLI::App* subcommand, std::function<int()> run) { entries.push_back({subcommand, std::move(run)}); }
};

void AddPlanCommands(Commands& c);    // plan (cmd_plan.cc)
void AddDaemonCommands(Commands& c);  // create, replay, report, status, history, runs, whatif,
                                      // plans, retract, backup, tail (cmd_daemon.cc)
void AddSimCommands(Commands& c);     // simulate, backtest (cmd_sim.cc)

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_COMMANDS_H_
