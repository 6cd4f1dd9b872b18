#include "exporters/fleet_page.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "exporters/run_page.h"
#include "text/units.h"

namespace flightplan::exporters {
namespace {

namespace units = text::units;

// A day's burn at twice the plan's or more is worth a look (a day at 2x spends two days'
// share); the burn-rate alerts page at shares of each run's ceiling (docs/metrics.md).
constexpr double kLookBurn = 2;
// Later than the plan's P50 by a day or more.
constexpr double kLookSlipSeconds = 86400;

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

const std::array<const char*, 4> kClassNames = {"act now", "look", "on plan", "finished"};
const std::array<const char*, 4> kClassCss = {"act", "look", "ok", "done"};

std::string RunHref(const std::string& run) {
  std::string href;  // the name as a path segment: escaped for the URL, then for HTML
  for (const unsigned char c : run) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      href += static_cast<char>(c);
    } else {
      href += absl::StrFormat("%%%02X", c);
    }
  }
  return HtmlEscape(href);
}

const char kFleetStyle[] =
    "<style>body{font:13px/1.35 system-ui,sans-serif;margin:1em;color:#111}h1{font-size:1.3em;margin:0 0 .2em}"
    "p.counts{margin:.2em 0 .8em}p.counts span{margin-right:1.2em}table{border-collapse:collapse;width:100%}"
    "th{position:sticky;top:0;background:#fff;border-bottom:1px solid #999;text-align:left;padding:3px "
    "8px;white-space:nowrap}"
    "td{padding:2px 8px;border-bottom:1px solid #eee;white-space:nowrap}td.why{white-space:normal}"
    "td.num{text-align:right}tr.act td:first-child{border-left:4px solid #D55E00}"
    "tr.look td:first-child{border-left:4px solid #E69F00}tr.ok td:first-child{border-left:4px solid #009E73}"
    "tr.done td:first-child{border-left:4px solid #999}tr.done{color:#777}.act{color:#D55E00}.look{color:#9A6A00}"
    "footer{color:#777;margin-top:1.5em;font-size:12px}</style>\n";

}  // namespace

FleetVerdict JudgeRun(const v1::RunStatus& s) {
  FleetVerdict v;
  if (s.state() == "finished") {
    v.severity = 3;
    return v;
  }
  const v1::FailureBudget& b = s.failure_budget();
  const v1::Forecast& f = s.forecast();
  const v1::Outage& o = s.outage();
  auto act = [&](std::string why) {
    v.severity = std::min(v.severity, 0);
    v.reasons.push_back(std::move(why));
  };
  auto look = [&](std::string why) {
    v.severity = std::min(v.severity, 1);
    v.reasons.push_back(std::move(why));
  };
  if (o.seconds() > 0 && o.seconds() >= o.allowance_seconds()) {
    act(absl::StrCat("down ", units::Duration(o.seconds()), ", past its ", units::Duration(o.allowance_seconds()),
                     " allowance"));
  } else if (o.seconds() >= 60) {
    look(absl::StrCat("down ", units::Duration(o.seconds())));
  }
  if (b.budget_seconds() > 0 && b.remaining_seconds() <= 0) {
    act("failure budget spent");
  } else if (b.exhaustion_probability() >= 0.5) {
    act(absl::StrCat("P(budget runs out) ", units::Percent(b.exhaustion_probability(), 0)));
  }
  if (f.has_deadline() && f.has_finish_p50() && TimeOf(f.finish_p50()) > TimeOf(f.deadline())) {
    act(absl::StrCat("P50 finish after the deadline (", units::Percent(f.deadline_probability(), 0), " on time)"));
  }
  if (b.burn_rate_1d() >= kLookBurn) look(absl::StrFormat("burn %.1fx plan over a day", b.burn_rate_1d()));
  if (s.slowdown().active()) {
    look(absl::StrCat("slowdown, ", units::Percent(s.slowdown().factor() - 1, 0), " slower since ",
                      units::Date(TimeOf(s.slowdown().since()))));
  }
  if (s.nodes().suspects_size() > 0) {
    std::vector<std::string> names;
    for (const v1::NodeVerdict& n : s.nodes().suspects()) names.push_back(n.node());
    look(absl::StrCat(names.size() == 1 ? "suspect node " : "suspect nodes ", absl::StrJoin(names, ", "),
                      s.nodes().exclude().empty() ? "" : absl::StrCat(" (", s.nodes().exclude(), ")")));
  }
  if (f.slip_seconds() >= kLookSlipSeconds) look(absl::StrCat(units::Duration(f.slip_seconds()), " late"));
  return v;
}

