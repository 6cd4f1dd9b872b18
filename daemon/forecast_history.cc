#include "daemon/forecast_history.h"

#include <algorithm>
#include <cmath>

namespace flightplan::daemon {
namespace {

// What a google.protobuf.Timestamp can hold: years 1 to 9999.
std::optional<absl::Time> Representable(absl::Time t) {
  static const absl::Time kMin = absl::FromUnixSeconds(-62135596800);
  static const absl::Time kMax = absl::FromUnixSeconds(253402300799);
  if (t < kMin || t > kMax) return std::nullopt;
  return t;
}

}  // namespace

storage::ForecastPoint PointFromForecast(const forecast::Forecast& f) {
  storage::ForecastPoint p;
  p.as_of = f.as_of;
  p.events = f.events;
  p.finish_p10 = Representable(f.finish_p10);
  p.finish_p50 = Representable(f.finish_p50);
  p.finish_p90 = Representable(f.finish_p90);
  p.consumed_seconds = f.consumed_seconds;
  p.projected_at_finish_seconds = f.projected_at_finish_seconds;
  p.exhaustion_probability = f.exhaustion_probability;
  p.burn_rate = f.burn_rate;
  p.finished = f.finished;
  return p;
}

bool IsLargeMove(const storage::ForecastPoint& last, const storage::ForecastPoint& next,
                 const HistoryOptions& options) {
  if (next.finished != last.finished) return true;
  if (last.finish_p50.has_value() != next.finish_p50.has_value()) return true;
  if (last.finish_p50 && next.finish_p50) {
    const double remaining = std::max(0.0, absl::ToDoubleSeconds(*last.finish_p50 - last.as_of));
    const double band = last.finish_p10 && last.finish_p90
                            ? std::max(0.0, absl::ToDoubleSeconds(*last.finish_p90 - *last.finish_p10))
                            : 0.0;
    const double moved = std::fabs(absl::ToDoubleSeconds(*next.finish_p50 - *last.finish_p50));
    if (moved > options.p50_move_fraction * remaining && moved > options.p50_move_band * band) {
      return true;
    }
  }
  // (1e-9: 0.3 - 0.2 is a move of 0.1.)
  return std::fabs(next.exhaustion_probability - last.exhaustion_probability) >= options.exhaustion_move - 1e-9;
}

bool ShouldRecord(const std::optional<storage::ForecastPoint>& last, const storage::ForecastPoint& next,
                  const HistoryOptions& options) {
  if (next.events == 0) return false;
  if (!last) return true;
  if (next.as_of < last->as_of || last->finished) return false;
  if (next.finished) return next.as_of > last->as_of || next.events > last->events;
  if (next.as_of == last->as_of) return false;
  const absl::Duration since = next.as_of - last->as_of;
  if (since >= options.min_spacing) return true;
  return since >= options.min_move_spacing && IsLargeMove(*last, next, options);
}

}  // namespace flightplan::daemon
