// NodeCollector: the node ledger's series, kept small (docs/contract.md §7, "Nodes"): one
// series per suspect and reason, never one per node of the fleet; and, only when asked
// for, one info series per run and node it holds, for joining the DCGM exporter's
// per-GPU series on their Hostname label.
//
// Thread-safe if `source` is: Collect() may run on any exposer thread, and only reads.
#ifndef FLIGHTPLAN_EXPORTERS_NODE_COLLECTOR_H_
#define FLIGHTPLAN_EXPORTERS_NODE_COLLECTOR_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace flightplan::exporters {

struct NodeSeries {
  // Each suspect with each of its reasons ("failures", "slow").
  std::vector<std::pair<std::string, std::string>> suspects;  // node, reason
  // Each run and a node its current launch holds (empty unless node info is on).
  std::vector<std::pair<std::string, std::string>> held;  // run, node
};

class NodeCollector final : public prometheus::Collectable {
 public:
  explicit NodeCollector(std::function<NodeSeries()> source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<NodeSeries()> source_;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_NODE_COLLECTOR_H_
