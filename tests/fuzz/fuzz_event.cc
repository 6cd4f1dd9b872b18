// Fuzz target: one JSON Lines event through the decoder and the validation, and the fast
// JSON path held to protobuf's parser: whatever the fast path accepts, protobuf accepts with
// the same message; whatever protobuf accepts prints and parses back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "convert/event_convert.h"
#include "convert/event_json.h"
#include "flightplan/v1/event.pb.h"
#include "forecast/accounting.h"
#include "google/protobuf/util/json_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  flightplan::v1::Event proto;
  const bool general = google::protobuf::util::JsonStringToMessage(line, &proto).ok();
  flightplan::v1::Event fast;
  if (flightplan::convert::ParseEventJsonFast(line, fast)) {
    if (!general || fast.SerializeAsString() != proto.SerializeAsString()) std::abort();
  }
  if (!general) return 0;
  // protobuf accepts an offset that moves a time out of its printable range (0001..9999);
  // such an event is refused later (ValidateEvent) and cannot be printed by protobuf either.
  const bool printable = proto.time().seconds() >= -62135596800 && proto.time().seconds() <= 253402300799 &&
                         proto.time().nanos() >= 0 && proto.time().nanos() <= 999999999;
  if (!printable) return 0;
  std::string printed;
  flightplan::convert::AppendEventJson(proto, printed);
  flightplan::v1::Event back;
  if (!flightplan::convert::ParseEventJson(printed, back).ok() ||
      back.SerializeAsString() != proto.SerializeAsString()) {
    std::abort();
  }
  absl::StatusOr<flightplan::forecast::Event> e = flightplan::convert::EventFromProto(proto);
  if (!e.ok()) return 0;
  (void)flightplan::forecast::ValidateEvent(*e);
  (void)flightplan::forecast::EventKey(*e, 1);
  return 0;
}
