// An event checked on its own, before the fold (ValidateEvent): each kind's fields and
// ranges, the format of causes and spans, ids; and the refusal of a relaunch that reuses an
// attempt number (ReusedAttempt).
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "forecast/accounting.h"

namespace flightplan::forecast {

namespace {

bool ValidCause(const std::string& cause) {
  if (cause.size() > 32) return false;
  return std::all_of(cause.begin(), cause.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

}  // namespace

absl::Status ReusedAttempt(uint32_t attempt, uint32_t current, const std::string& launched) {
  return absl::AlreadyExistsError(absl::StrCat("job_started.attempt ", attempt, " was already launched",
                                               launched.empty() ? "" : absl::StrCat(" (", launched, ")"),
                                               ": the run's current attempt is ", current, "; a relaunch is attempt ",
                                               current + 1));
}

absl::Status ValidateEvent(const Event& e) {
  if (e.id.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("id is ", e.id.size(), " bytes; at most 128"));
  }
  if (!e.id.empty() && e.id[0] == '~') {
    return absl::InvalidArgumentError(
        absl::StrCat("id '", e.id.substr(0, 40), "' starts with '~', reserved for natural keys"));
  }
  if (!e.source.empty() && e.source != kSchedulerSource) {
    return absl::InvalidArgumentError(absl::StrCat("source '", e.source.substr(0, 40),
                                                   "' must be \"\" (the training) or \"", kSchedulerSource,
                                                   "\" (flightplan slurm)"));
  }
  switch (e.kind) {
    case EventKind::kJobStarted:
      if (e.launch.size() > 128) {
        return absl::InvalidArgumentError(
            absl::StrCat("job_started.launch is ", e.launch.size(), " bytes; at most 128"));
      }
      if (e.attempt < 1) {
        return absl::InvalidArgumentError("job_started.attempt must be >= 1 (launches count from 1)");
      }
      if (e.restored_step < 0) {
        return absl::InvalidArgumentError(absl::StrCat("job_started.restored_step ", e.restored_step, " is negative"));
      }
      break;
    case EventKind::kSteps:
      if (e.step < 0) return absl::InvalidArgumentError(absl::StrCat("steps.step ", e.step, " is negative"));
      if (e.tokens < 0) {
        return absl::InvalidArgumentError(absl::StrCat("steps.tokens ", e.tokens, " is negative"));
      }
      if (!(e.rank_spread >= 0) || !(e.rank_spread <= 100)) {
        return absl::InvalidArgumentError(absl::StrCat("steps.rank_spread ", e.rank_spread,
                                                       " must be a finite number from 0 to 100 (0.05: 5% slower)"));
      }
      break;
    case EventKind::kCheckpointSaved:
      if (e.step < 0) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint_saved.step ", e.step, " is negative"));
      }
      if (!(e.blocking_seconds >= 0) || !std::isfinite(e.blocking_seconds)) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint_saved.blocking_seconds ", e.blocking_seconds, " must be a finite number >= 0"));
      }
      break;
    case EventKind::kInterruption:
      if (!ValidCause(e.cause)) {
        return absl::InvalidArgumentError(
            absl::StrCat("interruption.cause '", e.cause.substr(0, 40),
                         "' must be a short lowercase word: up to 32 of a-z, 0-9, '_' and '-'"));
      }
      if (e.detail.size() > 4096) {
        return absl::InvalidArgumentError("interruption.detail is longer than 4096 bytes");
      }
      break;
    case EventKind::kRunFinished:
      break;
    case EventKind::kSpanStarted:
    case EventKind::kSpanEnded: {
      const char* field = e.kind == EventKind::kSpanStarted ? "span_started.kind" : "span_ended.kind";
      if (e.span.empty() || !ValidCause(e.span)) {
        return absl::InvalidArgumentError(absl::StrCat(field, " '", e.span.substr(0, 40),
                                                       "' must be a short lowercase word (eval, sdc_check, profiling, "
                                                       "or the job's own): 1 to 32 of a-z, 0-9, '_' and '-'"));
      }
      if (!(e.expected_seconds >= 0) || !(e.expected_seconds <= 30 * 86400.0)) {
        return absl::InvalidArgumentError(absl::StrCat("span_started.expected_seconds ", e.expected_seconds,
                                                       " must be a number of seconds from 0 (not said) to 30 days"));
      }
      break;
    }
    case EventKind::kExcluded:
      if (e.until <= e.time) {
        return absl::InvalidArgumentError(absl::StrCat("excluded.until ", FormatUtc(e.until),
                                                       " is not after the window's start ", FormatUtc(e.time),
                                                       ": a window runs from the event's time to until"));
      }
      if (e.detail.size() > 4096) return absl::InvalidArgumentError("excluded.reason is longer than 4096 bytes");
      break;
  }
  return absl::OkStatus();
}

}  // namespace flightplan::forecast
