#include "forecast/nodes.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace flightplan::forecast {
namespace {

NodeUse* Use(NodeBook& book, const std::string& node) {
  auto it = book.nodes.find(node);
  if (it != book.nodes.end()) return &it->second;
  if (book.nodes.size() >= kMaxBookNodes) {
    book.overflow = true;
    return nullptr;
  }
  return &book.nodes[node];
}

// "1 in 3.2e8" style odds for a probability.
std::string Odds(double p) {
  if (p <= 0) return "less than 1 in 1e300";
  const double one_in = 1.0 / p;
  if (one_in < 10000) return absl::StrFormat("1 in %.0f", one_in);
  return absl::StrFormat("1 in %.1e", one_in);
}

// Seconds the current launch has held its nodes by `now` (0 when none is held).
double OpenSeconds(const NodeBook& book, absl::Time now) {
  if (book.held.empty() || book.held_since == absl::InfinitePast()) return 0;
  return std::max(0.0, absl::ToDoubleSeconds(now - book.held_since));
}

std::string Hours(double h) { return h < 10 ? absl::StrFormat("%.1f", h) : absl::StrFormat("%.0f", h); }

}  // namespace

void HoldNodes(NodeBook& book, const std::vector<std::string>& nodes, uint32_t gpus, absl::Time at) {
  ReleaseNodes(book, at);
  book.held_gpus = gpus;
  book.held_since = at;
  book.held.clear();
  std::set<std::string> seen;
  for (const std::string& n : nodes) {
    book.held.push_back(n);  // rank order, duplicates kept (a rank's position counts)
    if (!seen.insert(n).second) continue;
    if (NodeUse* u = Use(book, n)) ++u->attempts;
  }
}

void ReleaseNodes(NodeBook& book, absl::Time at) {
  if (!book.held.empty() && book.held_since != absl::InfinitePast()) {
    const double seconds = std::max(0.0, absl::ToDoubleSeconds(at - book.held_since));
    std::set<std::string> seen;
    for (const std::string& n : book.held) {
      if (!seen.insert(n).second) continue;
      if (NodeUse* u = Use(book, n)) u->held_seconds += seconds;
    }
  }
  book.held.clear();
  book.held_gpus = 0;
  book.held_since = absl::InfinitePast();
}

void BlameFailure(NodeBook& book, const std::vector<std::string>& nodes) {
  std::set<std::string> seen;
  for (const std::string& n : nodes) {
    if (!seen.insert(n).second) continue;
    if (NodeUse* u = Use(book, n)) ++u->failures;
  }
}

void BlameSlowStretch(NodeBook& book, const std::string& node) {
  if (node.empty()) return;
  if (NodeUse* u = Use(book, node)) ++u->slow_stretches;
}

std::string NodeOfRank(const NodeBook& book, int32_t rank, uint32_t gpus_per_node) {
  if (rank < 0 || book.held.empty()) return "";
  const size_t nodes = book.held.size();
  if (book.held_gpus != 0 && book.held_gpus % nodes != 0) return "";
  const size_t per_node = book.held_gpus != 0 ? book.held_gpus / nodes : gpus_per_node;
  if (per_node == 0) return "";
  const size_t index = static_cast<size_t>(rank) / per_node;
  return index < nodes ? book.held[index] : "";
}

void AddRankMark(std::deque<RankMark>& marks, absl::Time at, const std::string& node) {
  if (node.empty()) return;
  if (!marks.empty() && marks.back().node == node) {
    marks.back().last = at;
    ++marks.back().reports;
    return;
  }
  marks.push_back({at, at, node, 1});
  while (marks.size() > kMaxRankMarks) marks.pop_front();
}

std::string SlowestNodeIn(const std::deque<RankMark>& marks, absl::Time from, absl::Time to) {
  std::map<std::string, uint32_t> reports;
  uint32_t total = 0;
  for (const RankMark& m : marks) {
    if (m.last < from || m.first > to) continue;
    // A mark straddling an edge counts its reports in proportion to its span inside.
    double share = 1;
    if ((m.first < from || m.last > to) && m.last > m.first) {
      share = absl::ToDoubleSeconds(std::min(m.last, to) - std::max(m.first, from)) /
              absl::ToDoubleSeconds(m.last - m.first);
    }
    const auto n = static_cast<uint32_t>(std::lround(share * m.reports));
    reports[m.node] += n;
    total += n;
  }
  std::string best;
  uint32_t most = 0;
  for (const auto& [node, n] : reports) {
    if (n > most) {
      most = n;
      best = node;
    }
  }
  if (most < kStretchMinReports || static_cast<double>(most) < kStretchMinShare * total) return "";
  return best;
}

