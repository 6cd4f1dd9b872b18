// Fuzz target: plan files (YAML and JSON) through the parser and the plan engine.
// Invariant: no crash, no hang; a parsed plan always yields a report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "planner/plan_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<flightplan::v1::Plan> plan = flightplan::cli::ParsePlan(text, "fuzz");
  if (!plan.ok()) return 0;
  const flightplan::planner::PlanReport report =
      flightplan::planner::ComputePlan(flightplan::convert::PlanFromProto(*plan));
  (void)flightplan::convert::ReportToProto(report);
  return 0;
}
