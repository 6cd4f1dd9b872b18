// exporters::TextFormat against prometheus-cpp's own TextSerializer, the oracle: the same
// bytes for every metric type, label escapes, the special values and timestamps.
#include "exporters/text_format.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace flightplan::exporters {
namespace {

prometheus::ClientMetric Sample(std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  m.counter.value = value;
  m.untyped.value = value;
  return m;
}

TEST(TextFormat, WritesWhatPrometheusCppsSerializerWrites) {
  std::vector<prometheus::MetricFamily> families;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<prometheus::ClientMetric> values;
  for (double v : {0.0,
                   -0.0,
                   1.0,
                   -2.5,
                   0.1,
                   1e-300,
                   1.7976931348623157e308,
                   1802235558.521044,
                   0.0007211410000000118,
                   123456789012345678.0,
                   3.0e16,
                   1e21,
                   std::nan(""),
                   inf,
                   -inf,
                   4.9e-324,
                   -7.0,
                   999999999999999.0,
                   1e15,
                   -1e15,
                   1e16,
                   12000000000000.0,
                   9007199254740993.0}) {
    values.push_back(Sample({{"run", "a"}, {"why", "quote \" slash \\ newline \n end"}}, v));
  }
  values.push_back(Sample({}, 42));
  prometheus::ClientMetric stamped = Sample({{"run", "b"}}, 7);
  stamped.timestamp_ms = 1800000000123;
  values.push_back(stamped);
  for (prometheus::MetricType type :
       {prometheus::MetricType::Gauge, prometheus::MetricType::Counter, prometheus::MetricType::Untyped}) {
    families.push_back({"flightplan_test_" + std::to_string(static_cast<int>(type)), "help text", type, values});
  }
  families.push_back({"flightplan_no_help", "", prometheus::MetricType::Gauge, {Sample({}, 1)}});
  families.push_back({"flightplan_odd_help",
                      "a \\ backslash, a \" quote and a\nnewline",
                      prometheus::MetricType::Gauge,
                      {Sample({}, 1)}});
  prometheus::ClientMetric histogram;
  histogram.label = {{"run", "h"}};
  histogram.histogram.sample_count = 12;
  histogram.histogram.sample_sum = 3.25;
  histogram.histogram.bucket = {{1, 0.005}, {5, 0.25}, {12, 10}};
  prometheus::ClientMetric closed = histogram;
  closed.histogram.bucket.push_back({12, inf});
  families.push_back(
      {"flightplan_test_seconds", "a histogram", prometheus::MetricType::Histogram, {histogram, closed}});
  prometheus::ClientMetric summary;
  summary.summary.sample_count = 3;
  summary.summary.sample_sum = 0.5;
  summary.summary.quantile = {{0.5, 0.1}, {0.99, 0.3}};
  families.push_back({"flightplan_test_summary", "a summary", prometheus::MetricType::Summary, {summary}});

  const std::string expected = prometheus::TextSerializer().Serialize(families);
  const std::string got = TextFormat(families);
  EXPECT_EQ(got, expected);
  // And it is not empty by accident: every family's samples are there.
  EXPECT_NE(got.find("flightplan_test_seconds_bucket{run=\"h\",le=\"+Inf\"} 12\n"), std::string::npos) << got;
  EXPECT_NE(got.find("why=\"quote \\\" slash \\\\ newline \\n end\""), std::string::npos) << got;
}

}  // namespace
}  // namespace flightplan::exporters
