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
    return kPlanUnreadable;
  }
  planner::PlanSpec spec = convert::PlanFromProto(*plan);

  std::optional<planner::DeadlineFleet> fleet;
  if (!options.deadline.empty()) {
    absl::StatusOr<absl::Time> deadline = ParseTimestamp(options.deadline);
    if (!deadline.ok()) {
      err << "flightplan plan: --deadline: " << deadline.status().message() << "\n";
      return kPlanUnreadable;
    }
    spec.deadline = *deadline;
    fleet = planner::FindFleetForDeadline(spec, *deadline, 1u << 20, options.allow_batch_change);
  }
  const planner::PlanReport report = planner::ComputePlan(spec);

  if (options.json) {
    v1::PlanReport proto = convert::ReportToProto(report);
    if (report.InputInvalid()) {
      // The findings only: figures built on an invalid input would read as answers.
      v1::PlanReport bare;
      bare.set_name(proto.name());
      *bare.mutable_findings() = proto.findings();
      proto = std::move(bare);
    }
    if (fleet && !report.InputInvalid()) *proto.mutable_deadline_fleet() = convert::DeadlineFleetToProto(*fleet);
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    print.always_print_primitive_fields = true;
    print.preserve_proto_field_names = true;
    std::string json;
    const auto st = google::protobuf::util::MessageToJsonString(proto, &json, print);
    if (!st.ok()) {
      err << "flightplan plan: cannot print JSON: " << st.message() << "\n";
      return kPlanUnreadable;
    }
    out << json;
  } else {
    out << FormatPlanReport(spec, report, fleet ? &*fleet : nullptr);
  }
  return PlanExitCode(report, fleet ? &*fleet : nullptr);
}

int PlanExitCode(const planner::PlanReport& report, const planner::DeadlineFleet* fleet) {
  if (fleet == nullptr) return report.HasError() ? kPlanError : kPlanOk;
  // With --deadline the search answers the plan's own DEADLINE_MISSED; any other error
  // makes the plan (and so the search) unsound.
  for (const planner::Finding& f : report.findings) {
    if (f.severity == planner::Severity::kError && f.code != "DEADLINE_MISSED") return kPlanError;
  }
  return fleet->met ? kPlanOk : kPlanNoFleet;
}

}  // namespace flightplan::cli
