// flightplan_calibrate: the forecaster's calibration table (README "Forecasts and
// calibration") for each evidence model, from simulated runs of a plan in every named
// scenario. The calibration test asserts on the default model; this prints all of them.
//
//   flightplan_calibrate [--plan PLAN.yaml] [--seeds 3] [--draws 1000]
//                        [--model lifetime|discounted|changepoint|all] [--scenario NAME]... [--law]
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/time/clock.h"
#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/calibration.h"
#include "planner/plan_engine.h"

int main(int argc, char** argv) {
  using namespace flightplan::forecast;
  CLI::App app("Calibration of the finish forecast on simulated runs, per scenario and evidence model");
  std::string plan_path = FLIGHTPLAN_FLAGSHIP;
  std::string model = "all";
  std::vector<std::string> only;
  CalibrationOptions options;
  options.forecast.draws = 1000;
  app.add_option("--plan", plan_path, "plan file")->capture_default_str();
  app.add_option("--seeds", options.seeds, "runs per scenario")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--draws", options.forecast.draws, "Monte Carlo draws per forecast")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--recent-share", options.forecast.recent_share,
                 "recent window / half-life as a share of the elapsed time")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--model", model, "lifetime | discounted | changepoint | futures | all")
      ->capture_default_str()
      ->check(CLI::IsMember({"lifetime", "discounted", "changepoint", "futures", "all"}));
  app.add_option("--scenario", only, "only these scenarios (default: every one)");
  app.add_flag("--law", options.forecast.bad_period_law,
               "end crises and slowdowns by the law from the records (forecast/bad_period.h), not Gott's D/(D+x)");
  bool points = false;
  app.add_flag("--points", points,
               "also print every cut: scenario, seed, progress, P10/P50/P90 and naive errors (h), the time left (h), "
               "width and interval score (% of it)");
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<flightplan::v1::Plan> proto = flightplan::cli::LoadPlanFile(plan_path);
  if (!proto.ok()) {
    std::cerr << "flightplan_calibrate: " << proto.status().message() << "\n";
    return 2;
  }
  const PlanSpec plan = flightplan::convert::PlanFromProto(*proto);
  const PlanReport report = ComputePlan(plan);
  std::vector<Scenario> scenarios;
  for (const Scenario& s : Scenarios()) {
    if (only.empty() || std::find(only.begin(), only.end(), s.name) != only.end()) scenarios.push_back(s);
  }
  for (const std::string& name : only) {
    if (FindScenario(name) == nullptr) {
      std::cerr << "flightplan_calibrate: --scenario " << name << ": no such scenario; known:";
      for (const Scenario& s : Scenarios()) std::cerr << " " << s.name;
      std::cerr << "\n";
      return 2;
    }
  }
  std::vector<EvidenceModel> models;
  for (EvidenceModel m :
       {EvidenceModel::kLifetime, EvidenceModel::kDiscounted, EvidenceModel::kChangepoint, EvidenceModel::kFutures}) {
    if (model == "all" || model == EvidenceModelName(m)) models.push_back(m);
  }
  for (EvidenceModel m : models) {
    options.forecast.model = m;
    const absl::Time start = absl::Now();
    size_t done = 0;
    const size_t total = scenarios.size() * static_cast<size_t>(options.seeds);
    options.progress = [&](const std::string&, int) {
      std::fprintf(stderr, "\r%s: %zu/%zu runs", EvidenceModelName(m), ++done, total);
    };
    absl::StatusOr<std::vector<ScenarioCalibration>> cal = Calibrate(plan, report, scenarios, options);
    std::fprintf(stderr, "\n");
    if (!cal.ok()) {
      std::cerr << "flightplan_calibrate: " << cal.status().message() << "\n";
      return 1;
    }
    if (points) {
      for (const ScenarioCalibration& sc : *cal) {
        for (size_t r = 0; r < sc.runs.size(); ++r) {
          for (const BacktestPoint& p : sc.runs[r].points) {
            auto h = [&](absl::Time t) { return absl::ToDoubleSeconds(t - sc.runs[r].actual_finish) / 3600; };
            std::printf(
                "%-24s seed %zu  %d0%%  p10 %+7.1f  p50 %+7.1f  p90 %+7.1f  lifetime %+7.1f  left %6.1f  "
                "width %5.1f%%  winkler %6.1f%%  %s\n",
                sc.scenario.c_str(), r + 1, p.tenth, h(p.p10), h(p.p50), h(p.p90), h(p.naive_lifetime),
                p.remaining_seconds / 3600, 100 * p.width_share, 100 * p.interval_score, p.inside ? "inside" : "MISS");
          }
        }
      }
    }
    std::printf("model %s (%d seeds, %d draws, recent share %.2f, %.1f s)\n%s\n", EvidenceModelName(m), options.seeds,
                options.forecast.draws, options.forecast.recent_share, absl::ToDoubleSeconds(absl::Now() - start),
                CalibrationTable(*cal).c_str());
  }
  return 0;
}
