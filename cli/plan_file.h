// Reads a plan written in YAML or JSON into a flightplan.v1.Plan.
//
// Keys follow the proto3 JSON mapping (snake_case field names or lowerCamelCase JSON
// names). Numbers such as `10e12` are accepted wherever a number goes, quoted or not (YAML
// 1.1 reads them as strings). Timestamps are RFC 3339 or a bare date (midnight UTC).
// Every error names the source, the line, and the key path, e.g.
// "plan.yaml:12: model.hidden: expected a number, got 'abc'". Thread-safe.
#ifndef FLIGHTPLAN_CLI_PLAN_FILE_H_
#define FLIGHTPLAN_CLI_PLAN_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "flightplan/v1/plan.pb.h"

namespace flightplan::cli {

// Parses `text` (YAML or JSON); `source` names it in messages. InvalidArgument on any
// syntax error, unknown key, duplicate key or value of the wrong type.
[[nodiscard]] absl::StatusOr<v1::Plan> ParsePlan(std::string_view text, std::string_view source);

// Reads and parses a file; "-" reads standard input. NotFound / PermissionDenied when the
// file cannot be read.
[[nodiscard]] absl::StatusOr<v1::Plan> LoadPlanFile(const std::string& path);

// RFC 3339 ("2027-03-01T00:00:00Z") or a date ("2027-03-01", midnight UTC).
[[nodiscard]] absl::StatusOr<absl::Time> ParseTimestamp(std::string_view text);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_PLAN_FILE_H_
