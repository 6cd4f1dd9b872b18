// Fuzz target: one JSON Lines event through the decoder and the validation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "flightplan/v1/event.pb.h"
#include "forecast/accounting.h"
#include "google/protobuf/util/json_util.h"
#include "proto/event_convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  flightplan::v1::Event proto;
  if (!google::protobuf::util::JsonStringToMessage(line, &proto).ok()) return 0;
  absl::StatusOr<flightplan::forecast::Event> e = flightplan::EventFromProto(proto);
  if (!e.ok()) return 0;
  (void)flightplan::forecast::ValidateEvent(*e);
  (void)flightplan::forecast::EventKey(*e, 1);
  return 0;
}
