#include "forecast/state_bytes.h"

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "forecast/nodes.h"

namespace flightplan::forecast {
namespace {

// A vector's heap block; a deque's elements and, for a non-empty one, its map and a spare
// block (libstdc++ allocates 512-byte blocks); a string's heap block past the small buffer.
template <typename T>
size_t HeapBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}
template <typename T>
size_t HeapBytes(const std::deque<T>& d) {
  return d.empty() ? 0 : d.size() * sizeof(T) + 512 + 64;
}
size_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

size_t NodeBookBytes(const NodeBook& book) {
  size_t bytes = sizeof(NodeBook) + HeapBytes(book.held);
  for (const std::string& h : book.held) bytes += HeapBytes(h);
  // A map node: the pair, three pointers and a colour.
  for (const auto& [name, use] : book.nodes) bytes += sizeof(name) + sizeof(use) + 32 + HeapBytes(name);
  return bytes;
}

}  // namespace

std::vector<StatePart> StateBytesByPart(const RunState& s, bool count_node_book) {
  size_t strings = HeapBytes(s.span_kind);
  for (const std::string& f : s.flags) strings += HeapBytes(f);
  for (const InterruptionCount& c : s.interruptions) strings += HeapBytes(c.cause);
  for (const RankMark& m : s.rank_marks) strings += HeapBytes(m.node);
  for (const SpanSeconds& k : s.custom_by_kind) strings += HeapBytes(k.kind);
  for (const InterruptionMark& m : s.interruption_marks) strings += HeapBytes(m.cause);
  for (const ExclusionWindow& w : s.exclusions) strings += HeapBytes(w.reason);
  for (const SlowStretch& st : s.slowdown.stretches) strings += HeapBytes(st.node);
  const SlowdownState& d = s.slowdown;
  std::vector<StatePart> parts = {
      {"fixed", sizeof(RunState)},
      {"evidence", HeapBytes(s.evidence)},
      {"budget samples", HeapBytes(s.budget_samples)},
      {"checkpoint marks", HeapBytes(s.checkpoints)},
      {"step marks", HeapBytes(s.step_marks)},
      {"recent throughput", HeapBytes(s.recent) + HeapBytes(s.wall_tokens)},
      {"pace bins", HeapBytes(d.recent) + HeapBytes(d.reference) + HeapBytes(d.pending) + HeapBytes(d.back_pending) +
                        HeapBytes(d.stretches)},
      {"interruptions", HeapBytes(s.interruptions) + HeapBytes(s.interruption_marks) + HeapBytes(s.incident_losses) +
                            HeapBytes(s.attempt_starts)},
      {"rank marks, spans, exclusions, flags",
       HeapBytes(s.rank_marks) + HeapBytes(s.custom_by_kind) + HeapBytes(s.exclusions) + HeapBytes(s.flags) + strings},
      {"node book", count_node_book && s.node_book ? NodeBookBytes(*s.node_book) : 0},
  };
  std::sort(parts.begin(), parts.end(), [](const StatePart& a, const StatePart& b) { return a.bytes > b.bytes; });
  return parts;
}

size_t StateBytes(const RunState& s, bool count_node_book) {
  size_t bytes = 0;
  for (const StatePart& p : StateBytesByPart(s, count_node_book)) bytes += p.bytes;
  return bytes;
}

}  // namespace flightplan::forecast
