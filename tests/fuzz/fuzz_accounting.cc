// Fuzz target: arbitrary event sequences through the accounting and the forecaster.
// Invariants: every second of elapsed time is in exactly one category (the categories add
// up to the elapsed time), no category is negative, a refused event changes nothing, and
// the accepted events folded again from their log in any arrival order (Refold) give the
// same run (the daemon's answer to late events).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "forecast/accounting.h"
#include "forecast/forecaster.h"

namespace {

template <typename T>
T Take(const uint8_t*& p, const uint8_t* end) {
  T v{};
  const size_t n = std::min(sizeof(T), static_cast<size_t>(end - p));
  std::memcpy(&v, p, n);
  p += n;
  return v;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flightplan::forecast;  // NOLINT
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  RunState s;
  std::vector<LoggedEvent> accepted;
  absl::Time t = absl::FromUnixSeconds(1800000000);
  int n = 0;
  while (p < end && n++ < 2000) {
    Event e;
    const uint8_t kind = Take<uint8_t>(p, end) % 5;
    e.kind = static_cast<EventKind>(kind);
    t += absl::Seconds(Take<uint16_t>(p, end) % 4000);
    e.time = t - absl::Seconds(Take<uint8_t>(p, end) % 8 == 0 ? 10 : 0);  // sometimes late
    e.attempt = Take<uint8_t>(p, end) % 6;
    e.step = Take<int16_t>(p, end);
    e.tokens = static_cast<int64_t>(Take<int32_t>(p, end));
    e.restored_step = Take<int16_t>(p, end);
    e.blocking_seconds = Take<uint8_t>(p, end) / 4.0;
    e.planned = Take<uint8_t>(p, end) & 1;
    e.cause = (Take<uint8_t>(p, end) & 1) ? "gpu" : "";
    const RunState before = s;
    const absl::Status st = ApplyEvent(s, e);
    if (!st.ok()) {
      Check(s.events == before.events && s.tokens == before.tokens && s.step == before.step);
      continue;
    }
    // Applied on top only when it sorts after the latest event; else the daemon folds again.
    if (!NeedsRefold(before, e))
      accepted.push_back({static_cast<int64_t>(accepted.size()) + 1, e});
    else
      s = before;
    const RunSnapshot snap = Snapshot(s, t + absl::Seconds(Take<uint8_t>(p, end)));
    const TimeSeconds& c = snap.seconds;
    for (double v : {c.productive, c.checkpoint, c.lost, c.startup, c.down_unplanned, c.down_planned, c.stalled}) {
      Check(v >= -1e-6);
    }
    Check(std::fabs(c.Sum() - snap.elapsed_seconds) <= 1e-6 * std::max(1.0, snap.elapsed_seconds));
  }
  // The log, delivered in reverse, folds into the same run.
  std::vector<LoggedEvent> reversed(accepted.rbegin(), accepted.rend());
  int64_t failed = 0;
  absl::StatusOr<RunState> again = Refold(reversed, s.settings, failed);
  Check(again.ok());
  Check(again->events == s.events && again->tokens == s.tokens && again->step == s.step &&
        again->attempt == s.attempt && again->phase == s.phase);
  Check(std::fabs(again->seconds.Sum() - s.seconds.Sum()) <= 1e-6 * std::max(1.0, s.seconds.Sum()));
  Check(std::fabs(again->seconds.lost - s.seconds.lost) <= 1e-6 * std::max(1.0, s.seconds.lost));
  ForecastPrior prior;
  prior.target_tokens = 1'000'000;
  prior.plan_tokens_per_second = 100;
  prior.plan_total_seconds = 20000;
  prior.plan_active_seconds = 10000;
  prior.budget_seconds = 1000;
  prior.job_mtbf_seconds = 3600;
  prior.loss_per_interruption_seconds = 300;
  ForecastOptions options;
  options.draws = 50;
  (void)ComputeForecast(s, prior, t, options);
  return 0;
}
