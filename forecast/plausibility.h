// Steps a run accepts but a person should look at: tokens that do not grow while the steps
// do (a client reporting each step's tokens instead of the lineage's cumulative count), and
// tokens arriving faster than the plan's fleet can train them (a burst of reports dated at
// once, tokens counted in the wrong unit). Pure; the accounting adds the flag to the run's
// state (RunState::flags), once per kind.
#ifndef FLIGHTPLAN_FORECAST_PLAUSIBILITY_H_
#define FLIGHTPLAN_FORECAST_PLAUSIBILITY_H_

#include <optional>
#include <string>

#include "forecast/accounting.h"
#include "forecast/event.h"

namespace flightplan::forecast {

// Seconds of slack on the rate check: reports dated a little early or late (a client's
// batching, a log line's clock) are not a burst; a minute of the fleet's work at 100% MFU
// beyond what the interval allows is.
inline constexpr double kBurstSlackSeconds = 60;

// The flag for a steps event `e` about to be applied to `state`, or none. Each names the
// step. A kind of flag the run already carries is not raised again.
[[nodiscard]] std::optional<std::string> ImplausibleSteps(const RunState& state, const Event& e);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_PLAUSIBILITY_H_
