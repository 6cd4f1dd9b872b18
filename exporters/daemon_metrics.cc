#include "exporters/daemon_metrics.h"

#include "absl/strings/ascii.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace flightplan::exporters {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

auto& Events(prometheus::Registry& r) {
  return BuildCounter()
      .Name("flightplan_ingest_events_total")
      .Help(
          "Events received over gRPC, by outcome: accepted (committed), duplicate (already "
          "stored, ignored).")
      .Register(r);
}

}  // namespace

DaemonMetrics::DaemonMetrics(prometheus::Registry& registry)
    : accepted_(Events(registry).Add({{"result", "accepted"}})),
      duplicates_(Events(registry).Add({{"result", "duplicate"}})),
      rejected_(BuildCounter()
                    .Name("flightplan_ingest_rejected_events_total")
                    .Help("Events refused for good (their batch stored nothing), by the run the refusal "
                          "names (none for a run this daemon does not have) and gRPC status code; "
                          "refusals that clients resolve by resending are "
                          "flightplan_ingest_retried_events_total.")
                    .Register(registry)),
      retried_(BuildCounter()
                   .Name("flightplan_ingest_retried_events_total")
                   .Help("Events of batches refused with a status the client resolves by "
                         "resending (queue full, batch over the limit and split, a stream "
                         "resending from its first refusal, storage away), by gRPC status code.")
                   .Register(registry)),
      refolds_(BuildCounter()
                   .Name("flightplan_ingest_refolds_total")
                   .Help("Runs folded again from their stored log: an event that belongs "
                         "before the run's latest one (a late report), or a retraction.")
                   .Register(registry)
                   .Add({})),
      batches_(BuildCounter()
                   .Name("flightplan_ingest_batches_total")
                   .Help("Event batches processed by the writer.")
                   .Register(registry)
                   .Add({})),
      queue_depth_(BuildGauge()
                       .Name("flightplan_ingest_queue_depth")
                       .Help("Requests waiting for the writer thread; at the limit, new ones "
                             "are refused with RESOURCE_EXHAUSTED.")
                       .Register(registry)
                       .Add({})),
      commit_seconds_(BuildHistogram()
                          .Name("flightplan_storage_commit_seconds")
                          .Help("Time of one writer transaction (a group of requests), from "
                                "BEGIN to COMMIT, in seconds.")
                          .Register(registry)
                          .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                                           0.05, 0.1, 0.25, 0.5, 1, 2.5})),
      database_bytes_(BuildGauge()
                          .Name("flightplan_storage_database_bytes")
                          .Help("Size of the SQLite database (pages in use), in bytes.")
                          .Register(registry)
                          .Add({})),
      runs_(BuildGauge().Name("flightplan_runs").Help("Runs registered with this daemon.").Register(registry).Add({})) {
  // Every refusal reason present from the start (at 0), so that rates and dashboards have
  // a series before the first refusal.
  for (absl::StatusCode code : {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound,
                                absl::StatusCode::kFailedPrecondition, absl::StatusCode::kAlreadyExists}) {
    CountRejected("", 0, code);
  }
  for (absl::StatusCode code : {absl::StatusCode::kInvalidArgument, absl::StatusCode::kResourceExhausted,
                                absl::StatusCode::kAborted, absl::StatusCode::kUnavailable}) {
    retried_by_code_[static_cast<size_t>(code)] =
        &retried_.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(code))}});
  }
}

void DaemonMetrics::CountRetried(uint32_t events, absl::StatusCode code) {
  const size_t i = static_cast<size_t>(code);
  if (events == 0 || i >= retried_by_code_.size()) return;
  if (retried_by_code_[i] == nullptr) {
    retried_by_code_[i] = &retried_.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(code))}});
  }
  retried_by_code_[i]->Increment(events);
}

void DaemonMetrics::CountRefold() { refolds_.Increment(); }

void DaemonMetrics::CountBatch(uint32_t accepted, uint32_t duplicates) {
  batches_.Increment();
  if (accepted) accepted_.Increment(accepted);
  if (duplicates) duplicates_.Increment(duplicates);
}

void DaemonMetrics::CountRejected(const std::string& run, uint32_t events, absl::StatusCode code) {
  absl::MutexLock lock(&rejected_mu_);
  prometheus::Counter*& counter = rejected_by_run_[{run, code}];
  if (counter == nullptr) {
    // run="" is no run label at all: a name the daemon does not have is not a series.
    counter = &rejected_.Add({{"run", run}, {"code", absl::AsciiStrToLower(absl::StatusCodeToString(code))}});
  }
  if (events) counter->Increment(events);
}

void DaemonMetrics::SetQueueDepth(size_t depth) { queue_depth_.Set(static_cast<double>(depth)); }
void DaemonMetrics::ObserveCommit(double seconds) { commit_seconds_.Observe(seconds); }
void DaemonMetrics::SetDatabaseBytes(double bytes) { database_bytes_.Set(bytes); }
void DaemonMetrics::SetRuns(size_t runs) { runs_.Set(static_cast<double>(runs)); }

}  // namespace flightplan::exporters