std::string FleetPageHtml(std::vector<v1::RunStatus> runs, int refresh_seconds) {
  std::vector<std::pair<FleetVerdict, const v1::RunStatus*>> rows;
  rows.reserve(runs.size());
  std::array<size_t, 4> counts{};
  for (const v1::RunStatus& s : runs) {
    rows.emplace_back(JudgeRun(s), &s);
    ++counts[static_cast<size_t>(rows.back().first.severity)];
  }
  // The worst class first; within it the latest against its plan, then by name.
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.first.severity != b.first.severity) return a.first.severity < b.first.severity;
    const double sa = a.second->forecast().slip_seconds(), sb = b.second->forecast().slip_seconds();
    if (sa != sb) return sa > sb;
    return a.second->run() < b.second->run();
  });
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>flightplan runs</title>\n";
  if (refresh_seconds > 0) absl::StrAppend(&out, "<meta http-equiv=\"refresh\" content=\"", refresh_seconds, "\">\n");
  absl::StrAppend(&out, kFleetStyle, "</head><body>\n<h1>Runs</h1>\n<p class=\"counts\">");
  absl::StrAppend(&out, "<span>", units::Count(static_cast<double>(runs.size())), runs.size() == 1 ? " run" : " runs",
                  "</span>");
  for (size_t c = 0; c < counts.size(); ++c) {
    absl::StrAppend(&out, "<span class=\"", kClassCss[c], "\">", units::Count(static_cast<double>(counts[c])), " ",
                    kClassNames[c], "</span>");
  }
  absl::StrAppend(&out,
                  "</p>\n<table class=\"fleet\"><thead><tr><th>run</th><th>state</th><th>progress</th>"
                  "<th>P50 finish</th><th>vs plan</th><th>budget left</th><th>burn, 1 d</th><th>why</th></tr>"
                  "</thead>\n<tbody>\n");
  for (const auto& [verdict, s] : rows) {
    const v1::FailureBudget& b = s->failure_budget();
    const v1::Forecast& f = s->forecast();
    const std::string finish = f.has_finish_p50() && s->state() != "finished"
                                   ? units::DateOnly(TimeOf(f.finish_p50()))
                                   : (s->state() == "finished" ? units::DateOnly(TimeOf(s->last_event_time())) : "-");
    const double slip = f.slip_seconds();
    const std::string vs_plan = s->state() == "finished" || !f.has_finish_p50() ? "-"
                                : std::fabs(slip) < 3600
                                    ? "on plan"
                                    : absl::StrCat(units::Duration(std::fabs(slip)), slip > 0 ? " late" : " early");
    const std::string left =
        b.budget_seconds() > 0 ? units::Percent(b.remaining_seconds() / b.budget_seconds(), 0) : "-";
    const std::string burn = b.budget_seconds() > 0 ? absl::StrFormat("%.2f", b.burn_rate_1d()) : "-";
    const size_t c = static_cast<size_t>(verdict.severity);
    absl::StrAppend(
        &out, "<tr class=\"", kClassCss[c], "\"><td><a href=\"", RunHref(s->run()), "\">", HtmlEscape(s->run()),
        "</a></td><td>", HtmlEscape(s->state()), "</td><td class=\"num\">", units::Percent(s->progress().fraction(), 1),
        "</td><td>", finish, "</td><td>", vs_plan, "</td><td class=\"num\">", left, "</td><td class=\"num\">", burn,
        "</td><td class=\"why\">",
        HtmlEscape(verdict.reasons.empty() ? std::string(kClassNames[c]) : absl::StrJoin(verdict.reasons, "; ")),
        "</td></tr>\n");
  }
  if (runs.empty()) absl::StrAppend(&out, "<tr><td colspan=\"8\">no runs yet</td></tr>\n");
  absl::StrAppend(&out,
                  "</tbody></table>\n<footer>flightpland: act now = down past its allowance, budget spent or "
                  "more likely than not to run out, or the P50 after the deadline; look = down, a day's burn at ",
                  absl::StrFormat("%.0f", kLookBurn),
                  "x plan or more, an active slowdown, a suspect node, or a day or more late</footer>\n"
                  "</body></html>\n");
  return out;
}

}  // namespace flightplan::exporters
