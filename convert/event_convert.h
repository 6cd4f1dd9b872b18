// Conversions between flightplan.v1 event/status messages and forecast/'s accounting
// types. Pure and thread-safe.
#ifndef FLIGHTPLAN_CONVERT_EVENT_CONVERT_H_
#define FLIGHTPLAN_CONVERT_EVENT_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "flightplan/v1/event.pb.h"
#include "flightplan/v1/snapshot.pb.h"
#include "flightplan/v1/status.pb.h"
#include "forecast/accounting.h"
#include "forecast/event.h"
#include "forecast/forecaster.h"
#include "google/protobuf/message_lite.h"

namespace flightplan::convert {

// The message serialized deterministically: the same message, the same bytes (what the
// store keeps, and compares to tell an unchanged plan).
[[nodiscard]] std::string Deterministic(const google::protobuf::MessageLite& m);

// INVALID_ARGUMENT naming the field when the event has no run, no time or no kind.
[[nodiscard]] absl::StatusOr<forecast::Event> EventFromProto(const v1::Event& event);
[[nodiscard]] v1::Event EventToProto(const forecast::Event& event, const std::string& run);

[[nodiscard]] v1::RunStateSnapshot StateToProto(const forecast::RunState& state);
[[nodiscard]] forecast::RunState StateFromProto(const v1::RunStateSnapshot& snapshot);

// The ten categories, their seconds by span kind and `elapsed` (replacing what `out` held).
void TimeSecondsToProto(const forecast::TimeSeconds& seconds, const std::vector<forecast::SpanSeconds>& custom_by_kind,
                        double elapsed_seconds, v1::TimeSeconds* out);

// The status fields that come from accounting (progress, time, interruptions, throughput).
// `target_tokens` and `plan_tokens_per_second` come from the run's plan.
[[nodiscard]] v1::RunStatus StatusToProto(const std::string& run, const forecast::RunSnapshot& snapshot,
                                          int64_t target_tokens, double plan_tokens_per_second);

// The forecast, failure budget and reliability sections. Finish quantiles are filled only
// once a simulation exists (`forecast_events` > 0) or the run has finished.
// status.cost from a run's cost and the prices it used.
void CostToProto(const forecast::RunCost& cost, const forecast::ForecastPrior::Cost& prices, v1::RunStatus& status);

void ForecastToProto(const forecast::Forecast& forecast, uint64_t forecast_events, v1::RunStatus& status);

}  // namespace flightplan::convert

#endif  // FLIGHTPLAN_CONVERT_EVENT_CONVERT_H_
