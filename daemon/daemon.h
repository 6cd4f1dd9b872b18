// Daemon: flightpland assembled — SQLite store, Tracker, gRPC server (with health and
// reflection) and the Prometheus endpoint — startable in-process (tests, benchmarks) as
// well as from main(). Thread-safe.
#ifndef FLIGHTPLAN_DAEMON_DAEMON_H_
#define FLIGHTPLAN_DAEMON_DAEMON_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/clock.h"
#include "daemon/tracker.h"
#include "storage/sqlite_store.h"

namespace grpc {
class Server;
}
namespace prometheus {
class Registry;
}  // namespace prometheus

namespace flightplan::exporters {
class DaemonMetrics;
class RunCollector;
class NodeCollector;
class ForecasterCollector;
}  // namespace flightplan::exporters

namespace flightplan::daemon {

class TrackerService;
class HttpServer;
class HeapKeeper;

struct DaemonOptions {
  // gRPC address; port 0 picks a free port (see grpc_port()).
  std::string listen = "127.0.0.1:50051";
  // HTTP address of /metrics and the runs' pages (/runs/); empty disables it; port 0
  // picks a free port.
  std::string metrics = "127.0.0.1:9464";
  std::string db;
  storage::Sync sync = storage::Sync::kNormal;
  // Cap on the database's size, bytes (0: none). Past it writes fail as on a full disk:
  // UNAVAILABLE, nothing acknowledged, reads go on.
  int64_t max_db_bytes = 0;
  TrackerOptions tracker;
  // Largest gRPC message accepted, bytes.
  int max_message_bytes = 16 << 20;
  // Bearer tokens: writes need write_token when set; reads need read_token when set.
  std::string write_token;
  std::string read_token;
  // PEM certificate chain and private key: gRPC over TLS when both are set.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // flightplan_run_node_info{run,node} for every node each run's launch holds (off: a series
  // per node of the fleet; see docs/metrics.md).
  bool node_info_metrics = false;
};

class Daemon {
 public:
  // Opens the database (refusing one that is not ours, is newer, or is locked), recovers
  // every run, and starts serving. `clock` may be null (wall clock); it must outlive us.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Daemon>> Start(const DaemonOptions& options,
                                                                     Clock* clock = nullptr);
  ~Daemon();

  // Health NOT_SERVING, end open watches, stop accepting (in-flight calls get `grace`),
  // drain the writer queue, close the database. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  Tracker& tracker() { return *tracker_; }

 private:
  Daemon() = default;

  WallClock wall_clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<exporters::DaemonMetrics> metrics_;
  std::shared_ptr<exporters::RunCollector> run_collector_;
  std::shared_ptr<exporters::NodeCollector> node_collector_;
  std::shared_ptr<exporters::ForecasterCollector> forecaster_collector_;
  std::unique_ptr<HttpServer> http_;  // /metrics and the runs' pages
  std::unique_ptr<Tracker> tracker_;
  std::unique_ptr<TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HeapKeeper> heap_keeper_;  // the heap's free pages back to the system
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  bool shut_down_ = false;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_DAEMON_H_
