// flightpland's HTTP side, on its metrics address: /metrics (the Prometheus text format of
// the registered collectables) and the runs' pages, /runs/ and /runs/NAME (read-only, behind
// the read token when one is set: "Authorization: Bearer T", or HTTP Basic with T as the
// password, which browsers ask for). civetweb (Debian's libcivetweb), as prometheus-cpp's
// Exposer uses, without the Exposer: it serves nothing but /metrics.
#ifndef FLIGHTPLAN_DAEMON_HTTP_SERVER_H_
#define FLIGHTPLAN_DAEMON_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/auth.h"
#include "prometheus/collectable.h"

class CivetServer;

namespace flightplan::daemon {

struct HttpPages {
  // The runs list, and one run's page (nullopt: no such run); HTML.
  std::function<std::string()> list;
  std::function<std::optional<std::string>(const std::string& run)> run;
};

class HttpServer {
 public:
  // Listens on `address` ("127.0.0.1:9464"; port 0 picks a free one). UNAVAILABLE when it
  // cannot.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& address, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
      HttpPages pages, Auth auth);
  ~HttpServer();

  int port() const { return port_; }

 private:
  HttpServer() = default;
  class MetricsHandler;
  class RunsHandler;
  std::unique_ptr<MetricsHandler> metrics_;
  std::unique_ptr<RunsHandler> runs_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_HTTP_SERVER_H_
