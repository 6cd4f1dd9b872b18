// What the forecasts read of a run: the samples the fold keeps (throughput, wall tokens, the
// failure budget, the evidence), the budget consumed, and the run as of any moment
// (Snapshot: the folded state plus the open interval since its latest event).
#include <algorithm>
#include <deque>
#include <utility>

#include "forecast/accounting.h"
#include "forecast/accounting_internal.h"

namespace flightplan::forecast {

using namespace accounting_internal;  // NOLINT(build/namespaces): this folder's own helpers

namespace {

constexpr size_t kMaxRecentSamples = 512;

EvidenceSample FoldedEvidence(const RunState& s, absl::Time t) {
  EvidenceSample e;
  e.time = t;
  const TimeSeconds& x = s.seconds;
  e.running_seconds = x.startup + x.productive + x.capacity + x.checkpoint + x.custom + x.lost + x.stalled;
  e.productive_seconds = x.productive;
  e.productive_tokens = s.productive_tokens;
  e.incidents = s.incidents;
  e.incident_loss_seconds = s.incident_loss_sum;
  const double open = s.incident_open ? BudgetConsumed(s) - s.incident_start_budget : 0;
  e.other_seconds = std::max(0.0, x.Sum() - x.excluded - x.productive - x.checkpoint - s.incident_loss_sum - open);
  e.planned_stops = s.planned_interruptions;
  return e;
}

}  // namespace

namespace accounting_internal {

void PushTokenSample(RunState& s, absl::Time t) {
  const TokenSample sample{t, s.tokens};
  if (s.wall_tokens.size() >= 2 &&
      s.wall_tokens.back().time - s.wall_tokens[s.wall_tokens.size() - 2].time < kRecentWindow / 256) {
    s.wall_tokens.back() = sample;
  } else {
    s.wall_tokens.push_back(sample);
  }
  while (s.wall_tokens.size() >= 2 && s.wall_tokens[1].time <= t - kRecentWindow) s.wall_tokens.pop_front();
}

void PushBudgetSample(RunState& s, absl::Time t) {
  const BudgetSample sample{t, BudgetConsumed(s)};
  if (s.budget_samples.size() >= 2 &&
      s.budget_samples.back().time - s.budget_samples[s.budget_samples.size() - 2].time < kBudgetSampleSpacing) {
    s.budget_samples.back() = sample;
  } else {
    s.budget_samples.push_back(sample);
  }
  while (s.budget_samples.size() >= 2 && s.budget_samples[1].time <= t - kBudgetHistory) {
    s.budget_samples.pop_front();
  }
}

void PushEvidence(RunState& s, absl::Time t) {
  const EvidenceSample sample = FoldedEvidence(s, t);
  // Events at one instant make one sample (an async save at its step report's time).
  if ((!s.evidence.empty() && s.evidence.back().time == PackedTime(t)) ||
      (s.evidence.size() >= 2 &&
       s.evidence.back().time - s.evidence[s.evidence.size() - 2].time < s.evidence_spacing)) {
    s.evidence.back() = sample;
    return;
  }
  s.evidence.push_back(sample);
  if (s.evidence.size() <= kMaxEvidenceSamples) return;
  // Full: keep every other sample (the first and the newest always), double the spacing.
  std::deque<EvidenceSample> kept;
  for (size_t i = 0; i < s.evidence.size(); i += 2) kept.push_back(s.evidence[i]);
  if (kept.back().time != s.evidence.back().time) kept.push_back(s.evidence.back());
  s.evidence = std::move(kept);
  s.evidence_spacing *= 2;
}

void PushSample(RunState& s, absl::Time t) {
  // The newest sample is replaced while it sits closer than 1/256 of the window to the one
  // before it, so kept samples are that far apart: an hour holds at most ~257 of them,
  // whatever the report rate.
  const ThroughputSample sample{t, s.seconds.productive, s.productive_tokens};
  if (s.recent.size() >= 2 && s.recent.back().time - s.recent[s.recent.size() - 2].time < kRecentWindow / 256) {
    s.recent.back() = sample;
  } else {
    s.recent.push_back(sample);
  }
  // Keep one sample at or before the window's start so the window is full.
  while (s.recent.size() >= 2 && s.recent[1].time <= t - kRecentWindow) s.recent.pop_front();
  if (s.recent.size() > kMaxRecentSamples) s.recent.pop_front();
}

}  // namespace accounting_internal

double StartupStallSeconds(const RunState& s) {
  return s.typical_startup > 0 ? std::max(kStallFactor * s.typical_startup, kStartupStallMinSeconds)
                               : kStallUnknownSeconds;
}

double BudgetConsumed(const RunState& s) {
  return s.seconds.lost + s.seconds.down_unplanned + s.seconds.stalled + s.startup_after_unplanned;
}

EvidenceSample EvidenceNow(const RunState& s, const RunSnapshot& snap) {
  EvidenceSample e;
  e.time = snap.as_of;
  const TimeSeconds& x = snap.seconds;
  e.running_seconds = snap.running_seconds;
  e.productive_seconds = x.productive;
  // Tokens of the open interval are not known until the next report: the folded count.
  e.productive_tokens = s.productive_tokens;
  e.incidents = s.incidents;
  e.incident_loss_seconds = s.incident_loss_sum;
  const double open = s.incident_open ? snap.failure_budget_consumed_seconds - s.incident_start_budget : 0;
  e.other_seconds = std::max(0.0, x.Sum() - x.excluded - x.productive - x.checkpoint - s.incident_loss_sum - open);
  e.planned_stops = s.planned_interruptions;
  return e;
}

RunSnapshot Snapshot(const RunState& s, absl::Time now) {
  RunSnapshot out;
  out.phase = s.phase;
  out.attempt = s.attempt;
  out.events = s.events;
  out.first_time = s.first_time;
  out.last_time = s.last_time;
  out.step = s.step;
  out.tokens = s.tokens;
  out.seconds = s.seconds;
  out.interruptions = s.interruptions;
  out.flags = s.flags;
  out.last_step_time = s.last_step_time;
  out.typical_step_gap = s.typical_step_gap;
  out.slowdown = ReportSlowdown(s.slowdown, 0, std::max(now, s.last_time));
  out.rank_spread = s.rank_spread;
  out.typical_rank_spread = s.typical_rank_spread;
  out.custom_by_kind = s.custom_by_kind;
  out.gpus = s.gpus;
  out.exclusions = s.exclusions;
  if (!s.span_kind.empty()) {
    out.span_kind = s.span_kind;
    out.span_start = s.span_start;
    out.span_promised_until = s.span_start + absl::Seconds(s.span_promise);
  }
  double startup_after_unplanned = s.startup_after_unplanned;
  if (s.events == 0) {
    out.as_of = now;
    return out;
  }
  absl::Time as_of = std::max(now, s.last_time);
  if (s.phase == Phase::kFinished) as_of = s.last_time;
  out.as_of = as_of;
  const double excluded = ExcludedSeconds(s.exclusions, s.last_time, as_of);
  out.seconds.excluded += excluded;
  const double tail = absl::ToDoubleSeconds(as_of - s.last_time) - excluded;
  if (!s.span_kind.empty() && s.phase != Phase::kFinished) {
    // Inside the open span: custom while its promise holds, a stall past it.
    const double within = std::clamp(s.span_promise - s.span_charged, 0.0, std::max(0.0, tail));
    out.seconds.custom += within;
    AddCustom(out.custom_by_kind, s.span_kind, within);
    out.seconds.stalled += std::max(0.0, tail - within);
  } else {
    switch (s.phase) {
      case Phase::kDown:
        (s.down_planned ? out.seconds.down_planned : out.seconds.down_unplanned) += tail;
        break;
      case Phase::kStarting: {
        const double within = std::clamp(StartupStallSeconds(s) - s.startup_in_attempt, 0.0, tail);
        out.seconds.startup += within;
        if (s.last_stop_unplanned) startup_after_unplanned += within;
        out.seconds.stalled += tail - within;
        break;
      }
      case Phase::kRunning: {
        const Split split = SplitStall(tail, s.typical_step_gap);
        ChargeProductive(s, out.seconds, split.work);
        out.seconds.stalled += split.stalled;
        break;
      }
      default:
        break;
    }
  }
  out.elapsed_seconds = absl::ToDoubleSeconds(as_of - s.first_time);
  out.running_seconds = out.seconds.startup + out.seconds.productive + out.seconds.capacity + out.seconds.checkpoint +
                        out.seconds.custom + out.seconds.lost + out.seconds.stalled;
  out.failure_budget_consumed_seconds =
      out.seconds.lost + out.seconds.down_unplanned + out.seconds.stalled + startup_after_unplanned;
  out.tokens_per_second = s.seconds.productive > 0 ? s.productive_tokens / s.seconds.productive : 0;
  out.recent_tokens_per_second = out.tokens_per_second;
  if (s.recent.size() >= 2) {
    const ThroughputSample& a = s.recent.front();
    const ThroughputSample& b = s.recent.back();
    if (b.productive_seconds > a.productive_seconds) {
      out.recent_tokens_per_second =
          (b.productive_tokens - a.productive_tokens) / (b.productive_seconds - a.productive_seconds);
    }
  }
  return out;
}

}  // namespace flightplan::forecast
