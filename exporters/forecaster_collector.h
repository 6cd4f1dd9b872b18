// ForecasterCollector: the forecaster thread's own figures, read at scrape time: how many
// simulations it ran and the CPU time they took (live forecasts and backfilled history
// points apart), and the backfill states waiting for it against their budget
// (flightpland --backfill-max-bytes). docs/metrics.md has the series.
//
// Thread-safe if `source` is: Collect() may run on any exposer thread, and only reads.
#ifndef FLIGHTPLAN_EXPORTERS_FORECASTER_COLLECTOR_H_
#define FLIGHTPLAN_EXPORTERS_FORECASTER_COLLECTOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace flightplan::exporters {

struct ForecasterFigures {
  uint64_t simulations = 0, backfill_simulations = 0;
  double cpu_seconds = 0, backfill_cpu_seconds = 0;
  size_t backfill_states = 0, backfill_bytes = 0, backfill_budget_bytes = 0;  // budget 0: none
};

class ForecasterCollector final : public prometheus::Collectable {
 public:
  explicit ForecasterCollector(std::function<ForecasterFigures()> source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<ForecasterFigures()> source_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_FORECASTER_COLLECTOR_H_
