#include "convert/stored.h"

#include "absl/strings/str_cat.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "flightplan/v1/event.pb.h"
#include "flightplan/v1/plan.pb.h"
#include "flightplan/v1/snapshot.pb.h"

namespace flightplan::convert {

absl::StatusOr<forecast::Event> DecodeStoredEvent(absl::string_view bytes, absl::string_view what) {
  v1::Event proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(what, " is unreadable"));
  }
  absl::StatusOr<forecast::Event> event = EventFromProto(proto);
  if (!event.ok()) return absl::DataLossError(absl::StrCat(what, ": ", event.status().message()));
  return event;
}

std::string EncodeStoredState(const forecast::RunState& state) { return Deterministic(StateToProto(state)); }

absl::StatusOr<forecast::RunState> DecodeStoredState(absl::string_view bytes, absl::string_view what) {
  v1::RunStateSnapshot snap;
  if (!snap.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(what, " is unreadable"));
  }
  return StateFromProto(snap);
}

absl::StatusOr<planner::PlanSpec> DecodeStoredPlan(absl::string_view bytes, absl::string_view what) {
  v1::Plan plan;
  if (!plan.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(what, " is unreadable"));
  }
  return PlanFromProto(plan);
}

}  // namespace flightplan::convert
