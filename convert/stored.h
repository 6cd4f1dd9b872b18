// How the core's types are kept in the store: each as a flightplan.v1 message, serialized
// deterministically (event.proto's Event, snapshot.proto's RunStateSnapshot, plan.proto's
// Plan). The tracker's core reads and writes the store's bytes through these alone, so it
// names no protobuf type; the gRPC shell makes the bytes a request brings (daemon/wire.h).
//
// Pure and thread-safe. A read that fails is DATA_LOSS naming what was unreadable.
#ifndef FLIGHTPLAN_CONVERT_STORED_H_
#define FLIGHTPLAN_CONVERT_STORED_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "forecast/accounting.h"
#include "forecast/event.h"
#include "planner/plan.h"

namespace flightplan::convert {

// A stored event; `what` names it in the error ("stored event 17").
[[nodiscard]] absl::StatusOr<forecast::Event> DecodeStoredEvent(absl::string_view bytes, absl::string_view what);

[[nodiscard]] std::string EncodeStoredState(const forecast::RunState& state);
[[nodiscard]] absl::StatusOr<forecast::RunState> DecodeStoredState(absl::string_view bytes, absl::string_view what);

[[nodiscard]] absl::StatusOr<planner::PlanSpec> DecodeStoredPlan(absl::string_view bytes, absl::string_view what);

}  // namespace flightplan::convert

#endif  // FLIGHTPLAN_CONVERT_STORED_H_
