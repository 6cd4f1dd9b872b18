// What a run's state costs in memory: for the daemon's caps (the backfill's budget across
// runs) and its benchmarks. An estimate from the containers' sizes and capacities, without
// the allocator's own overhead.
#ifndef FLIGHTPLAN_FORECAST_STATE_BYTES_H_
#define FLIGHTPLAN_FORECAST_STATE_BYTES_H_

#include <cstddef>
#include <vector>

#include "forecast/accounting.h"

namespace flightplan::forecast {

// The bytes of `state` and everything it owns. The node book is shared between copies of
// a state (the fold copies it only to change it), so it counts only when
// `count_node_book`: a backfill's copies share their run's.
[[nodiscard]] size_t StateBytes(const RunState& state, bool count_node_book = true);

// The same, by part ("evidence", "budget samples", ...; "fixed": the struct itself), largest
// first: where a run's memory goes (flightplan_fleet_bench prints it).
struct StatePart {
  const char* name;
  size_t bytes;
};
[[nodiscard]] std::vector<StatePart> StateBytesByPart(const RunState& state, bool count_node_book = true);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_STATE_BYTES_H_
