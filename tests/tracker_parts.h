// Helpers of the tracker's parts' unit tests: a fake Clock, runs folded from the
// simulator's events, and a ForecastScheduler whose hooks record what it does.
#ifndef FLIGHTPLAN_TESTS_TRACKER_PARTS_H_
#define FLIGHTPLAN_TESTS_TRACKER_PARTS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daemon/forecast_scheduler.h"
#include "forecast/simulator.h"
#include "gtest/gtest.h"
#include "tests/flagship_plan.h"

namespace flightplan::daemon {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time t) : now_(t) {}
  absl::Time Now() override { return now_; }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_;
};

// The flagship run folded up to `events` of the simulator's events.
inline std::shared_ptr<const RunView> View(const std::string& name, size_t events, uint64_t version = 1) {
  const testing::Flagship& f = testing::FlagshipPlan();
  static const std::vector<forecast::Event>* const log = [] {
    forecast::SimulationOptions o;
    o.seed = 7;
    o.target_reports = 400;
    return new std::vector<forecast::Event>(
        forecast::SimulateRun(testing::FlagshipPlan().plan, testing::FlagshipPlan().report, o));
  }();
  auto plan = std::make_shared<RunPlan>();
  plan->revision = 1;
  plan->report = f.report;
  plan->prior = f.prior;
  auto view = std::make_shared<RunView>();
  view->id = 1;
  view->name = name;
  view->plan = plan;
  view->version = version;
  for (size_t i = 0; i < events && i < log->size(); ++i) EXPECT_TRUE(forecast::ApplyEvent(view->state, (*log)[i]).ok());
  return view;
}

struct Harness {
  TrackerOptions options;
  FakeClock clock{absl::FromUnixSeconds(1'800'000'000)};
  std::map<std::string, std::shared_ptr<const RunView>> runs;
  std::vector<std::pair<std::string, absl::Time>> points;  // run, as of
  std::vector<std::string> simulated;
  size_t backlog = 0;
  // When set, what the scheduler finds instead of `runs` (a writer publishing mid-turn).
  std::function<std::shared_ptr<const RunView>(const std::string&)> find_override;
  std::unique_ptr<ForecastScheduler> scheduler;

  explicit Harness(bool events_clock) {
    options.events_clock = events_clock;
    options.forecast_draws = 50;
    options.backfill_draws = 20;
    options.forecast_min_interval = absl::Seconds(1);
    options.forecast_refresh = absl::Seconds(30);
    ForecastScheduler::Hooks hooks;
    hooks.find = [this](const std::string& run) -> std::shared_ptr<const RunView> {
      if (find_override) return find_override(run);
      auto it = runs.find(run);
      return it == runs.end() ? nullptr : it->second;
    };
    hooks.offer_point = [this](int64_t, uint64_t, const storage::ForecastPoint& p) {
      points.emplace_back("", p.as_of);
    };
    hooks.writer_backlog = [this] { return backlog; };
    hooks.simulated = [this](const std::string& run) { simulated.push_back(run); };
    scheduler = std::make_unique<ForecastScheduler>(options, &clock, std::move(hooks));
  }
};

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_TESTS_TRACKER_PARTS_H_
