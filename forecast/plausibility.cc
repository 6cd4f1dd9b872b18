#include "forecast/plausibility.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace flightplan::forecast {
namespace {

constexpr char kFlat[] = "steps.tokens did not grow";
constexpr char kBurst[] = "steps.tokens arrived faster";

bool Carries(const RunState& s, const char* kind) {
  return std::any_of(s.flags.begin(), s.flags.end(), [&](const std::string& f) { return absl::StartsWith(f, kind); });
}

}  // namespace

std::optional<std::string> ImplausibleSteps(const RunState& s, const Event& e) {
  if (e.kind != EventKind::kSteps || s.tokens_inferred || s.tokens_uncertain) return std::nullopt;
  // Two reports of one launch: the steps advanced, the tokens stood still.
  if (s.saw_step_in_attempt && e.step > s.step && e.tokens == s.tokens && s.tokens > 0 && !Carries(s, kFlat)) {
    return absl::StrFormat(
        "%s from step %d to step %d (%d tokens at both): steps.tokens is the lineage's cumulative count, not the "
        "step's (docs/contract.md §4); progress and throughput stand still while it repeats",
        kFlat, s.step, e.step, e.tokens);
  }
  // Against the oldest token sample of the last hour (the launch, or an hour ago).
  const double peak = s.settings.peak_tokens_per_second;
  if (peak > 0 && !s.wall_tokens.empty()) {
    const TokenSample& from = s.wall_tokens.front();
    const double seconds = std::max(0.0, absl::ToDoubleSeconds(e.time - from.time));
    const double tokens = static_cast<double>(e.tokens - from.tokens);
    // The flags are looked through only for a step that would raise one (not at every step).
    if (tokens > peak * (seconds + kBurstSlackSeconds) && !Carries(s, kBurst)) {
      return absl::StrFormat(
          "%s than the plan's fleet trains them: %.4g tokens in %.3g s up to step %d (%.3g tokens/s; at 100%% MFU the "
          "fleet does %.3g): check that the steps are reported as they happen and that tokens count tokens, not "
          "samples or steps",
          kBurst, tokens, seconds, e.step, tokens / std::max(seconds, 1e-3), peak);
    }
  }
  return std::nullopt;
}

}  // namespace flightplan::forecast
