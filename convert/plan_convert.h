// Conversions between flightplan.v1 plan messages and forecast/'s plain types.
//
// Pure and thread-safe. Presence is kept: a proto3 `optional` field that is unset becomes
// an empty std::optional, so the engine applies its documented default.
#ifndef FLIGHTPLAN_CONVERT_PLAN_CONVERT_H_
#define FLIGHTPLAN_CONVERT_PLAN_CONVERT_H_

#include "absl/time/time.h"
#include "flightplan/v1/plan.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "planner/plan.h"

namespace flightplan::convert {

[[nodiscard]] planner::PlanSpec PlanFromProto(const v1::Plan& plan);
[[nodiscard]] v1::PlanReport ReportToProto(const planner::PlanReport& report);
[[nodiscard]] v1::ScheduleReport ScheduleToProto(const planner::PlanReport::Schedule& schedule);
[[nodiscard]] v1::DeadlineFleet DeadlineFleetToProto(const planner::DeadlineFleet& fleet);

[[nodiscard]] absl::Time TimeFromProto(const google::protobuf::Timestamp& t);
[[nodiscard]] google::protobuf::Timestamp TimeToProto(absl::Time t);

}  // namespace flightplan::convert

#endif  // FLIGHTPLAN_CONVERT_PLAN_CONVERT_H_
