// Forecast history: which of a run's forecasts flightpland keeps (docs/contract.md §8).
//
// Every simulation of a run gives a candidate point (its finish P10/P50/P90, failure budget
// consumed, projected at finish, P(exhausted), burn rate, as of the run's "now"). The
// writer thread stores a candidate when ShouldRecord says so, against the run's latest
// stored point: at least `min_spacing` of the run's time after it, or on a large move, or
// when the run finished; never one earlier than it. So a three-month run keeps
// about 13,000 points (one per 10 minutes) plus its large moves, and a run's history is
// strictly increasing in as_of. Past `max_points` the store halves the density of the older
// half (SqliteStore::ThinForecastHistory): the whole trajectory stays, its past coarser.
//
// Pure functions; thread-safe.
#ifndef FLIGHTPLAN_DAEMON_FORECAST_HISTORY_H_
#define FLIGHTPLAN_DAEMON_FORECAST_HISTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"
#include "forecast/forecaster.h"
#include "storage/run_store.h"

namespace flightplan::daemon {

struct HistoryOptions {
  // A point at least this long (the run's time: the forecast's as_of, which is event time
  // under --clock events) after the previous one. Shorter: a finer burn-down, more rows.
  absl::Duration min_spacing = absl::Minutes(10);
  // A large move is stored sooner, but never closer than this to the previous point (so a
  // run whose forecast swings on every simulation cannot flood its history).
  absl::Duration min_move_spacing = absl::Minutes(1);
  // Large moves: P50 finish moved by more than this share of the time that remained to the
  // previous point's P50 and by more than `p50_move_band` of its P10..P90 width, or
  // P(exhausted) by at least `exhaustion_move`. The band guard keeps Monte Carlo noise out:
  // two simulations' medians differ by ~1.6% of the band at 2,000 draws (one standard
  // deviation), which can exceed 1% of the time remaining; P(exhausted) by ~0.016.
  double p50_move_fraction = 0.01;
  double p50_move_band = 0.1;
  double exhaustion_move = 0.1;
  // Points kept per run (~83 bytes each in SQLite); past it the older half is thinned.
  int64_t max_points = 20000;
};

// The point of a (combined) forecast. Finish times outside a Timestamp's range are absent.

[[nodiscard]] storage::ForecastPoint PointFromForecast(const forecast::Forecast& forecast);

// `next` moved enough from `last` to be stored before min_spacing has passed.
[[nodiscard]] bool IsLargeMove(const storage::ForecastPoint& last, const storage::ForecastPoint& next,
                               const HistoryOptions& options);

// Whether `next` joins a history whose latest point is `last` (nullopt: an empty history).
// Never a point of a run without events (its "now" is not yet the run's), one before
// `last`, or one after the run's finished point. A finished point with the as_of of
// `last` (the finish reported at the time of the latest step) replaces it in the store.
[[nodiscard]] bool ShouldRecord(const std::optional<storage::ForecastPoint>& last, const storage::ForecastPoint& next,
                                const HistoryOptions& options);

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_FORECAST_HISTORY_H_
