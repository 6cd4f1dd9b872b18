#include "forecast/causes.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flightplan::forecast {
namespace {

constexpr size_t kMaxDetail = 4096;  // ValidateEvent's limit on interruption.detail
constexpr absl::string_view kExitCode = "exit_code_";

bool WellFormed(absl::string_view cause) {
  return !cause.empty() && cause.size() <= 32 && std::all_of(cause.begin(), cause.end(), [](char c) {
    return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-';
  });
}

}  // namespace

const std::vector<CauseWord>& CauseVocabulary() {
  static const auto* const kWords = new std::vector<CauseWord>{
      {"unknown", "nobody said: a launch with no stop reported before it"},
      {"other", "a cause outside this list (its word is kept in the detail)"},
      {"node", "a node failed or was drained (the scheduler names it)"},
      {"gpu", "a GPU fault: an Xid, fallen off the bus"},
      {"ecc", "an uncorrectable memory error"},
      {"nccl", "a collective failed: NCCL's error, a network fault"},
      {"hang", "a collective or heartbeat timed out"},
      {"cuda", "a CUDA fault in the program"},
      {"oom", "the GPU ran out of memory, or the scheduler's OOM kill"},
      {"host_oom", "the host ran out of memory"},
      {"software", "the program raised (the Python client's exception hook)"},
      {"preemption", "the scheduler took the nodes back"},
      {"time_limit", "the job's time limit (planned when it requeues itself)"},
      {"operator", "a person cancelled or requeued the job"},
      {"maintenance", "a planned window"},
      {"reconfigure", "a planned relaunch to change the job: its layout, batch, code or save cadence"},
      {"diagnostics", "a stop to test the nodes or the job (BLOOM-176B's chronicles)"},
      {"allocation", "the job's allocation ran out or moved (BLOOM-176B's chronicles)"},
      {"sigterm", "only a SIGTERM is known"},
      {"sigkill", "only a SIGKILL is known"},
      {"exit_code_N", "the job exited with code N and nothing named a cause"},
  };
  return *kWords;
}

bool KnownCause(absl::string_view cause) {
  if (absl::StartsWith(cause, kExitCode)) {
    int code = -1;
    const absl::string_view digits = cause.substr(kExitCode.size());
    return !digits.empty() && digits.size() <= 3 && absl::SimpleAtoi(digits, &code) && code >= 0 && code <= 255 &&
           absl::StrCat(code) == digits;
  }
  const std::vector<CauseWord>& words = CauseVocabulary();
  return std::any_of(words.begin(), words.end(),
                     [&](const CauseWord& w) { return cause == w.cause && cause != "exit_code_N"; });
}

void NormalizeCause(Event& e) {
  if (e.kind != EventKind::kInterruption || !WellFormed(e.cause) || KnownCause(e.cause)) return;
  std::string detail = absl::StrCat("cause '", e.cause, "'", e.detail.empty() ? "" : ": ", e.detail);
  if (detail.size() > kMaxDetail) detail.resize(kMaxDetail);
  e.detail = std::move(detail);
  e.cause = "other";
}

}  // namespace flightplan::forecast
