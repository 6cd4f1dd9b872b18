// A run's status as the core assembles it for readers (RunBoard::StatusOf) and its
// what-if answers (Tracker::WhatIf): plain values of forecast/'s types. The shell turns
// them into flightplan.v1 messages (daemon/wire.h); nothing in the core names one.
#ifndef FLIGHTPLAN_DAEMON_RUN_STATUS_H_
#define FLIGHTPLAN_DAEMON_RUN_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "forecast/nodes.h"
#include "forecast/outage.h"
#include "forecast/whatif.h"

namespace flightplan::daemon {

// The nodes a run held or named, and the ledger's suspects among them.
struct RunNodesStatus {
  bool named = false;  // its events named nodes
  uint32_t nodes = 0;
  std::vector<forecast::NodeRecord> suspects;
};

struct RunStatus {
  std::string run;
  uint32_t plan_revision = 0;
  std::string plan_name;
  int64_t target_tokens = 0;
  double plan_tokens_per_second = 0;  // the plan's report
  double plan_tokens_now = 0;         // the tokens the plan expected by now
  forecast::RunSnapshot snapshot;     // accounting, at the run's now
  // The cheap part of the forecast now, combined with the latest simulation (if any).
  forecast::Forecast forecast;
  // That simulation: its events and as_of, absent before the first one.
  std::optional<uint64_t> simulated_events;
  std::optional<absl::Time> simulated_as_of;
  // The simulation is older than the events or the plan revision shown.
  bool forecast_stale = true;
  forecast::RunCost cost;
  forecast::ForecastPrior::Cost prices;
  std::vector<std::string> flags;  // forecast::PlausibilityFlags
  forecast::OutageReport outage;
  forecast::CheckpointReport checkpoints;
  RunNodesStatus nodes;
};

// The run's forecast under proposed changes (forecast::WhatIf), and for a deadline the
// smallest fleet that meets it (forecast::FleetForDeadline).
struct WhatIfQuery {
  std::string run;
  std::vector<forecast::Variant> variants;
  std::optional<absl::Time> deadline;
  // Nodes to leave out: a variant whose failure rate ahead is the run's without those
  // nodes' excess (forecast::ExcessFailures), after the variants given.
  std::vector<std::string> exclude_nodes;
};

struct WhatIfAnswer {
  std::string run;
  absl::Time as_of;
  double budget_seconds = 0;  // the plan's failure budget
  std::vector<forecast::Outcome> outcomes;
  std::optional<forecast::LiveDeadlineFleet> deadline_fleet;  // with a deadline
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_RUN_STATUS_H_
