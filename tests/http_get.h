// A plain-socket HTTP/1.0 GET against 127.0.0.1, for tests and benchmarks.
#ifndef FLIGHTPLAN_TESTS_HTTP_GET_H_
#define FLIGHTPLAN_TESTS_HTTP_GET_H_

#include <string>

namespace flightplan::testing {

// The whole response (status line, headers, body); empty when nothing answers. `headers`:
// extra request header lines, each ending in \r\n.
std::string HttpGet(int port, const std::string& path, const std::string& headers = "");

// A TCP connection to 127.0.0.1:`port` (its descriptor), or -1.
int ConnectLoopback(int port);

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_HTTP_GET_H_
