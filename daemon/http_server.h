// flightpland's HTTP side, on its metrics address: /metrics (the Prometheus text format of
// the registered collectables) and the runs' pages, /runs/ and /runs/NAME (read-only, behind
// the read token when one is set: "Authorization: Bearer T", or HTTP Basic with T as the
// password, which browsers ask for).
//
// Threads: one event-loop thread owns every socket (accept, non-blocking reads and writes,
// the deadlines); `workers` threads only turn a parsed request into a response, and never
// touch a socket. So a client that connects and sends nothing, sends half a request, or
// never reads its answer costs a file descriptor until its deadline, never a worker: a
// scrape is answered however many such clients there are (tests/http_server_test.cc holds
// 256). HTTP/1.0 and 1.1, GET and HEAD, one request per connection ("Connection: close").
#ifndef FLIGHTPLAN_DAEMON_HTTP_SERVER_H_
#define FLIGHTPLAN_DAEMON_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/auth.h"
#include "prometheus/collectable.h"

namespace flightplan::daemon {

struct HttpPages {
  // The runs list, and one run's page (nullopt: no such run); HTML.
  std::function<std::string()> list;
  std::function<std::optional<std::string>(const std::string& run)> run;
};

struct HttpServerOptions {
  // Threads that make responses: a page may wait up to 2 s for its history.
  int workers = 4;
  // A connection must send its whole request head within this (else 408 and closed, or just
  // closed when it sent nothing), and take its whole answer within `write_timeout`.
  absl::Duration request_timeout = absl::Seconds(10);
  absl::Duration write_timeout = absl::Seconds(30);
  // Open connections at most; past it the oldest one still waiting for its request is
  // closed to make room (the file descriptors are the limit, not the threads).
  int max_connections = 1024;
};

class HttpServer {
 public:
  // Listens on `address` ("127.0.0.1:9464", "[::1]:9464", or a port alone for every
  // interface; port 0 picks a free one). UNAVAILABLE, naming the address, when it cannot.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& address, std::vector<std::weak_ptr<prometheus::Collectable>> collectables, HttpPages pages,
      Auth auth, HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_HTTP_SERVER_H_
