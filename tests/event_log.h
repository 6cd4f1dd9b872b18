// Test helpers: flightplan.v1.Event builders and a synthetic event log with crashes,
// restores, unreported crashes, maintenance and duplicates.
#ifndef FLIGHTPLAN_TESTS_EVENT_LOG_H_
#define FLIGHTPLAN_TESTS_EVENT_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "flightplan/v1/event.pb.h"

namespace flightplan::testing {

// 2027-01-04T00:00:00Z plus `seconds`.
int64_t T0();
v1::Event StartedAt(const std::string& run, double t, uint32_t attempt, int64_t restored);
v1::Event StepsAt(const std::string& run, double t, int64_t step, int64_t tokens);
v1::Event CheckpointAt(const std::string& run, double t, int64_t step, double blocking);
v1::Event InterruptedAt(const std::string& run, double t, const std::string& cause, bool planned = false);
v1::Event FinishedAt(const std::string& run, double t);

// A run of `steps` steps (one report per step, 10 s each, 1,000 tokens per step) with a
// checkpoint every 50 steps, a crash every ~700 steps (some unreported), a planned
// maintenance window, and every event carrying an id. Deterministic for a seed.
std::vector<v1::Event> SyntheticRun(const std::string& run, int64_t steps, uint32_t seed);

// One JSON object per line.
std::string ToJsonLines(const std::vector<v1::Event>& events);

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_EVENT_LOG_H_
