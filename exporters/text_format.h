// The Prometheus text exposition format (0.0.4) of metric families, as prometheus-cpp's
// TextSerializer writes it (the same bytes: values with 16 significant digits, "Nan",
// "+Inf"), appended to one string with std::to_chars instead of an ostream. At 1,000 runs a
// scrape is 7 MB of text, and the ostream was a third of its time (perf, issue 41).
#ifndef FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_
#define FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_

#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace flightplan::exporters {

[[nodiscard]] std::string TextFormat(const std::vector<prometheus::MetricFamily>& families);

}  // namespace flightplan::exporters

#endif  // FLIGHTPLAN_EXPORTERS_TEXT_FORMAT_H_
