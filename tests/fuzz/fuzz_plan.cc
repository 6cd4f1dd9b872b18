// Fuzz target: plan files (YAML and JSON) through the parser and the plan engine.
// Invariant: no crash, no hang; a parsed plan always yields a report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/plan_file.h"
#include "planner/plan_engine.h"
#include "proto/plan_convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<flightplan::v1::Plan> plan = flightplan::ParsePlan(text, "fuzz");
  if (!plan.ok()) return 0;
  const flightplan::planner::PlanReport report =
      flightplan::planner::ComputePlan(flightplan::PlanFromProto(*plan));
  (void)flightplan::ReportToProto(report);
  return 0;
}
