#include "exporters/node_collector.h"

namespace flightplan::exporters {
namespace {

// A gauge family with the value 1 for each pair of label values.
prometheus::MetricFamily Ones(std::string name, std::string help, const std::string& first, const std::string& second,
                              const std::vector<std::pair<std::string, std::string>>& values) {
  prometheus::MetricFamily f{std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
  for (const auto& [a, b] : values) {
    prometheus::ClientMetric m;
    m.label = {{first, a}, {second, b}};
    m.gauge.value = 1;
    f.metric.push_back(std::move(m));
  }
  return f;
}

}  // namespace

std::vector<prometheus::MetricFamily> NodeCollector::Collect() const {
  const NodeSeries series = source_();
  std::vector<prometheus::MetricFamily> out;
  out.push_back(Ones("flightplan_node_suspect",
                     "1 for each node the daemon's ledger calls a suspect, by reason: failures (improbable under the "
                     "fleet's rate per node-hour) or slow (the slowest rank's node in two or more slow stretches). "
                     "Suspects only.",
                     "node", "reason", series.suspects));
  if (!series.held.empty()) {
    out.push_back(Ones("flightplan_run_node_info",
                       "1 for each node a run's current launch holds (flightpland --node-info-metrics).", "run", "node",
                       series.held));
  }
  return out;
}

}  // namespace flightplan::exporters
