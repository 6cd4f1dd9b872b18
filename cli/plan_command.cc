#include "cli/plan_command.h"

#include <optional>
#include <ostream>

#include "cli/plan_file.h"
#include "cli/plan_print.h"
#include "convert/plan_convert.h"
#include "google/protobuf/util/json_util.h"
#include "planner/plan_engine.h"

namespace flightplan::cli {

int RunPlanCommand(const PlanCommandOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::Plan> plan = LoadPlanFile(options.path);
  if (!plan.ok()) {
    err << "flightplan plan: " << plan.status().message() << "\n";
    return 2;
  }
  planner::PlanSpec spec = convert::PlanFromProto(*plan);

  std::optional<planner::DeadlineFleet> fleet;
  if (!options.deadline.empty()) {
    absl::StatusOr<absl::Time> deadline = ParseTimestamp(options.deadline);
    if (!deadline.ok()) {
      err << "flightplan plan: --deadline: " << deadline.status().message() << "\n";
      return 2;
    }
    spec.deadline = *deadline;
    fleet = planner::FindFleetForDeadline(spec, *deadline, 1u << 20, options.allow_batch_change);
  }
  const planner::PlanReport report = planner::ComputePlan(spec);

  if (options.json) {
    v1::PlanReport proto = convert::ReportToProto(report);
    if (fleet) *proto.mutable_deadline_fleet() = convert::DeadlineFleetToProto(*fleet);
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    print.always_print_primitive_fields = true;
    print.preserve_proto_field_names = true;
    std::string json;
    const auto st = google::protobuf::util::MessageToJsonString(proto, &json, print);
    if (!st.ok()) {
      err << "flightplan plan: cannot print JSON: " << st.message() << "\n";
      return 2;
    }
    out << json;
  } else {
    out << FormatPlanReport(spec, report, fleet ? &*fleet : nullptr);
  }
  const bool no_fleet = fleet && !fleet->met;
  return report.HasError() || no_fleet ? 1 : 0;
}

}  // namespace flightplan::cli
