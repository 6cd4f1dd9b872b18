#include "forecast/calibration.h"

#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace flightplan::forecast {

absl::StatusOr<std::vector<ScenarioCalibration>> Calibrate(const PlanSpec& plan, const PlanReport& report,
                                                           const std::vector<Scenario>& scenarios,
                                                           const CalibrationOptions& options) {
  const ForecastPrior prior = PriorFromPlan(plan, report);
  std::vector<ScenarioCalibration> out;
  for (const Scenario& sc : scenarios) {
    ScenarioCalibration cal;
    cal.scenario = sc.name;
    cal.change_at = sc.change_at;
    std::vector<Backtest> after;
    for (int seed = 1; seed <= options.seeds; ++seed) {
      SimulationOptions o = sc.options;
      o.duplicate_fraction = options.duplicate_fraction;
      // Seeded by the scenario's name, so a scenario draws the same runs alone or with others.
      uint64_t name_hash = 1469598103934665603ULL;  // FNV-1a
      for (const char c : std::string_view(sc.name))
        name_hash = (name_hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
      o.seed = static_cast<uint64_t>(seed) * 7919 + name_hash % 100003;
      const std::vector<Event> events = SimulateRun(plan, report, o);
      // The simulator writes what a daemon accepts: every event applies or is a duplicate.
      RunState folded;
      folded.settings = FoldSettingsFor(prior);
      std::set<std::string> keys;
      for (const Event& e : events) {
        if (!keys.insert(EventKey(e, AttemptOf(folded, e))).second) continue;
        if (!ApplyEvent(folded, e).ok()) ++cal.refused_events;
      }
      absl::StatusOr<Backtest> bt = RunBacktest(events, prior, options.forecast);
      if (!bt.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(sc.name, " seed ", seed, ": ", bt.status().message()));
      }
      Backtest later = *bt;
      std::erase_if(later.points, [&](const BacktestPoint& p) { return p.tenth / 10.0 <= sc.change_at; });
      after.push_back(std::move(later));
      cal.runs.push_back(std::move(*bt));
      if (options.progress) options.progress(sc.name, seed);
    }
    cal.all = Summarize(cal.runs);
    cal.after_change = Summarize(after);
    out.push_back(std::move(cal));
  }
  return out;
}

BacktestSummary Overall(const std::vector<ScenarioCalibration>& scenarios) {
  std::vector<Backtest> all;
  for (const ScenarioCalibration& s : scenarios) all.insert(all.end(), s.runs.begin(), s.runs.end());
  return Summarize(all);
}

std::string CalibrationTable(const std::vector<ScenarioCalibration>& scenarios) {
  // Errors in hours (medians); the width and the proper scores as percentages of the time
  // that was actually left: the median P10..P90 width, the mean 80% interval (Winkler)
  // score and the mean CRPS, beside the naive lifetime estimate's CRPS (its absolute
  // error; its interval score is 10x that).
  std::string out =
      absl::StrFormat("%-26s %8s %9s %9s %10s %11s %7s %8s %7s %8s\n", "scenario", "coverage", "after chg", "P50 err h",
                      "lifetime h", "last hour h", "width%", "winkler%", "crps%", "naive%");
  auto row = [&](const std::string& name, const BacktestSummary& s, const std::string& after) {
    absl::StrAppendFormat(&out, "%-26s %7.0f%% %9s %9.1f %10.1f %11.1f %7.1f %8.1f %7.2f %8.2f\n", name,
                          s.coverage * 100, after, s.median_p50_error_seconds / 3600,
                          s.median_naive_lifetime_error_seconds / 3600, s.median_naive_recent_error_seconds / 3600,
                          s.median_width_share * 100, s.mean_interval_score * 100, s.mean_crps * 100,
                          s.mean_naive_crps * 100);
  };
  for (const ScenarioCalibration& s : scenarios) {
    row(s.scenario, s.all,
        s.change_at > 0 ? absl::StrFormat("%.0f%%", s.after_change.coverage * 100) : std::string("-"));
  }
  const BacktestSummary all = Overall(scenarios);
  row(absl::StrCat("all (", all.points, " cuts)"), all, "");
  return out;
}

}  // namespace flightplan::forecast
