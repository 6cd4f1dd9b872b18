#include "exporters/run_page.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "exporters/timestamp_seconds.h"
#include "text/run_figures.h"

namespace flightplan::exporters {
namespace {

// Okabe & Ito (2008), "Color Universal Design": eight colours told apart under protanopia,
// deuteranopia and tritanopia.
constexpr char kBlue[] = "#0072B2";
constexpr char kOrange[] = "#E69F00";
constexpr char kGreen[] = "#009E73";
constexpr char kVermillion[] = "#D55E00";
constexpr char kPurple[] = "#CC79A7";
constexpr char kSky[] = "#56B4E9";
constexpr char kYellow[] = "#F0E442";
constexpr char kBlack[] = "#000000";

std::string Date(double seconds, const char* format = "%Y-%m-%d %H:%M UTC") {
  if (!std::isfinite(seconds)) return "-";
  return absl::FormatTime(format, absl::FromUnixSeconds(static_cast<int64_t>(seconds)), absl::UTCTimeZone());
}

std::string Hours(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (std::fabs(seconds) >= 2 * 86400) return absl::StrFormat("%.1f days", seconds / 86400);
  if (std::fabs(seconds) >= 2 * 3600) return absl::StrFormat("%.1f h", seconds / 3600);
  return absl::StrFormat("%.0f min", seconds / 60);
}

std::string Percent(double ratio) { return absl::StrFormat("%.1f%%", ratio * 100); }

std::string Tokens(double n) {
  if (n >= 1e12) return absl::StrFormat("%.3g T", n / 1e12);
  if (n >= 1e9) return absl::StrFormat("%.3g B", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.3g M", n / 1e6);
  return absl::StrFormat("%.0f", n);
}

struct Series {
  std::string name;
  const char* color;
  std::string dash;                               // SVG stroke-dasharray, "" for solid
  std::vector<std::pair<double, double>> points;  // (unix seconds, value)
};

struct Area {  // a band between two curves at the same x (stacked categories, a marked stretch)
  std::string name;
  const char* color;
  std::vector<double> x, low, high;
  double opacity = 0.85;
  bool in_legend = true;  // false: another band's legend entry covers it
  std::string title;      // its tooltip, when other than its name
};

struct Line {  // a horizontal reference (a date on a date axis, or a value)
  std::string name;
  const char* color;
  double y;
};

// A chart with time on x; y is a date (y_dates) or hours.
struct Chart {
  std::string id, title, y_label;
  bool y_dates = false;
  std::vector<Series> series;
  std::vector<Line> lines;
  std::vector<Area> areas;
  double y_floor = std::numeric_limits<double>::quiet_NaN();  // include this value (0 for amounts)
};

std::string Tick(double v, bool date, double span) {
  if (date) return Date(v, span < 3 * 86400 ? "%m-%d %H:%M" : "%Y-%m-%d");
  return absl::StrFormat("%.4g", v);
}

// An inline SVG line chart: axes with labelled ticks (dates in UTC), one polyline per
// series, dashed reference lines, a legend.
std::string Svg(const Chart& c) {
  constexpr double kW = 760, kH = 316, kLeft = 96, kRight = 16, kTop = 16, kBottom = 80;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : c.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  for (const Line& l : c.lines) {
    if (std::isfinite(l.y)) y0 = std::min(y0, l.y), y1 = std::max(y1, l.y);
  }
  for (const Area& a : c.areas) {
    for (size_t i = 0; i < a.x.size(); ++i) {
      x0 = std::min(x0, a.x[i]), x1 = std::max(x1, a.x[i]);
      y0 = std::min(y0, a.low[i]), y1 = std::max(y1, a.high[i]);
    }
  }
  if (std::isfinite(c.y_floor) && std::isfinite(y0)) y0 = std::min(y0, c.y_floor);
  std::string out = absl::StrCat("<figure id=\"", c.id, "\"><figcaption>", HtmlEscape(c.title),
                                 "</figcaption>\n<svg class=\"chart\" viewBox=\"0 0 ", kW, " ", kH,
                                 "\" role=\"img\" aria-label=\"", HtmlEscape(c.title), "\">\n");
  if (x0 == x1) x0 -= 3600, x1 += 3600;  // one point: an hour either side of it
  if (!(x0 < x1) || !std::isfinite(y0)) {
    absl::StrAppend(&out, "<text class=\"empty\" x=\"", kW / 2, "\" y=\"", kH / 2,
                    "\" text-anchor=\"middle\">no data yet</text>\n</svg></figure>\n");
    return out;
  }
  if (y1 - y0 < 1e-9) y0 -= 1, y1 += 1;
  const double pad = (y1 - y0) * 0.05;
  const bool floored = std::isfinite(c.y_floor) && y0 >= c.y_floor;
  y0 -= pad, y1 += pad;
  if (floored) y0 = std::max(y0, c.y_floor);  // amounts start at 0, not below
  // Value ticks at round steps (1, 2, 2.5 or 5 times a power of ten); dates at quarters.
  std::vector<double> y_ticks;
  if (c.y_dates) {
    for (int i = 0; i <= 4; ++i) y_ticks.push_back(y0 + (y1 - y0) * i / 4);
  } else {
    const double raw = (y1 - y0) / 4, mag = std::pow(10, std::floor(std::log10(raw)));
    double step = 10 * mag;
    for (const double m : {1.0, 2.0, 2.5, 5.0}) {
      if (m * mag >= raw) {
        step = m * mag;
        break;
      }
    }
    for (double v = std::ceil(y0 / step) * step; v <= y1 + 1e-9 * step; v += step) y_ticks.push_back(v);
  }
  auto X = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); };
  auto Y = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * (kH - kTop - kBottom); };
  // Axes, ticks and their labels.
  absl::StrAppend(
      &out, "<g class=\"axis\" stroke=\"#444\">",
      absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", kLeft, kH - kBottom, kW - kRight,
                      kH - kBottom),
      absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", kLeft, kTop, kLeft, kH - kBottom),
      "</g>\n");
  for (int i = 0; i <= 4; ++i) {
    const double x = x0 + (x1 - x0) * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<text class=\"tick x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
                                          X(x), kH - kBottom + 18,
                                          i == 0   ? "start"
                                          : i == 4 ? "end"
                                                   : "middle",
                                          Tick(x, true, x1 - x0)));
  }
  for (const double y : y_ticks) {
    absl::StrAppend(&out,
                    absl::StrFormat("<text class=\"tick y\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                                    kLeft - 6, Y(y) + 4, Tick(y, c.y_dates, y1 - y0)),
                    absl::StrFormat("<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                    "stroke=\"#ddd\"/>\n",
                                    kLeft, Y(y), kW - kRight, Y(y)));
  }
  absl::StrAppend(&out,
                  absl::StrFormat("<text class=\"label x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                                  (kLeft + kW - kRight) / 2, kH - kBottom + 36, "time (UTC)"),
                  absl::StrFormat("<text class=\"label y\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
                                  "transform=\"rotate(-90 14 %.1f)\">%s</text>\n",
                                  (kTop + kH - kBottom) / 2, (kTop + kH - kBottom) / 2, HtmlEscape(c.y_label)));
  for (const Line& l : c.lines) {
    if (!std::isfinite(l.y)) continue;
    absl::StrAppend(&out, absl::StrFormat("<line class=\"ref\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                          "stroke=\"%s\" stroke-dasharray=\"2 4\" stroke-width=\"2\"/>\n",
                                          kLeft, Y(l.y), kW - kRight, Y(l.y), l.color));
  }
  for (const Area& a : c.areas) {
    if (a.x.size() < 2) continue;
    std::string d;
    for (size_t i = 0; i < a.x.size(); ++i)
      absl::StrAppend(&d, i == 0 ? "M" : " L", absl::StrFormat("%.1f %.1f", X(a.x[i]), Y(a.high[i])));
    for (size_t i = a.x.size(); i-- > 0;)
      absl::StrAppend(&d, " L", absl::StrFormat("%.1f %.1f", X(a.x[i]), Y(a.low[i])));
    absl::StrAppend(&out, "<path class=\"area\" d=\"", d, " Z\" fill=\"", a.color, "\" fill-opacity=\"",
                    absl::StrFormat("%.2f", a.opacity), "\"><title>", HtmlEscape(a.title.empty() ? a.name : a.title),
                    "</title></path>\n");
  }
  for (const Series& s : c.series) {
    std::string d;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      absl::StrAppend(&d, d.empty() ? "M" : " L", absl::StrFormat("%.1f %.1f", X(x), Y(y)));
    }
    if (d.empty()) continue;
    if (s.points.size() == 1) {
      absl::StrAppend(&out, absl::StrFormat("<circle class=\"series\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                                            X(s.points[0].first), Y(s.points[0].second), s.color));
    }
    absl::StrAppend(&out, "<path class=\"series\" d=\"", d, "\" fill=\"none\" stroke=\"", s.color,
                    "\" stroke-width=\"2\"", s.dash.empty() ? "" : absl::StrCat(" stroke-dasharray=\"", s.dash, "\""),
                    "><title>", HtmlEscape(s.name), "</title></path>\n");
  }
  // Legend, under the axis label.
  double lx = kLeft, ly = kH - 26;
  auto legend = [&](const std::string& name, const char* color, const std::string& dash) {
    const double w = 34 + 7.0 * static_cast<double>(name.size());
    if (lx + w > kW && lx > kLeft) lx = kLeft, ly += 16;  // the next row
    absl::StrAppend(
        &out,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"2\"%s/>",
                        lx, ly, lx + 22, ly, color,
                        dash.empty() ? "" : absl::StrCat(" stroke-dasharray=\"", dash, "\"")),
        absl::StrFormat("<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">%s</text>", lx + 26, ly + 4, HtmlEscape(name)));
    lx += w;
  };
  for (const Area& a : c.areas) {
    if (a.x.size() >= 2 && a.in_legend) legend(a.name, a.color, "");
  }
  for (const Series& s : c.series) legend(s.name, s.color, s.dash);
  for (const Line& l : c.lines) {
    if (std::isfinite(l.y)) legend(l.name, l.color, "2 4");
  }
  absl::StrAppend(&out, "\n</svg></figure>\n");
  return out;
}

}  // namespace

std::vector<std::pair<double, double>> ThroughputPoints(const std::vector<const v1::ForecastPoint*>& points) {
  // Each point is the rate over a stretch of work since the previous one: at least a
  // twentieth of the work shown (so a short or thinned history still draws a line, not one
  // dot or none), between one and ten minutes of it (less says little; more hides the
  // slow stretches). A restore's drop in tokens is not a rate: the stretch starts again.
  std::vector<std::pair<double, double>> out;
  if (points.size() < 2) return out;
  const double all = points.back()->time_seconds().productive() - points.front()->time_seconds().productive();
  const double stretch = std::clamp(all / 20, 60.0, 600.0);
  size_t from = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const double work = points[i]->time_seconds().productive() - points[from]->time_seconds().productive();
    const double gained = static_cast<double>(points[i]->tokens()) - static_cast<double>(points[from]->tokens());
    if (gained < 0) {
      from = i;
      continue;
    }
    if (work < stretch || gained == 0) continue;
    out.emplace_back(Seconds(points[i]->as_of()), gained / work);
    from = i;
  }
  return out;
}

namespace {

// A time category's colour on the page (Okabe-Ito; the three later categories in tints).
const char* CategoryColor(std::string_view name) {
  static const std::pair<std::string_view, const char*> kColors[] = {
      {"productive", kGreen}, {"capacity", "#7FCEB9"}, {"checkpoint", kSky},       {"custom", kBlue},
      {"lost", kVermillion},  {"startup", kYellow},    {"down_unplanned", kBlack}, {"down_planned", kPurple},
      {"stalled", kOrange},   {"excluded", "#BBBBBB"}};
  for (const auto& [n, color] : kColors) {
    if (n == name) return color;
  }
  return kBlack;
}

// Where the wall time went: one stacked bar, each category's share, and the hours.
std::string TimeBar(const v1::TimeSeconds& t) {
  std::vector<std::tuple<const char*, double, const char*>> parts;
  for (const text::TimeCategory& c : text::TimeCategories(t)) {
    if (c.Shown()) parts.emplace_back(c.label, c.seconds, CategoryColor(c.name));
  }
  double total = 0;
  for (const auto& p : parts) total += std::get<1>(p);
  std::string out =
      "<figure id=\"time\"><figcaption>Where the wall time went</figcaption>\n"
      "<svg class=\"chart\" viewBox=\"0 0 760 60\" role=\"img\" aria-label=\"wall time by category\">\n";
  if (total <= 0) {
    return out + "<text class=\"empty\" x=\"380\" y=\"30\" text-anchor=\"middle\">no data yet</text></svg></figure>\n";
  }
  double x = 0;
  for (const auto& [name, seconds, color] : parts) {
    if (seconds <= 0) continue;
    const double w = seconds / total * 760;
    absl::StrAppend(&out, absl::StrFormat("<rect class=\"mark\" x=\"%.1f\" y=\"8\" width=\"%.1f\" height=\"36\" "
                                          "fill=\"%s\"><title>%s: %s (%s)</title></rect>\n",
                                          x, w, color, name, Hours(seconds), text::ShareText(t, seconds)));
    x += w;
  }
  absl::StrAppend(&out, "</svg>\n<table class=\"time\"><tr><th>category</th><th>time</th><th>share</th></tr>\n");
  for (const auto& [name, seconds, color] : parts) {
    absl::StrAppend(&out, "<tr><td><span class=\"swatch\" style=\"background:", color, "\"></span>", name, "</td><td>",
                    Hours(seconds), "</td><td>", text::ShareText(t, seconds), "</td></tr>\n");
  }
  return out + "</table></figure>\n";
}

// Interruptions on a timeline: one row per cause, a mark per interruption (a circle when
// unplanned, a square when planned), coloured and labelled by cause.
std::string Timeline(const v1::ForecastHistory& history, double x0, double x1) {
  constexpr double kW = 760, kLeft = 130, kRight = 16, kRow = 22, kTop = 8;
  // A row per cause, the most frequent first; past eight, one "other" row (each mark keeps
  // its own cause in its title).
  std::vector<std::pair<int, std::string>> counted;
  for (const v1::InterruptionMark& m : history.interruptions()) {
    auto it = std::find_if(counted.begin(), counted.end(), [&](const auto& c) { return c.second == m.cause(); });
    if (it == counted.end()) {
      counted.emplace_back(1, m.cause());
    } else {
      ++it->first;
    }
    x0 = std::min(x0, Seconds(m.time())), x1 = std::max(x1, Seconds(m.time()));
  }
  std::stable_sort(counted.begin(), counted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  constexpr size_t kMaxRows = 8;
  std::vector<std::string> causes;
  for (size_t i = 0; i < counted.size() && i < (counted.size() > kMaxRows ? kMaxRows - 1 : kMaxRows); ++i) {
    causes.push_back(counted[i].second);
  }
  if (counted.size() > kMaxRows) causes.push_back("other");
  auto row_of = [&](const std::string& cause) {
    const auto it = std::find(causes.begin(), causes.end(), cause);
    return static_cast<size_t>(it != causes.end() ? it - causes.begin() : causes.size() - 1);
  };
  const double h = kTop + kRow * static_cast<double>(std::max<size_t>(1, causes.size())) + 46;
  std::string out = absl::StrCat(
      "<figure id=\"interruptions-timeline\"><figcaption>Interruptions over the run's life, by cause "
      "(circle: unplanned, square: planned)</figcaption>\n<svg class=\"chart\" viewBox=\"0 0 ",
      kW, " ", h, "\" role=\"img\" aria-label=\"interruptions by cause over time\">\n");
  if (causes.empty() || !std::isfinite(x0) || !std::isfinite(x1)) {
    return out + absl::StrFormat(
                     "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no "
                     "interruptions</text>\n</svg></figure>\n",
                     kW / 2, h / 2);
  }
  if (x0 == x1) x0 -= 3600, x1 += 3600;
  auto X = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); };
  static constexpr const char* kColours[] = {kVermillion, kBlue, kOrange, kGreen, kPurple, kSky, kBlack, kYellow};
  const double axis = kTop + kRow * static_cast<double>(causes.size());
  for (size_t i = 0; i < causes.size(); ++i) {
    absl::StrAppend(&out, absl::StrFormat("<text class=\"tick y\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s"
                                          "</text><line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                                          "y2=\"%.1f\" stroke=\"#eee\"/>\n",
                                          kLeft - 8, kTop + kRow * (static_cast<double>(i) + 0.5) + 4,
                                          HtmlEscape(causes[i]), kLeft, kTop + kRow * (static_cast<double>(i) + 0.5),
                                          kW - kRight, kTop + kRow * (static_cast<double>(i) + 0.5)));
  }
  for (const v1::InterruptionMark& m : history.interruptions()) {
    const size_t row = row_of(m.cause());
    const double x = X(Seconds(m.time())), y = kTop + kRow * (static_cast<double>(row) + 0.5);
    const char* colour = kColours[row % 8];
    const std::string title =
        absl::StrCat(HtmlEscape(m.cause()), m.planned() ? " (planned), " : ", ", Date(Seconds(m.time())));
    if (m.planned()) {
      absl::StrAppend(&out, absl::StrFormat("<rect class=\"mark\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" "
                                            "fill=\"%s\"><title>%s</title></rect>\n",
                                            x - 4, y - 4, colour, title));
    } else {
      absl::StrAppend(&out, absl::StrFormat("<circle class=\"mark\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
                                            "fill-opacity=\"0.8\"><title>%s</title></circle>\n",
                                            x, y, colour, title));
    }
  }
  absl::StrAppend(&out, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>",
                                        kLeft, axis, kW - kRight, axis));
  for (int i = 0; i <= 4; ++i) {
    const double x = x0 + (x1 - x0) * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<text class=\"tick x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
                                          X(x), axis + 16,
                                          i == 0   ? "start"
                                          : i == 4 ? "end"
                                                   : "middle",
                                          Tick(x, true, x1 - x0)));
  }
  absl::StrAppend(&out, absl::StrFormat("<text class=\"label x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                                        "time (UTC)</text>\n</svg></figure>\n",
                                        (kLeft + kW - kRight) / 2, axis + 34));
  return out;
}

