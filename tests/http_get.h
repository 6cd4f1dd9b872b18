// A plain-socket HTTP/1.0 GET against 127.0.0.1, for tests and benchmarks.
#ifndef FLIGHTPLAN_TESTS_HTTP_GET_H_
#define FLIGHTPLAN_TESTS_HTTP_GET_H_

#include <string>

namespace flightplan::testing {

// The whole response (status line, headers, body); empty when nothing answers.
std::string HttpGet(int port, const std::string& path);

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_HTTP_GET_H_
