// flightplan simulate and backtest: their subcommands and runs (cli/commands.h).
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/sim_commands.h"
#include "forecast/simulator.h"

namespace flightplan::cli {

void AddSimCommands(Commands& c) {
  struct State {
    SimulateOptions sim;
    // Each knob given explicitly, applied over --scenario's settings.
    std::vector<std::function<void(forecast::SimulationOptions&)>> overrides;
    bool no_maintenance = false;
    BacktestOptions backtest_options;
  };
  auto s = std::make_shared<State>();
  CLI::App* simulate =
      c.app.add_subcommand("simulate",
                           "Print a synthetic event log (JSON Lines) drawn from a plan's own assumptions; "
                           "the flags make reality differ from the plan.");
  simulate->add_option("PLAN", s->sim.plan_path, "plan file")->required();
  simulate->add_option("--run", s->sim.run, "run name in the events (default: the plan's)");
  simulate->add_option("--seed", s->sim.simulation.seed, "random seed")->capture_default_str();
  std::string scenario_names;
  for (const auto& sc : forecast::Scenarios()) {
    absl::StrAppend(&scenario_names, "\n    ", sc.name, ": ", sc.description);
  }
  std::vector<std::string> scenario_list;
  for (const auto& sc : forecast::Scenarios()) scenario_list.push_back(sc.name);
  simulate
      ->add_option("--scenario", s->sim.scenario,
                   "start from a named scenario (the calibration test's); flags given too "
                   "override its settings:" +
                       scenario_names)
      ->check(CLI::IsMember(scenario_list));
  // Each knob: an option, and (with --scenario) an override when given explicitly.
  auto knob = [&](const std::string& flag, auto member, const std::string& help) {
    simulate->add_option(flag, s->sim.simulation.*member, help)->capture_default_str();
    s->overrides.push_back([state = s.get(), simulate, flag, member](forecast::SimulationOptions& o) {
      if (simulate->count(flag) > 0) o.*member = state->sim.simulation.*member;
    });
  };
  using SO = forecast::SimulationOptions;
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
  simulate->add_option("--slow", s->sim.slow,
                       "a slow stretch (a straggler, throttling): START_DAYS:HOURS:FACTOR[:RAMP_HOURS], e.g. "
                       "10:72:1.05 is 5% more time per token from day 10 for 72 hours (reached over RAMP_HOURS; "
                       "0: at once); repeat for several");
  simulate->add_flag("--no-maintenance", s->no_maintenance, "no planned maintenance windows");
  simulate->add_option("--reports", s->sim.simulation.target_reports, "step reports over the run")
      ->capture_default_str();

  CLI::App* backtest =
      c.app.add_subcommand("backtest",
                           "Replay a recorded run offline with the event clock and print, at each tenth "
                           "of progress, the P10/P50/P90 finish against the actual one, beside two naive "
                           "estimates.");
  backtest->add_option("EVENTS", s->backtest_options.events_path, "events file ('-' reads stdin)")->required();
  backtest->add_option("--plan", s->backtest_options.plan_path, "the run's plan")->required();
  backtest->add_flag("--json", s->backtest_options.json, "print JSON");
  backtest->add_option("--draws", s->backtest_options.draws, "Monte Carlo draws per forecast")->capture_default_str();
  backtest->add_flag("--bad-period-law", s->backtest_options.bad_period_law,
                     "end crises and slowdowns by the law from the records, not Gott's D/(D+x) (docs/forecasting.md)");

  c.Add(simulate, [s] {
    if (!s->sim.scenario.empty()) {
      forecast::SimulationOptions preset = forecast::FindScenario(s->sim.scenario)->options;
      preset.seed = s->sim.simulation.seed;
      preset.target_reports = s->sim.simulation.target_reports;
      for (const auto& apply : s->overrides) apply(preset);
      s->sim.simulation = preset;
    }
    if (s->no_maintenance) s->sim.simulation.maintenance = false;  // a scenario may have none already
    return RunSimulate(s->sim, std::cout, std::cerr);
  });
  c.Add(backtest, [s] { return RunBacktestCommand(s->backtest_options, std::cout, std::cerr); });
}

}  // namespace flightplan::cli
