// DaemonMetrics: flightpland's own ingest and storage health, for Prometheus.
//
// Hot-path counters keep their references from Family::Add() (no lookup per event).
// Thread-safe: prometheus-cpp metrics are atomic.
#ifndef FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_
#define FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_

#include <array>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace flightplan::exporters {

class DaemonMetrics {
 public:
  // Registers the families in `registry` (names: flightplan_ingest_*, flightplan_storage_*).
  explicit DaemonMetrics(prometheus::Registry& registry);

  // A request's outcome: events stored, events ignored as duplicates, and, when refused,
  // its events counted as rejected under the status code.
  void CountBatch(uint32_t accepted, uint32_t duplicates, uint32_t rejected, absl::StatusCode code);
  void SetQueueDepth(size_t depth);
  void ObserveCommit(double seconds);
  void SetDatabaseBytes(double bytes);
  void SetRuns(size_t runs);

 private:
  prometheus::Counter& accepted_;
  prometheus::Counter& duplicates_;
  prometheus::Family<prometheus::Counter>& rejected_;
  std::array<prometheus::Counter*, 17> rejected_by_code_{};
  prometheus::Counter& batches_;
  prometheus::Gauge& queue_depth_;
  prometheus::Histogram& commit_seconds_;
  prometheus::Gauge& database_bytes_;
  prometheus::Gauge& runs_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_DAEMON_METRICS_H_
