// The vocabulary of interruption causes (docs/contract.md §4, "Causes"): the words
// `flightplan tail` reads from a dying job's lines (cli/crash_lines.h), `flightplan slurm`
// reads from the scheduler's record (cli/slurm_follow.h), the Python client's hooks and the
// simulator use. A cause outside it becomes `other`, its word kept at the head of the
// event's detail, so that a typo makes no new series and no new row.
#ifndef FLIGHTPLAN_FORECAST_CAUSES_H_
#define FLIGHTPLAN_FORECAST_CAUSES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "forecast/event.h"

namespace flightplan::forecast {

// The causes, each with what it means. `exit_code_N` (N from 0 to 255) stands for the
// 256 words a job's exit code gives.
struct CauseWord {
  const char* cause;
  const char* meaning;
};
[[nodiscard]] const std::vector<CauseWord>& CauseVocabulary();

// Whether `cause` is in the vocabulary ("" is not: the fold reads it as unknown).
[[nodiscard]] bool KnownCause(absl::string_view cause);

// A well-formed cause outside the vocabulary becomes "other", and the detail starts with
// "cause 'WORD'" (then ": " and the detail it had, cut to the detail's limit). A malformed
// cause is left for ValidateEvent to refuse, naming it.
void NormalizeCause(Event& event);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_CAUSES_H_
