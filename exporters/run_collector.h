// RunCollector: every run's metrics, computed at scrape time from run statuses
// (docs/contract.md §7): progress against the plan's line, wall time by category, interruptions,
// finish forecasts, the failure budget and its burn rates, reliability.
//
// Thread-safe if `source` is: Collect() may run on any exposer thread, and only reads.
#ifndef FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_
#define FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exporters/text_format.h"
#include "flightplan/v1/status.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace flightplan::exporters {

class RunCollector final : public prometheus::Collectable, public TextCollectable {
 public:
  // `source` returns the current status of every run (cheap: no simulation). Per run, the
  // first `max_causes` distinct interruption causes (in the order the run first saw them,
  // so a series never moves) get their own `cause` label; later ones are summed as
  // "other".
  explicit RunCollector(std::function<std::vector<v1::RunStatus>()> source, uint32_t max_causes = 16)
      : source_(std::move(source)), max_causes_(max_causes) {}

  std::vector<prometheus::MetricFamily> Collect() const override;
  // The same series as Collect(), as TextFormat(Collect()) would write them, without the
  // families in between (what /metrics calls).
  void AppendText(std::string& out) const override;

 private:
  std::function<std::vector<v1::RunStatus>()> source_;
  uint32_t max_causes_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_RUN_COLLECTOR_H_
