// JSON Lines events, fast: one flightplan.v1.Event per line in the proto3 JSON mapping,
// parsed and printed without protobuf's general JSON machinery (which reads ~45k events/s
// here; this reads 1M+). Used by `flightplan replay`, `backtest` and `simulate`.
//
// The fast path takes the flat schema as our own tools and protobuf print it: known field
// names (proto or lowerCamel), plain strings (printable ASCII, no escapes), integers
// (bare or quoted, as proto3 JSON allows for 64-bit ones), JSON numbers for doubles,
// true/false, and RFC 3339 times in UTC ("Z"). Anything else — an escape, a null, an
// offset time, an exponent on an integer, an unknown or repeated field, a second kind —
// goes to protobuf's parser, so every line is accepted or refused exactly as
// google::protobuf::util::JsonStringToMessage does, with its error message. A differential
// test and fuzz target hold the fast path to that.
#ifndef FLIGHTPLAN_CONVERT_EVENT_JSON_H_
#define FLIGHTPLAN_CONVERT_EVENT_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "flightplan/v1/event.pb.h"

namespace flightplan::convert {

// Parses one line into `out` (cleared first). The error is protobuf's, for the same line.
absl::Status ParseEventJson(std::string_view line, v1::Event& out);

// The fast path alone: true with `out` filled, or false when the line needs the general
// parser (which may accept it or not). Exposed for the differential tests and benchmark.
bool ParseEventJsonFast(std::string_view line, v1::Event& out);

// Appends `e` as one JSON object (no newline), with proto field names, as
// MessageToJsonString with preserve_proto_field_names prints it up to number formatting:
// default-valued fields omitted, 64-bit integers quoted, strings escaped. Parsing the result
// gives `e` back, for every time protobuf can print (0001-01-01 to 9999-12-31, nanos in
// [0, 1e9)); a time outside that prints as protobuf's printer would refuse to.
void AppendEventJson(const v1::Event& e, std::string& out);

}  // namespace flightplan::convert

#endif  // FLIGHTPLAN_CONVERT_EVENT_JSON_H_
