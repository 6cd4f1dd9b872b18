// `flightplan simulate` (a synthetic event log from a plan) and `flightplan backtest`
// (forecasts at each tenth of progress against the actual finish). Offline: no daemon.
#ifndef FLIGHTPLAN_CLI_SIM_COMMANDS_H_
#define FLIGHTPLAN_CLI_SIM_COMMANDS_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "forecast/simulator.h"

namespace flightplan::cli {

struct SimulateOptions {
  std::string plan_path;
  std::string run;       // default: the plan's name
  std::string scenario;  // a named scenario (forecast::Scenarios()); main.cc applies it
  forecast::SimulationOptions simulation;
  // Slow stretches as given: "START_DAYS:HOURS:FACTOR[:RAMP_HOURS]", added to the scenario's.
  std::vector<std::string> slow;
};
// "START_DAYS:HOURS:FACTOR[:RAMP_HOURS]" (e.g. "10:72:1.05"); INVALID_ARGUMENT naming the part.
[[nodiscard]] absl::StatusOr<forecast::SlowStretchSpec> ParseSlowStretch(const std::string& text);
// Prints JSON Lines on `out`. Exit 0; 1 when the plan has error findings; 2 when unreadable
// or a --slow is not one.
int RunSimulate(const SimulateOptions& options, std::ostream& out, std::ostream& err);

struct BacktestOptions {
  std::string events_path;
  std::string plan_path;
  bool json = false;
  int draws = 2000;
  bool bad_period_law = false;  // ForecastOptions::bad_period_law
};
// Exit 0; 1 when the log never reaches its target; 2 when a file is unreadable.
int RunBacktestCommand(const BacktestOptions& options, std::ostream& out, std::ostream& err);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_SIM_COMMANDS_H_
