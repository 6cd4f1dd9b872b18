// IngestMetrics: what the ingest writer reports as it works, for whoever observes it. The
// core knows only this interface; the Prometheus exporter (exporters::DaemonMetrics)
// implements it, and a test may implement its own.
#ifndef FLIGHTPLAN_DAEMON_INGEST_METRICS_H_
#define FLIGHTPLAN_DAEMON_INGEST_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace flightplan::daemon {

// Called on the writer thread; implementations must not block.
class IngestMetrics {
 public:
  virtual ~IngestMetrics() = default;
  // A request's outcome: events stored, and events ignored as duplicates.
  virtual void CountBatch(uint32_t accepted, uint32_t duplicates) = 0;
  // Events refused for good, by the run the refusal names ("" for a run this daemon does
  // not have: its name is the client's, unbounded) and the status code: bounded labels.
  virtual void CountRejected(const std::string& run, uint32_t events, absl::StatusCode code) = 0;
  // The events of a batch refused with a status its client resolves by resending (the
  // queue was full, the batch was over the limit and is split, a stream resends from its
  // first refusal, the storage was away): counted apart from rejected events, which are
  // refused for good.
  virtual void CountRetried(uint32_t events, absl::StatusCode code) = 0;
  // A run folded again from its log (a late event, a retraction).
  virtual void CountRefold() = 0;
  virtual void SetQueueDepth(size_t depth) = 0;
  virtual void ObserveCommit(double seconds) = 0;
  virtual void SetDatabaseBytes(double bytes) = 0;
  virtual void SetRuns(size_t runs) = 0;
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_INGEST_METRICS_H_
