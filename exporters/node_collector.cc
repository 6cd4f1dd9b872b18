#include "exporters/node_collector.h"

namespace flightplan::exporters {

std::vector<prometheus::MetricFamily> NodeCollector::Collect() const {
  const NodeSeries series = source_();
  std::vector<prometheus::MetricFamily> out;
  prometheus::MetricFamily suspect{
      "flightplan_node_suspect",
      "1 for each node the daemon's ledger calls a suspect, by reason: failures (improbable under the fleet's "
      "rate per node-hour) or slow (the slowest rank's node in two or more slow stretches). Suspects only.",
      prometheus::MetricType::Gauge,
      {}};
  for (const auto& [node, reason] : series.suspects) {
    prometheus::ClientMetric m;
    m.label = {{"node", node}, {"reason", reason}};
    m.gauge.value = 1;
    suspect.metric.push_back(std::move(m));
  }
  out.push_back(std::move(suspect));
  if (!series.held.empty()) {
    prometheus::MetricFamily info{"flightplan_run_node_info",
                                  "1 for each node a run's current launch holds (flightpland --node-info-metrics).",
                                  prometheus::MetricType::Gauge,
                                  {}};
    for (const auto& [run, node] : series.held) {
      prometheus::ClientMetric m;
      m.label = {{"run", run}, {"node", node}};
      m.gauge.value = 1;
      info.metric.push_back(std::move(m));
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace flightplan::exporters
