#include "cli/sim_commands.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/plan_file.h"
#include "convert/event_convert.h"
#include "convert/event_json.h"
#include "convert/plan_convert.h"
#include "forecast/backtest.h"
#include "planner/plan_engine.h"
#include "text/units.h"

namespace flightplan::cli {

namespace units = text::units;  // the one rendering of numbers, shared with the run page

namespace {

struct LoadedPlan {
  planner::PlanSpec spec;
  planner::PlanReport report;
  std::string name;
};

int LoadPlan(const std::string& path, const char* command, LoadedPlan& out, std::ostream& err) {
  absl::StatusOr<v1::Plan> plan = LoadPlanFile(path);
  if (!plan.ok()) {
    err << "flightplan " << command << ": " << plan.status().message() << "\n";
    return 2;
  }
  out.name = plan->name();
  out.spec = convert::PlanFromProto(*plan);
  out.report = planner::ComputePlan(out.spec);
  if (out.report.HasError()) {
    err << "flightplan " << command << ": the plan has errors (flightplan plan " << path << "):\n";
    for (const auto& f : out.report.findings) {
      if (f.severity == planner::Severity::kError) err << "  " << f.code << ": " << f.message << "\n";
    }
    return 1;
  }
  return 0;
}

std::string Hours(double seconds) {
  if (!std::isfinite(seconds)) return "inf";
  return absl::StrFormat("%.1f h", seconds / 3600);
}

}  // namespace

absl::StatusOr<forecast::SlowStretchSpec> ParseSlowStretch(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() != 3 && parts.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slow '", text, "' is not START_DAYS:HOURS:FACTOR[:RAMP_HOURS] (e.g. 10:72:1.05)"));
  }
  forecast::SlowStretchSpec spec;
  double* fields[] = {&spec.start_days, &spec.hours, &spec.factor, &spec.ramp_hours};
  const char* names[] = {"START_DAYS", "HOURS", "FACTOR", "RAMP_HOURS"};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtod(parts[i], fields[i]) || !std::isfinite(*fields[i]) || *fields[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--slow '", text, "': ", names[i], " '", parts[i], "' is not a number of 0 or more"));
    }
  }
  if (spec.factor < 1 || spec.factor > 10) {
    return absl::InvalidArgumentError(absl::StrCat("--slow '", text, "': FACTOR ", parts[2],
                                                   " is time per token over normal, from 1 to 10 (1.05: 5% slower)"));
  }
  return spec;
}

int RunSimulate(const SimulateOptions& options, std::ostream& out, std::ostream& err) {
  forecast::SimulationOptions simulation = options.simulation;
  for (const std::string& text : options.slow) {
    absl::StatusOr<forecast::SlowStretchSpec> spec = ParseSlowStretch(text);
    if (!spec.ok()) {
      err << "flightplan simulate: " << spec.status().message() << "\n";
      return 2;
    }
    simulation.slow.push_back(*spec);
  }
  LoadedPlan plan;
  if (int rc = LoadPlan(options.plan_path, "simulate", plan, err); rc != 0) return rc;
  const std::string run = options.run.empty() ? plan.name : options.run;
  const std::vector<forecast::Event> events = forecast::SimulateRun(plan.spec, plan.report, simulation);
  std::string lines;
  for (const forecast::Event& e : events) {
    convert::AppendEventJson(convert::EventToProto(e, run), lines);
    lines += '\n';
    if (lines.size() > (1 << 20)) {
      out << lines;
      lines.clear();
    }
  }
  out << lines;
  return 0;
}

