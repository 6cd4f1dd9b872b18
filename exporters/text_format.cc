#include "exporters/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace flightplan::exporters {
namespace {

template <typename Integer>
void AppendInteger(std::string& out, Integer value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "Nan";
  } else if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
  } else if (std::fabs(value) < 1e15 && value == std::trunc(value) && !(value == 0 && std::signbit(value))) {
    // A whole number under 10^15 has at most 15 digits, which %.16g writes as the integer
    // itself: the cheaper conversion, the same bytes (most series are counts and tokens).
    AppendInteger(out, static_cast<int64_t>(value));
  } else {
    // As an ostream with precision max_digits10 - 1 in its default notation: printf's %.16g.
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general,
                                         std::numeric_limits<double>::max_digits10 - 1);
    out.append(buffer, ec == std::errc() ? end : buffer);
  }
}

void AppendEscaped(std::string& out, std::string_view value) {
  if (value.find_first_of("\\\"\n") == std::string::npos) {
    out += value;  // the usual label: nothing to escape
    return;
  }
  for (const char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
}

// `name="value"` after the separator, which becomes a comma for the next.
void AppendLabel(std::string& out, const char*& separator, std::string_view name, std::string_view value) {
  out += separator;
  out += name;
  out += "=\"";
  AppendEscaped(out, value);
  out += '"';
  separator = ",";
}

// The name, its suffix and labels (and one more, as a string or a number), and the space.
void AppendHead(std::string& out, const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric,
                const char* suffix = "", const char* extra_name = nullptr, const std::string* extra_text = nullptr,
                double extra_number = 0) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || extra_name != nullptr) {
    out += '{';
    const char* separator = "";
    for (const prometheus::ClientMetric::Label& label : metric.label)
      AppendLabel(out, separator, label.name, label.value);
    if (extra_name != nullptr) {
      out += separator;
      out += extra_name;
      out += "=\"";
      if (extra_text != nullptr) {
        AppendEscaped(out, *extra_text);
      } else {
        AppendValue(out, extra_number);
      }
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void AppendTail(std::string& out, const prometheus::ClientMetric& metric) {
  if (metric.timestamp_ms != 0) {
    out += ' ';
    AppendInteger(out, metric.timestamp_ms);
  }
  out += '\n';
}

void AppendMetric(std::string& out, const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric) {
  switch (family.type) {
    case prometheus::MetricType::Counter:
      AppendHead(out, family, metric);
      AppendValue(out, metric.counter.value);
      AppendTail(out, metric);
      break;
    case prometheus::MetricType::Gauge:
      AppendHead(out, family, metric);
      AppendValue(out, metric.gauge.value);
      AppendTail(out, metric);
      break;
    case prometheus::MetricType::Untyped:
      AppendHead(out, family, metric);
      AppendValue(out, metric.untyped.value);
      AppendTail(out, metric);
      break;
    case prometheus::MetricType::Summary: {
      const prometheus::ClientMetric::Summary& s = metric.summary;
      AppendHead(out, family, metric, "_count");
      AppendInteger(out, s.sample_count);
      AppendTail(out, metric);
      AppendHead(out, family, metric, "_sum");
      AppendValue(out, s.sample_sum);
      AppendTail(out, metric);
      for (const prometheus::ClientMetric::Quantile& q : s.quantile) {
        AppendHead(out, family, metric, "", "quantile", nullptr, q.quantile);
        AppendValue(out, q.value);
        AppendTail(out, metric);
      }
      break;
    }
    case prometheus::MetricType::Histogram: {
      const prometheus::ClientMetric::Histogram& h = metric.histogram;
      AppendHead(out, family, metric, "_count");
      AppendInteger(out, h.sample_count);
      AppendTail(out, metric);
      AppendHead(out, family, metric, "_sum");
      AppendValue(out, h.sample_sum);
      AppendTail(out, metric);
      double last = -std::numeric_limits<double>::infinity();
      for (const prometheus::ClientMetric::Bucket& b : h.bucket) {
        AppendHead(out, family, metric, "_bucket", "le", nullptr, b.upper_bound);
        last = b.upper_bound;
        AppendInteger(out, b.cumulative_count);
        AppendTail(out, metric);
      }
      if (last != std::numeric_limits<double>::infinity()) {
        static const std::string kInf = "+Inf";
        AppendHead(out, family, metric, "_bucket", "le", &kInf);
        AppendInteger(out, h.sample_count);
        AppendTail(out, metric);
      }
      break;
    }
  }
}

const char* TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Untyped:
      break;
  }
  return "untyped";
}

}  // namespace

void AppendFamilyHead(std::string& out, std::string_view name, std::string_view help, prometheus::MetricType type) {
  if (!help.empty()) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += '\n';
  }
  out += "# TYPE ";
  out += name;
  out += ' ';
  out += TypeName(type);
  out += '\n';
}

void AppendSample(std::string& out, std::string_view name, const Labels& labels, double value) {
  out += name;
  if (labels.begin() != labels.end()) {
    out += '{';
    const char* separator = "";
    for (const LabelView& label : labels) AppendLabel(out, separator, label.name, label.value);
    out += '}';
  }
  out += ' ';
  AppendValue(out, value);
  out += '\n';
}

std::string TextFormat(const std::vector<prometheus::MetricFamily>& families) {
  size_t series = 0;
  for (const prometheus::MetricFamily& f : families) series += f.metric.size();
  std::string out;
  out.reserve(series * 96 + families.size() * 160);
  for (const prometheus::MetricFamily& f : families) {
    AppendFamilyHead(out, f.name, f.help, f.type);
    for (const prometheus::ClientMetric& m : f.metric) AppendMetric(out, f, m);
  }
  return out;
}

}  // namespace flightplan::exporters
