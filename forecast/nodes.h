// Nodes and ranks (docs/contract.md §5, "Nodes"): which machines a run held, which of them
// its failures and slow stretches name, and, across every run one daemon tracks, which node
// stands out from the fleet it belongs to.
//
// Two parts:
//   - NodeBook, inside a run's state: per node the attempts that held it, the wall seconds
//     they held it, the unplanned interruptions that named it and the slow stretches whose
//     slowest rank sat on it. The fold keeps it (accounting.cc); it changes only at
//     launches, stops and the ends of slow stretches, so a state shares it between copies.
//   - BuildLedger, over the books of every run: per node the totals and a verdict. A node is
//     a suspect when
//       * its failures are improbable under the fleet's own rate per node-hour: a one-sided
//         Poisson test, P(X >= k) for X ~ Poisson(rate x its node-hours), below
//         kSuspectAlpha / (nodes tested) (Bonferroni: on a fleet where no node stands out,
//         the chance that any node is called is at most kSuspectAlpha per reading); the
//         fleet's rate counts the node's own failures, which makes the test conservative
//         where one node dominates; and only from kSuspectMinFailures failures, since one or
//         two failures on a node that has barely run say little whatever the odds; or
//       * two or more slow stretches name it.
//     Each verdict carries its evidence in words.
//
// Pure: no I/O, no clock.
#ifndef FLIGHTPLAN_FORECAST_NODES_H_
#define FLIGHTPLAN_FORECAST_NODES_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace flightplan::forecast {

// A node's record within one run.
struct NodeUse {
  uint32_t attempts = 0;        // launches that held it
  double held_seconds = 0;      // wall seconds those launches held it, up to their ends
  uint32_t failures = 0;        // unplanned interruptions that named it
  uint32_t slow_stretches = 0;  // ended slow stretches whose slowest rank sat on it
};

// Distinct nodes a run's book keeps; past it, new names are not booked (the fold flags it).
inline constexpr size_t kMaxBookNodes = 1u << 17;

struct NodeBook {
  std::map<std::string, NodeUse> nodes;
  // The current launch's nodes in rank order while it holds them (empty when down, or when
  // its job_started named none), its GPUs (0: the plan's fleet) and its start.
  std::vector<std::string> held;
  uint32_t held_gpus = 0;
  absl::Time held_since = absl::InfinitePast();
  bool overflow = false;  // kMaxBookNodes reached
};

// A launch starts holding `nodes` (rank order) with `gpus` GPUs at `at`; any earlier launch's
// hold ends there.
void HoldNodes(NodeBook& book, const std::vector<std::string>& nodes, uint32_t gpus, absl::Time at);
// The current launch's hold ends at `at` (a stop, a finish, or a relaunch without a stop).
void ReleaseNodes(NodeBook& book, absl::Time at);
// An unplanned interruption named `nodes`.
void BlameFailure(NodeBook& book, const std::vector<std::string>& nodes);
// An ended slow stretch named `node`.
void BlameSlowStretch(NodeBook& book, const std::string& node);

// The node that global rank `rank` of the current launch sits on: ranks fill nodes in order
// (torchrun's and srun's block placement), the launch's GPUs / its nodes per node, else the
// plan's `gpus_per_node`. "" when the launch named no nodes, its GPUs are not a multiple of
// its nodes, or the rank is past them.
[[nodiscard]] std::string NodeOfRank(const NodeBook& book, int32_t rank, uint32_t gpus_per_node);

// Step reports that named a slowest rank, by node: consecutive reports naming one node are
// one mark. The newest kMaxRankMarks are kept.
struct RankMark {
  absl::Time first, last;
  std::string node;
  uint32_t reports = 0;
};
inline constexpr size_t kMaxRankMarks = 1024;
void AddRankMark(std::deque<RankMark>& marks, absl::Time at, const std::string& node);

// The node named slowest in most reports within [from, to], when it is named in at least
// kStretchMinReports of them and in at least kStretchMinShare of the reports that named
// a node; else "".
inline constexpr uint32_t kStretchMinReports = 3;
inline constexpr double kStretchMinShare = 0.5;
[[nodiscard]] std::string SlowestNodeIn(const std::deque<RankMark>& marks, absl::Time from, absl::Time to);

// --- The ledger across runs.

// One run's part: its book, and the node its active slow stretch names ("" when none), at
// `now` (the run's clock: a held launch counts up to it).
struct RunNodes {
  std::string run;
  std::shared_ptr<const NodeBook> book;
  std::string active_stretch_node;
  absl::Time now = absl::InfinitePast();
};

// The one-sided test's family-wise level, and the failures from which it may call a node.
inline constexpr double kSuspectAlpha = 0.01;
inline constexpr uint32_t kSuspectMinFailures = 3;
inline constexpr uint32_t kSuspectMinSlowStretches = 2;

struct NodeRecord {
  std::string node;
  uint32_t attempts = 0;
  double node_hours = 0;
  uint32_t failures = 0;
  uint32_t slow_stretches = 0;
  std::vector<std::string> runs;  // runs that held or named it, sorted
  // Its failures' expectation under the fleet's rate, and P(X >= failures) for it.
  double expected_failures = 0;
  double p_value = 1;
  bool suspect = false;
  // "failures", "slow" or "failures,slow" for a suspect; "" otherwise.
  std::string reason;
  std::string evidence;  // in words, for suspects
};

struct NodeLedger {
  std::vector<NodeRecord> nodes;  // suspects first (smallest p first), then by name
  double node_hours = 0;
  uint32_t failures = 0;
  double fleet_rate_per_hour = 0;  // failures per node-hour (0 before any)
  uint32_t tested = 0;             // nodes with node-hours (the correction's count)
  double threshold = 0;            // kSuspectAlpha / tested
  uint32_t runs_with_nodes = 0;    // runs whose events named nodes
  [[nodiscard]] std::vector<std::string> Suspects() const;
};

[[nodiscard]] NodeLedger BuildLedger(const std::vector<RunNodes>& runs);

// P(X >= k) for X ~ Poisson(mean).
[[nodiscard]] double PoissonUpperTail(uint32_t k, double mean);

// The failures in `run`'s book on `nodes` beyond what the fleet's rate expects of the hours
// it held them (never negative): what excluding them removes from the run's failure count.
[[nodiscard]] double ExcessFailures(const NodeBook& book, const std::vector<std::string>& nodes,
                                    double fleet_rate_per_hour, absl::Time now);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_NODES_H_
