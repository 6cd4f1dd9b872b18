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
  // The events of a batch refused with a status its client resolves by resending (the
  // queue was full, the batch was over the limit and is split, a stream resends from its
  // first refusal, the storage was away): counted apart from rejected events, which are
  // refused for good.
  void CountRetried(uint32_t events, absl::StatusCode code);
  // A run folded again from its log (a late event, a retraction).
  void CountRefold();
  void SetQueueDepth(size_t depth);
  void ObserveCommit(double seconds);
  void SetDatabaseBytes(double bytes);
  void SetRuns(size_t runs);

 private:
  prometheus::Counter& accepted_;
  prometheus::Counter& duplicates_;
  prometheus::Family<prometheus::Counter>& rejected_;
  std::array<prometheus::Counter*, 17> rejected_by_code_{};
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
