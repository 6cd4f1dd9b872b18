#pragma once

#include <google/protobuf/timestamp.pb.h>

namespace flightplan::exporters {

// A protobuf Timestamp as seconds since the epoch (what Prometheus and the page's charts take).
inline double Seconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + t.nanos() / 1e9;
}

}  // namespace flightplan::exporters