int RunBacktestCommand(const BacktestOptions& options, std::ostream& out, std::ostream& err) {
  LoadedPlan plan;
  if (int rc = LoadPlan(options.plan_path, "backtest", plan, err); rc != 0) return rc;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (options.events_path != "-") {
    file.open(options.events_path);
    if (!file) {
      err << "flightplan backtest: " << options.events_path << ": cannot read\n";
      return 2;
    }
    in = &file;
  }
  std::vector<forecast::Event> events;
  std::string line;
  size_t line_no = 0, bad = 0;
  while (std::getline(*in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    v1::Event proto;
    absl::StatusOr<forecast::Event> e = absl::InvalidArgumentError("unparsed");
    if (const absl::Status st = convert::ParseEventJson(line, proto); st.ok()) {
      e = convert::EventFromProto(proto);
    } else {
      e = absl::InvalidArgumentError(absl::StrCat("not a flightplan.v1.Event: ", st.message()));
    }
    if (!e.ok()) {
      if (++bad <= 5) err << "flightplan backtest: line " << line_no << " skipped: " << e.status().message() << "\n";
      continue;
    }
    events.push_back(std::move(*e));
  }
  std::stable_sort(events.begin(), events.end(), forecast::EventBefore);
  const forecast::ForecastPrior prior = forecast::PriorFromPlan(plan.spec, plan.report);
  forecast::ForecastOptions fo;
  fo.draws = options.draws;
  fo.bad_period_law = options.bad_period_law;
  absl::StatusOr<forecast::Backtest> bt = forecast::RunBacktest(events, prior, fo);
  if (!bt.ok()) {
    err << "flightplan backtest: " << bt.status().message() << "\n";
    return 1;
  }
  size_t inside = 0;
  for (const auto& p : bt->points) inside += p.inside ? 1 : 0;
  if (options.json) {
    out << "{\"actual_finish\": \"" << absl::FormatTime(absl::RFC3339_sec, bt->actual_finish, absl::UTCTimeZone())
        << "\", \"plan_finish\": \"" << absl::FormatTime(absl::RFC3339_sec, prior.plan_finish, absl::UTCTimeZone())
        << "\", \"coverage\": " << bt->coverage << ", \"points\": [";
    for (size_t i = 0; i < bt->points.size(); ++i) {
      const auto& p = bt->points[i];
      auto ts = [](absl::Time t) {
        return t == absl::InfiniteFuture()
                   ? std::string("null")
                   : absl::StrCat("\"", absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone()), "\"");
      };
      auto num = [](double v) { return std::isfinite(v) ? absl::StrCat(v) : std::string("null"); };
      out << (i ? ", " : "") << "{\"progress\": " << p.tenth / 10.0 << ", \"as_of\": " << ts(p.as_of)
          << ", \"p10\": " << ts(p.p10) << ", \"p50\": " << ts(p.p50) << ", \"p90\": " << ts(p.p90)
          << ", \"inside\": " << (p.inside ? "true" : "false")
          << ", \"p50_error_seconds\": " << num(p.p50_error_seconds)
          << ", \"naive_lifetime_error_seconds\": " << num(p.naive_lifetime_error_seconds)
          << ", \"naive_recent_error_seconds\": " << num(p.naive_recent_error_seconds) << "}";
    }
    out << "]}\n";
    return 0;
  }
  out << "backtest: actual finish " << units::Date(bt->actual_finish) << " (plan " << units::Date(prior.plan_finish)
      << ")\n";
  out << absl::StrFormat("%-9s %-17s %-11s %-17s %-11s %-7s %9s %9s %9s\n", "progress", "as of", "P10", "P50", "P90",
                         "inside", "P50 err", "lifetime", "last hour");
  for (const auto& p : bt->points) {
    out << absl::StrFormat("%-9s %-17s %-11s %-17s %-11s %-7s %9s %9s %9s\n", absl::StrCat(p.tenth * 10, "%"),
                           absl::FormatTime("%Y-%m-%d %H:%M", p.as_of, absl::UTCTimeZone()), units::DateOnly(p.p10),
                           absl::FormatTime("%Y-%m-%d %H:%M", p.p50, absl::UTCTimeZone()), units::DateOnly(p.p90),
                           p.inside ? "yes" : "no", Hours(p.p50_error_seconds), Hours(p.naive_lifetime_error_seconds),
                           Hours(p.naive_recent_error_seconds));
  }
  out << absl::StrFormat("coverage %zu/%zu inside P10..P90; median error: P50 %s, lifetime rate %s, last hour %s\n",
                         inside, bt->points.size(), Hours(bt->median_p50_error_seconds),
                         Hours(bt->median_naive_lifetime_error_seconds), Hours(bt->median_naive_recent_error_seconds));
  return 0;
}

}  // namespace flightplan::cli
