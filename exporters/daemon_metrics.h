// DaemonMetrics: flightpland's own ingest and storage health, for Prometheus.
//
// Hot-path counters keep their references from Family::Add() (no lookup per event).
// Thread-safe: prometheus-cpp metrics are atomic.
#ifndef FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_
#define FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/ingest_metrics.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace flightplan::exporters {

// The Prometheus side of the ingest writer's metrics (daemon/ingest_metrics.h).
class DaemonMetrics final : public daemon::IngestMetrics {
 public:
  // Registers the families in `registry` (names: flightplan_ingest_*, flightplan_storage_*).
  explicit DaemonMetrics(prometheus::Registry& registry);

  void CountBatch(uint32_t accepted, uint32_t duplicates) override;
  void CountRejected(const std::string& run, uint32_t events, absl::StatusCode code) override;
  void CountRetried(uint32_t events, absl::StatusCode code) override;
  void CountRefold() override;
  void SetQueueDepth(size_t depth) override;
  void ObserveCommit(double seconds) override;
  void SetDatabaseBytes(double bytes) override;
  void SetRuns(size_t runs) override;

 private:
  prometheus::Counter& accepted_;
  prometheus::Counter& duplicates_;
  prometheus::Family<prometheus::Counter>& rejected_;
  absl::Mutex rejected_mu_;  // CountRejected runs on the writer and on gRPC threads
  std::map<std::pair<std::string, absl::StatusCode>, prometheus::Counter*> rejected_by_run_
      ABSL_GUARDED_BY(rejected_mu_);
  prometheus::Family<prometheus::Counter>& retried_;
  std::array<prometheus::Counter*, 17> retried_by_code_{};
  prometheus::Counter& refolds_;
  prometheus::Counter& batches_;
  prometheus::Gauge& queue_depth_;
  prometheus::Histogram& commit_seconds_;
  prometheus::Gauge& database_bytes_;
  prometheus::Gauge& runs_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_
