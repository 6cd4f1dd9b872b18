// A run's own earlier crises of failures (crisis_history.h): its evidence samples cut into
// days, each day judged against the plan's failure cost, consecutive bad days joined.
#include "forecast/crisis_history.h"

#include <cmath>

#include "forecast/processes.h"

namespace flightplan::forecast {
namespace {

constexpr absl::Duration kOneDay = absl::Hours(24);
// A day with less running time than this says too little either way (a day mostly down
// for maintenance): it neither starts a crisis nor counts as calm.
constexpr double kMinRunningSeconds = 6 * 3600.0;
// The calm days that end a crisis.
constexpr int kCalmDays = 2;
// A day's count of failures is "too many" for the plan when the plan's rate would give at
// least as many less often than this.
constexpr double kTail = 0.01;
// And at least this many: two crashes in a quiet day are not a crisis.
constexpr double kMinIncidents = 3;

// P(N >= n) for N Poisson with mean `mean`: 1 - the sum of the first n terms.
double PoissonTail(double n, double mean) {
  if (n <= 0) return 1;
  if (mean <= 0) return 0;
  double term = std::exp(-mean), below = 0;
  for (int k = 0; k < static_cast<int>(n); ++k) {
    below += term;
    term *= mean / (k + 1);
  }
  return std::max(0.0, 1 - below);
}

}  // namespace

CrisisHistory ReadCrises(const std::deque<EvidenceSample>& evidence, double plan_mtbf_seconds, double plan_loss_seconds,
                         absl::Time before) {
  CrisisHistory out;
  if (evidence.size() < 2 || plan_mtbf_seconds <= 0 || plan_loss_seconds <= 0) return out;
  const double plan_cost = plan_loss_seconds / plan_mtbf_seconds;  // seconds lost per running second
  PastCrisis open;
  bool in_crisis = false;
  double open_running = 0, open_loss = 0;
  int calm = 0;
  auto close = [&]() {
    open.cost_ratio = open_running > 0 ? open_loss / open_running / plan_cost : 0;
    out.ended.push_back(open);
    in_crisis = false;
    calm = 0;
  };
  size_t a = 0;
  for (size_t b = 1; b < evidence.size(); ++b) {
    const EvidenceSample& from = evidence[a];
    const EvidenceSample& to = evidence[b];
    if (absl::Time(to.time) - absl::Time(from.time) < kOneDay) continue;
    a = b;
    if (absl::Time(to.time) > before) break;
    const double running = to.running_seconds - from.running_seconds;
    const double incidents = to.incidents - from.incidents;
    const double loss = to.incident_loss_seconds - from.incident_loss_seconds;
    if (running < kMinRunningSeconds) continue;
    const double ratio = loss / running / plan_cost;
    const bool bad = incidents >= kMinIncidents && ratio >= forecaster_internal::kFarRatio &&
                     PoissonTail(incidents, running / plan_mtbf_seconds) < kTail;
    // Calm: back more than half way, in logs, to the plan (a fleet that sits at the
    // threshold is not a crisis ending and starting again every other day).
    const bool calm_day = ratio < std::sqrt(forecaster_internal::kFarRatio);
    if (bad) {
      if (!in_crisis) {
        open = PastCrisis{};
        open.start = from.time;
        open_running = open_loss = 0;
        in_crisis = true;
      }
      open.end = to.time;
      open.incidents += incidents;
      open_running += running;
      open_loss += loss;
      calm = 0;
    } else if (!calm_day) {
      calm = 0;
    } else if (in_crisis && ++calm >= kCalmDays) {
      close();
    }
  }
  if (in_crisis) out.open_since = open.start;
  return out;
}

}  // namespace flightplan::forecast
