// Helpers shared by the log tailer's core (log_events.cc) and its format readers
// (log_readers.cc). Not part of the interface.
#ifndef FLIGHTPLAN_CLI_LOG_EVENTS_INTERNAL_H_
#define FLIGHTPLAN_CLI_LOG_EVENTS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <regex>

#include "absl/strings/numbers.h"

namespace flightplan::cli::log_internal {

// A match's group i as an integer (nullopt when it is not one), or as a double (0).
inline std::optional<int64_t> Int(const std::smatch& m, int i) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(m[i].str(), &v)) return std::nullopt;
  return v;
}

inline double Double(const std::smatch& m, int i) {
  double v = 0;
  return absl::SimpleAtod(m[i].str(), &v) ? v : 0;
}

}  // namespace flightplan::cli::log_internal

#endif  // FLIGHTPLAN_CLI_LOG_EVENTS_INTERNAL_H_
