#include "forecast/state_bytes.h"

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

size_t StateBytes(const RunState& s, bool count_node_book) {
  size_t bytes = sizeof(RunState);
  bytes += HeapBytes(s.attempt_starts) + HeapBytes(s.interruptions) + HeapBytes(s.interruption_marks);
  bytes += HeapBytes(s.incident_losses) + HeapBytes(s.budget_samples) + HeapBytes(s.evidence);
  bytes += HeapBytes(s.checkpoints) + HeapBytes(s.step_marks) + HeapBytes(s.recent) + HeapBytes(s.wall_tokens);
  bytes += HeapBytes(s.flags) + HeapBytes(s.rank_marks) + HeapBytes(s.span_kind) + HeapBytes(s.custom_by_kind);
  bytes += HeapBytes(s.exclusions);
  for (const std::string& f : s.flags) bytes += HeapBytes(f);
  for (const InterruptionCount& c : s.interruptions) bytes += HeapBytes(c.cause);
  for (const RankMark& m : s.rank_marks) bytes += HeapBytes(m.node);
  for (const SpanSeconds& k : s.custom_by_kind) bytes += HeapBytes(k.kind);
  for (const InterruptionMark& m : s.interruption_marks) bytes += HeapBytes(m.cause);
  for (const ExclusionWindow& w : s.exclusions) bytes += HeapBytes(w.reason);
  const SlowdownState& d = s.slowdown;
  bytes += HeapBytes(d.recent) + HeapBytes(d.reference) + HeapBytes(d.pending) + HeapBytes(d.back_pending) +
           HeapBytes(d.stretches);
  for (const SlowStretch& st : d.stretches) bytes += HeapBytes(st.node);
  if (count_node_book && s.node_book) bytes += NodeBookBytes(*s.node_book);
  return bytes;
}

}  // namespace flightplan::forecast
