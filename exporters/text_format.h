// The Prometheus text exposition format (0.0.4) of metric families, as prometheus-cpp's
// TextSerializer writes it (the same bytes: values with 16 significant digits, "Nan",
// "+Inf"), appended to one string with std::to_chars instead of an ostream. At 1,000 runs a
// scrape is 7 MB of text, and the ostream was a third of its time (perf, issue 41).
#ifndef FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_
#define FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace flightplan::exporters {

[[nodiscard]] std::string TextFormat(const std::vector<prometheus::MetricFamily>& families);

// A series' labels without a string of their own: views of strings that outlive the call
// that writes them (at most three: a run's series carry `run` and at most two more).
struct LabelView {
  std::string_view name, value;
};
class Labels {
 public:
  Labels(std::initializer_list<LabelView> labels) {  // NOLINT: written as {run, {"kind", k}}
    for (const LabelView& l : labels) {
      if (size_ < at_.size()) at_[size_++] = l;
    }
  }
  const LabelView* begin() const { return at_.data(); }
  const LabelView* end() const { return at_.data() + size_; }

 private:
  std::array<LabelView, 3> at_{};
  size_t size_ = 0;
};

// The text TextFormat writes for a family's head (# HELP unless `help` is empty, # TYPE)
// and for one sample of a counter or a gauge: a collector that writes text straight away
// (TextCollectable) and one that builds families give the same bytes.
void AppendFamilyHead(std::string& out, std::string_view name, std::string_view help, prometheus::MetricType type);
void AppendSample(std::string& out, std::string_view name, const Labels& labels, double value);

// A collector that can write its families as text itself, skipping the MetricFamily of
// every series (a scrape of 1,000 runs is 94,000 of them). HttpServer asks for the text
// where a collectable offers it; Collect() stays the reference it must agree with.
class TextCollectable {
 public:
  virtual ~TextCollectable() = default;
  virtual void AppendText(std::string& out) const = 0;
};

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_
