// RunCollector: every run's metrics, computed at scrape time from run statuses
// (DESIGN.md §7): progress against the plan's line, wall time by category, interruptions,
// finish forecasts, the failure budget and its burn rates, reliability.
//
// Thread-safe if `source` is: Collect() may run on any exposer thread, and only reads.
#ifndef FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_
#define FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_

#include <functional>
#include <vector>

#include "flightplan/v1/status.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace flightplan::exporters {

class RunCollector final : public prometheus::Collectable {
 public:
  // `source` returns the current status of every run (cheap: no simulation).
  explicit RunCollector(std::function<std::vector<v1::RunStatus>()> source)
      : source_(std::move(source)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<std::vector<v1::RunStatus>()> source_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_