double PoissonUpperTail(uint32_t k, double mean) {
  if (k == 0) return 1;
  if (mean <= 0) return 0;
  if (static_cast<double>(k) <= mean) {
    // The lower tail is the small side: 1 - P(X < k).
    double term = std::exp(-mean), lower = 0;
    for (uint32_t i = 0; i < k; ++i) {
      lower += term;
      term *= mean / (i + 1);
    }
    return std::clamp(1 - lower, 0.0, 1.0);
  }
  // Terms from k on fall once past the mean: sum them in log space until negligible.
  const double log_mean = std::log(mean);
  double sum = 0;
  for (uint32_t i = k; i < k + 100000; ++i) {
    const double term = std::exp(-mean + i * log_mean - std::lgamma(i + 1.0));
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return std::min(sum, 1.0);
}

std::vector<std::string> NodeLedger::Suspects() const {
  std::vector<std::string> out;
  for (const NodeRecord& r : nodes) {
    if (r.suspect) out.push_back(r.node);
  }
  return out;
}

NodeLedger BuildLedger(const std::vector<RunNodes>& runs) {
  NodeLedger ledger;
  // One record per node, found by name; the runs of each as indices into `runs` (in order,
  // each at most once: a run's book holds a node once).
  std::vector<NodeRecord> records;
  std::vector<std::vector<uint32_t>> runs_of;
  std::unordered_map<std::string_view, size_t> index;
  for (uint32_t ri = 0; ri < runs.size(); ++ri) {
    const RunNodes& r = runs[ri];
    if (r.book == nullptr || r.book->nodes.empty()) continue;
    ++ledger.runs_with_nodes;
    const NodeBook& book = *r.book;
    const double open = OpenSeconds(book, r.now);
    for (const auto& [node, use] : book.nodes) {
      auto [it, added] = index.try_emplace(node, records.size());
      if (added) {
        records.emplace_back().node = node;
        runs_of.emplace_back();
      }
      NodeRecord& rec = records[it->second];
      rec.attempts += use.attempts;
      rec.node_hours += use.held_seconds / 3600;
      rec.failures += use.failures;
      rec.slow_stretches += use.slow_stretches + (node == r.active_stretch_node ? 1 : 0);
      runs_of[it->second].push_back(ri);
    }
    if (open > 0) {                               // the launch still holding its nodes, up to the run's now
      std::unordered_set<std::string_view> seen;  // a node listed twice holds once
      for (const std::string& n : book.held) {
        if (!seen.insert(n).second) continue;
        auto it = index.find(n);
        if (it != index.end()) records[it->second].node_hours += open / 3600;
      }
    }
  }
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return records[a].node < records[b].node; });
  std::vector<NodeRecord> by_name;
  by_name.reserve(records.size());
  for (size_t i : order) {
    NodeRecord& rec = records[i];
    for (uint32_t ri : runs_of[i]) rec.runs.push_back(runs[ri].run);
    std::sort(rec.runs.begin(), rec.runs.end());
    ledger.failures += rec.failures;
    ledger.node_hours += rec.node_hours;
    if (rec.node_hours > 0) ++ledger.tested;
    by_name.push_back(std::move(rec));
  }
  ledger.fleet_rate_per_hour = ledger.node_hours > 0 ? ledger.failures / ledger.node_hours : 0;
  ledger.threshold = ledger.tested > 0 ? kSuspectAlpha / ledger.tested : 0;
  for (NodeRecord& rec : by_name) {
    std::vector<std::string> reasons, words;
    if (rec.node_hours > 0 && rec.failures > 0) {
      rec.expected_failures = ledger.fleet_rate_per_hour * rec.node_hours;
      rec.p_value = PoissonUpperTail(rec.failures, rec.expected_failures);
      if (rec.failures >= kSuspectMinFailures && rec.p_value < ledger.threshold) {
        reasons.push_back("failures");
        words.push_back(absl::StrFormat(
            "%u failures in %s node-hours where the fleet's rate (1 per %s node-hours) expects %.2f: %s by chance, "
            "past the %s that %u nodes tested allow",
            rec.failures, Hours(rec.node_hours), Hours(1 / ledger.fleet_rate_per_hour), rec.expected_failures,
            Odds(rec.p_value), Odds(ledger.threshold), ledger.tested));
      }
    }
    if (rec.slow_stretches >= kSuspectMinSlowStretches) {
      reasons.push_back("slow");
      words.push_back(absl::StrFormat("the slowest rank's node in %u slow stretches", rec.slow_stretches));
    }
    rec.suspect = !reasons.empty();
    rec.reason = absl::StrJoin(reasons, ",");
    if (rec.suspect) {
      rec.evidence = absl::StrCat(absl::StrJoin(words, "; and "), " (runs: ", absl::StrJoin(rec.runs, ", "), ")");
    }
    ledger.nodes.push_back(std::move(rec));
  }
  std::stable_sort(ledger.nodes.begin(), ledger.nodes.end(), [](const NodeRecord& a, const NodeRecord& b) {
    if (a.suspect != b.suspect) return a.suspect;
    if (a.suspect && a.p_value != b.p_value) return a.p_value < b.p_value;
    return false;  // by name, as built
  });
  return ledger;
}

double ExcessFailures(const NodeBook& book, const std::vector<std::string>& nodes, double fleet_rate_per_hour,
                      absl::Time now) {
  const std::set<std::string> held(book.held.begin(), book.held.end());
  const double open = OpenSeconds(book, now);
  double excess = 0;
  for (const std::string& n : std::set<std::string>(nodes.begin(), nodes.end())) {
    auto it = book.nodes.find(n);
    if (it == book.nodes.end()) continue;
    const double hours = (it->second.held_seconds + (held.count(n) ? open : 0)) / 3600;
    excess += std::max(0.0, it->second.failures - fleet_rate_per_hour * hours);
  }
  return excess;
}

}  // namespace flightplan::forecast