const char kStyle[] =
    "<style>body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:800px;color:#111}"
    "h1{font-size:1.4em;margin:0 0 .3em}table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}"
    "th{border-bottom:1px solid #999}.summary td:first-child{color:#555}figure{margin:1.2em 0}"
    "figcaption{font-weight:600;margin-bottom:.3em}svg.chart{width:100%;height:auto}"
    "text{font-size:11px;fill:#222}.flag{color:#D55E00}.swatch{display:inline-block;width:10px;height:10px;"
    "margin-right:6px}footer{color:#777;margin-top:2em;font-size:12px}</style>\n";

std::string Head(const std::string& title, int refresh_seconds) {
  std::string out = absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>",
                                 HtmlEscape(title), "</title>\n");
  if (refresh_seconds > 0) absl::StrAppend(&out, "<meta http-equiv=\"refresh\" content=\"", refresh_seconds, "\">\n");
  return absl::StrCat(out, kStyle, "</head><body>\n");
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The nodes: the suspects among the run's nodes, each with its evidence, and the Slurm
// option that leaves them out; or that none stands out; or what attribution needs.
static std::string NodePanel(const v1::RunNodes& n) {
  std::string out = "<figure id=\"nodes\"><figcaption>Nodes</figcaption>\n";
  if (!n.named()) return absl::StrCat(out, "<p>", HtmlEscape(n.note()), "</p></figure>\n");
  absl::StrAppend(&out, "<p>", n.nodes(), n.nodes() == 1 ? " node" : " nodes", " held or named by this run; ",
                  n.suspects_size() == 0
                      ? "no suspects: no node stands out from the fleet's rate."
                      : absl::StrCat(n.suspects_size(), n.suspects_size() == 1 ? " suspect" : " suspects",
                                     " in the daemon's ledger across every run."),
                  "</p>\n");
  if (n.suspects_size() > 0) {
    absl::StrAppend(&out,
                    "<table><tr><th>node</th><th>reason</th><th>failures</th><th>expected</th><th>node-hours</th>"
                    "<th>slow stretches</th><th>evidence</th></tr>\n");
    for (const v1::NodeVerdict& v : n.suspects()) {
      absl::StrAppend(&out, "<tr class=\"suspect\"><td>", HtmlEscape(v.node()), "</td><td>", HtmlEscape(v.reason()),
                      "</td><td>", v.failures(), "</td><td>", absl::StrFormat("%.2f", v.expected_failures()),
                      "</td><td>", absl::StrFormat("%.1f", v.node_hours()), "</td><td>", v.slow_stretches(),
                      "</td><td>", HtmlEscape(v.evidence()), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n<p>Drain: <code id=\"exclude\">", HtmlEscape(n.exclude()), "</code></p>\n");
  }
  return absl::StrCat(out, "</figure>\n");
}

std::string RunPageHtml(const RunPageInput& in) {
  const v1::RunStatus& s = in.status;
  const v1::Forecast& f = s.forecast();
  const v1::FailureBudget& b = s.failure_budget();
  std::string out = Head(absl::StrCat("flightplan: ", s.run()), in.refresh_seconds);
  absl::StrAppend(&out, "<h1>Run ", HtmlEscape(s.run()), "</h1>\n<table class=\"summary\">\n");
  auto row = [&](const std::string& k, const std::string& v) {
    absl::StrAppend(&out, "<tr><td>", k, "</td><td>", v, "</td></tr>\n");
  };
  row("state", absl::StrCat(HtmlEscape(s.state()), ", attempt ", s.attempt()));
  row("plan", absl::StrCat(HtmlEscape(s.plan_name()), ", revision ", s.plan_revision()));
  row("progress", absl::StrCat(Tokens(static_cast<double>(s.progress().tokens())), " of ",
                               Tokens(static_cast<double>(s.progress().target_tokens())), " tokens (",
                               Percent(s.progress().fraction()), "), step ", s.progress().step()));
  row("as of", Date(Seconds(s.as_of())));
  row("finish, P50", absl::StrCat(Date(Seconds(f.finish_p50())), " (P10 ", Date(Seconds(f.finish_p10()), "%Y-%m-%d"),
                                  ", P90 ", Date(Seconds(f.finish_p90()), "%Y-%m-%d"), ")"));
  for (const v1::Future& fu : s.futures()) {
    row(fu.name() == "plan" ? "future: back to plan" : "future: the last days continue",
        absl::StrCat(Date(Seconds(fu.finish_p50())), ", budget at finish ", Hours(fu.budget_at_finish_seconds()),
                     ", weight ", Percent(fu.weight()), "<br><small>", HtmlEscape(fu.reason()), "</small>"));
  }
  row("plan finish", text::PlanFinishText(f));
  if (f.has_deadline()) {
    row("deadline",
        absl::StrCat(Date(Seconds(f.deadline())), ", met with probability ", Percent(f.deadline_probability())));
  }
  row("failure budget",
      absl::StrCat(Hours(b.consumed_seconds()), " used of ", Hours(b.budget_seconds()), " (",
                   Percent(b.budget_seconds() > 0 ? b.consumed_seconds() / b.budget_seconds() : 0), "), ",
                   Hours(b.remaining_seconds()), " left; burn rate ", absl::StrFormat("%.2f", b.burn_rate()),
                   absl::StrFormat(" (1h %.2f, 6h %.2f, 1d %.2f, 3d %.2f)", b.burn_rate_1h(), b.burn_rate_6h(),
                                   b.burn_rate_1d(), b.burn_rate_3d())));
  row("goodput", text::GoodputText(s.time_seconds()));
  {
    const v1::Slowdown& slow = s.slowdown();
    const std::string said = HtmlEscape(text::SlowdownText(slow));
    row("slowdown", slow.active() ? absl::StrCat("<span class=\"flag\">", said, "</span>") : said);
  }
  {
    const std::string said = HtmlEscape(text::NodesText(s.nodes()));
    row("nodes", s.nodes().suspects_size() > 0 ? absl::StrCat("<span class=\"flag\">", said, "</span>") : said);
  }
  if (const std::string mfu = text::MfuText(s.mfu()); !mfu.empty()) row("MFU", mfu);
  row("MTBF", absl::StrCat(Hours(s.reliability().observed_mtbf_seconds()), " observed, ",
                           Hours(s.reliability().plan_mtbf_seconds()), " planned"));
  for (const std::string& flag : s.flags())
    row("flag", absl::StrCat("<span class=\"flag\">", HtmlEscape(flag), "</span>"));
  absl::StrAppend(&out, "</table>\n");

  // The finish date over the run's life.
  Chart finish{"finish", "Forecast finish over the run's life", "finish date (UTC)", true, {}, {}, {}, std::nan("")};
  Series p10{"P10", kSky, "6 3", {}}, p50{"P50", kBlue, "", {}}, p90{"P90", kVermillion, "6 3", {}};
  // The budget consumed against its allowance: the plan spends it evenly over its schedule.
  Chart budget{"budget", "Failure budget consumed against the planned allowance", "hours", false, {}, {}, {}, 0};
  Series consumed{"consumed", kVermillion, "", {}}, projected{"projected at finish (P50)", kOrange, "6 3", {}};
  for (const v1::ForecastPoint& p : in.history.points()) {
    const double t = Seconds(p.as_of());
    if (p.has_finish_p10()) p10.points.emplace_back(t, Seconds(p.finish_p10()));
    if (p.has_finish_p50()) p50.points.emplace_back(t, Seconds(p.finish_p50()));
    if (p.has_finish_p90()) p90.points.emplace_back(t, Seconds(p.finish_p90()));
    consumed.points.emplace_back(t, p.budget_consumed_seconds() / 3600);
    projected.points.emplace_back(t, p.projected_at_finish_seconds() / 3600);
  }
  finish.series = {p10, p50, p90};
  finish.lines.push_back({"plan finish", kBlack, Seconds(f.plan_finish())});
  if (f.has_deadline()) finish.lines.push_back({"deadline", kPurple, Seconds(f.deadline())});
  Series allowance{"planned allowance", kGreen, "2 4", {}};
  // The plan's start: its finish less its whole schedule.
  const double plan_start = Seconds(f.plan_finish()) - b.schedule_seconds();
  if (f.has_plan_finish() && b.schedule_seconds() > 0 && !consumed.points.empty()) {
    const double start = plan_start;
    for (const double t : {consumed.points.front().first, consumed.points.back().first}) {
      allowance.points.emplace_back(t, std::max(0.0, (t - start) / b.schedule_seconds()) * b.budget_seconds() / 3600);
    }
  }
  budget.series = {consumed, projected, allowance};
  budget.lines.push_back({"budget", kBlack, b.budget_seconds() / 3600});
  // Tokens against the plan's line, with the forecast fan to the finish. Points stored
  // before schema 5 carry no tokens and are left out.
  const double target = static_cast<double>(s.progress().target_tokens());
  const bool trillions = target >= 1e12;
  const double unit = trillions ? 1e12 : 1e9;
  Chart tokens{"tokens",
               "Tokens trained against the plan, and the forecast to the finish",
               trillions ? "tokens (trillions)" : "tokens (billions)",
               false,
               {},
               {},
               {},
               0};
  Series actual{"trained", kBlue, "", {}}, plan_line{"plan", kBlack, "2 4", {}};
  std::vector<const v1::ForecastPoint*> stood;  // points that carry the run's state
  for (const v1::ForecastPoint& p : in.history.points()) {
    if (p.tokens() > 0 || p.time_seconds().elapsed() > 0) stood.push_back(&p);
  }
  for (const v1::ForecastPoint* p : stood)
    actual.points.emplace_back(Seconds(p->as_of()), static_cast<double>(p->tokens()) / unit);
  const double now = Seconds(s.as_of());
  if (s.has_as_of()) actual.points.emplace_back(now, static_cast<double>(s.progress().tokens()) / unit);
  if (f.has_plan_finish() && b.schedule_seconds() > 0) {
    plan_line.points.emplace_back(plan_start, 0);
    plan_line.points.emplace_back(Seconds(f.plan_finish()), target / unit);
  }
  tokens.series = {actual, plan_line};
  const std::vector<std::tuple<const char*, const google::protobuf::Timestamp*, const char*, const char*>> fan = {
      {"forecast P10", &f.finish_p10(), kSky, "6 3"},
      {"forecast P50", &f.finish_p50(), kBlue, "6 3"},
      {"forecast P90", &f.finish_p90(), kVermillion, "6 3"}};
  for (const auto& [name, finish_at, color, dash] : fan) {
    if (!s.has_as_of() || finish_at->seconds() <= 0 || s.state() == "finished") continue;
    tokens.series.push_back(
        Series{name,
               color,
               dash,
               {{now, static_cast<double>(s.progress().tokens()) / unit}, {Seconds(*finish_at), target / unit}}});
  }
  tokens.lines.push_back({"target", kGreen, target / unit});

  // Wall time by category over the run's life, stacked.
  Chart time{"time-history", "Wall time by category over the run's life", "hours", false, {}, {}, {}, 0};
  // The categories any point shows (the seven always, the others once they hold time).
  std::vector<text::TimeCategory> shown;
  for (const text::TimeCategory& c : text::TimeCategories(v1::TimeSeconds())) {
    const bool any = std::any_of(stood.begin(), stood.end(), [&](const v1::ForecastPoint* p) {
      for (const text::TimeCategory& d : text::TimeCategories(p->time_seconds())) {
        if (std::string_view(d.name) == c.name && d.Shown()) return true;
      }
      return false;
    });
    if (c.always || any) shown.push_back(c);
  }
  std::vector<double> below(stood.size(), 0);
  for (const text::TimeCategory& c : shown) {
    Area a{c.label, CategoryColor(c.name), {}, {}, {}, 0.85, true, {}};
    for (size_t i = 0; i < stood.size(); ++i) {
      double v = 0;
      for (const text::TimeCategory& d : text::TimeCategories(stood[i]->time_seconds())) {
        if (std::string_view(d.name) == c.name) v = d.seconds;
      }
      a.x.push_back(Seconds(stood[i]->as_of()));
      a.low.push_back(below[i] / 3600);
      below[i] += v;
      a.high.push_back(below[i] / 3600);
    }
    time.areas.push_back(std::move(a));
  }
  // Throughput over the run's life: tokens per productive second between stored points,
  // against the run's own pace and the plan's, with the slow stretches marked and their cost.
  Chart pace{"throughput",
             "Throughput over the run's life, slow stretches marked with their cost",
             "million tokens per productive second",
             false,
             {},
             {},
             {},
             std::nan("")};  // not from 0: a slowdown of a few percent shows
  Series rate{"tokens per productive second", kBlue, "", {}};
  for (const auto& [x, y] : ThroughputPoints(stood)) rate.points.emplace_back(x, y / 1e6);
  pace.series = {rate};
  const v1::Slowdown& sd = s.slowdown();
  if (sd.reference_tokens_per_second() > 0) {
    pace.lines.push_back({"own pace", kGreen, sd.reference_tokens_per_second() / 1e6});
  }
  pace.lines.push_back({"plan", kBlack, s.throughput().plan_tokens_per_second() / 1e6});
  double top = -std::numeric_limits<double>::infinity(), bottom = -top;
  for (const auto& [x, y] : rate.points) top = std::max(top, y), bottom = std::min(bottom, y);
  for (const Line& l : pace.lines) {
    if (l.y > 0) top = std::max(top, l.y), bottom = std::min(bottom, l.y);
  }
  double slow_cost = 0;
  for (const v1::SlowStretchMark& m : in.history.slowdowns()) slow_cost += m.seconds();
  const std::string bands = absl::StrCat(in.history.slowdowns_size(), " slow stretch",
                                         in.history.slowdowns_size() == 1 ? "" : "es", ", cost ", Hours(slow_cost));
  for (const v1::SlowStretchMark& m : in.history.slowdowns()) {
    const double from = Seconds(m.start()), to = m.active() ? now : Seconds(m.end());
    if (!(to > from) || !(top >= bottom)) continue;
    // One legend entry for them all; each band's tooltip says by how much, when, and its cost.
    pace.areas.push_back(Area{bands,
                              kOrange,
                              {from, to},
                              {bottom, bottom},
                              {top, top},
                              0.3,
                              pace.areas.empty(),
                              absl::StrCat(Percent(m.factor() - 1), " slower, ", Date(from), " to ",
                                           m.active() ? "now" : Date(to), ", cost ", Hours(m.seconds()))});
  }

  // The timeline spans the run's history (the interruptions widen it if need be).
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const v1::ForecastPoint& p : in.history.points())
    t0 = std::min(t0, Seconds(p.as_of())), t1 = std::max(t1, Seconds(p.as_of()));
  absl::StrAppend(&out, Svg(tokens), Svg(finish), Svg(budget), Svg(time), Svg(pace), TimeBar(s.time_seconds()),
                  Timeline(in.history, t0, t1));

  absl::StrAppend(&out, NodePanel(s.nodes()));
  absl::StrAppend(&out,
                  "<figure id=\"interruptions\"><figcaption>Interruptions by cause</figcaption>\n<table>"
                  "<tr><th>cause</th><th>planned</th><th>count</th></tr>\n");
  for (const v1::InterruptionCount& i : s.interruptions()) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(i.cause()), "</td><td>", i.planned() ? "yes" : "no", "</td><td>",
                    i.count(), "</td></tr>\n");
  }
  if (s.interruptions().empty()) absl::StrAppend(&out, "<tr><td colspan=\"3\">none</td></tr>\n");
  absl::StrAppend(&out, "</table></figure>\n<footer>", HtmlEscape(in.generator), ", ", s.events(), " events",
                  in.refresh_seconds > 0 ? absl::StrCat(", refreshes every ", in.refresh_seconds, " s") : "",
                  ". <a href=\"./\">All runs</a></footer>\n</body></html>\n");
  return out;
}

}  // namespace flightplan::exporters
