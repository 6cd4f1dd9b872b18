// The simulator's named scenarios on the flagship plan (deploy/examples/dense-70b-10t.yaml):
// every run is one a daemon accepts, and each knob shows in the events the way its
// description says (simulator.h).
#include "forecast/simulator.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "forecast/accounting.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"
#include "tests/flagship_plan.h"

namespace flightplan::forecast {
namespace {

constexpr double kDay = 86400;

// Every test here reads the same plan.
const ::flightplan::testing::Flagship& Plan() { return ::flightplan::testing::FlagshipPlan(); }

const Scenario& Named(const char* name) {
  const Scenario* s = FindScenario(name);
  if (s == nullptr) {
    ADD_FAILURE() << "no scenario " << name;
    return Scenarios().front();
  }
  return *s;
}

std::vector<Event> Simulated(const SimulationOptions& options) {
  return SimulateRun(Plan().plan, Plan().report, options);
}

// Folds as a daemon would: duplicates (by key) skipped, refusals counted.
RunState Fold(const std::vector<Event>& events, size_t* refused = nullptr) {
  RunState s;
  std::set<std::string> keys;
  for (const Event& e : events) {
    if (!keys.insert(EventKey(e, AttemptOf(s, e))).second) continue;
    if (!ApplyEvent(s, e).ok() && refused != nullptr) ++*refused;
  }
  return s;
}

double Seconds(absl::Time t) { return absl::ToDoubleSeconds(t - Plan().report.schedule.start_time); }

bool IsInterruption(const Event& e, bool planned) { return e.kind == EventKind::kInterruption && e.planned == planned; }

// Unplanned interruptions per complete wall-clock day since the start: variance / mean.
double DailyDispersion(const std::vector<Event>& events) {
  const double days = std::floor(Seconds(events.back().time) / kDay);
  std::vector<double> counts(static_cast<size_t>(days), 0.0);
  for (const Event& e : events) {
    const double day = std::floor(Seconds(e.time) / kDay);
    if (IsInterruption(e, false) && day < days) counts[static_cast<size_t>(day)] += 1;
  }
  double mean = 0, var = 0;
  for (double c : counts) mean += c / days;
  for (double c : counts) var += (c - mean) * (c - mean) / (days - 1);
  return mean > 0 ? var / mean : 0;
}

TEST(Scenarios, NamesAreUniqueAndFound) {
  ASSERT_FALSE(Scenarios().empty());
  std::set<std::string> names;
  for (const Scenario& s : Scenarios()) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate scenario " << s.name;
    EXPECT_NE(std::string(s.description), "") << s.name;
    // The progress of a change is a share of the run.
    EXPECT_GE(s.change_at, 0) << s.name;
    EXPECT_LT(s.change_at, 1) << s.name;
    // FindScenario returns that very entry, not a copy or another with a similar name.
    EXPECT_EQ(FindScenario(s.name), &s) << s.name;
  }
  EXPECT_EQ(FindScenario("nope"), nullptr);
  EXPECT_EQ(FindScenario(""), nullptr);
  EXPECT_EQ(FindScenario("as-planned "), nullptr);  // exact names only
  EXPECT_NE(FindScenario("as-planned"), nullptr);
}

TEST(Scenarios, EveryRunIsAcceptedAndFinishes) {
  const ::flightplan::testing::Flagship& f = Plan();
  const int64_t target = static_cast<int64_t>(f.plan.data.tokens);
  for (const Scenario& sc : Scenarios()) {
    SCOPED_TRACE(sc.name);
    const std::vector<Event> events = Simulated(sc.options);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.front().kind, EventKind::kJobStarted);
    EXPECT_EQ(events.front().time, f.report.schedule.start_time);  // starts at the plan's start
    EXPECT_EQ(events.back().kind, EventKind::kRunFinished);
    size_t refused = 0;
    const RunState s = Fold(events, &refused);
    EXPECT_EQ(refused, 0u);
    EXPECT_EQ(s.phase, Phase::kFinished);
    // The lineage reaches the plan's target exactly (the last step's tokens are capped).
    EXPECT_EQ(s.tokens, target);
    // No duplicates by default: every event is its own (ids unique), and every one applied.
    std::set<std::string> ids;
    for (const Event& e : events) ids.insert(e.id);
    EXPECT_EQ(ids.size(), events.size());
    EXPECT_EQ(s.events, events.size());
    // Every crash the simulator reports is counted once; unreported ones are found by the
    // next job_started, so the state never counts fewer.
    const auto reported = static_cast<uint32_t>(
        std::count_if(events.begin(), events.end(), [](const Event& e) { return IsInterruption(e, false); }));
    if (sc.options.unreported_fraction == 0) {
      EXPECT_EQ(s.unplanned_interruptions, reported);
    } else {
      EXPECT_GT(s.unplanned_interruptions, reported);
    }
  }
}

TEST(Scenarios, ChaoticStartFailsSeveralTimesMoreBeforeThirtyPercent) {
  const Scenario& sc = Named("chaotic-start");
  ASSERT_GT(sc.options.early_until, 0);
  const std::vector<Event> events = Simulated(sc.options);
  const double target = static_cast<double>(Plan().plan.data.tokens);
  // Running seconds and unplanned interruptions, charged to the progress the run stood at
  // before each event (the simulator's hazard depends on that progress).
  double running[2] = {0, 0}, failures[2] = {0, 0};
  RunState s;
  double prev_running = 0;
  for (const Event& e : events) {
    const double progress = static_cast<double>(s.tokens) / target;
    ASSERT_TRUE(ApplyEvent(s, e).ok());
    const TimeSeconds& x = s.seconds;
    const double now_running = x.startup + x.productive + x.checkpoint + x.lost + x.stalled;
    const int part = progress < sc.options.early_until ? 0 : progress >= 0.4 ? 1 : -1;
    if (part >= 0) {
      running[part] += now_running - prev_running;
      if (IsInterruption(e, false)) failures[part] += 1;
    }
    prev_running = now_running;
  }
  ASSERT_GT(running[0], 0);
  ASSERT_GT(running[1], 0);
  // The knobs make it 8x (x8 on top of x0.5 against x0.5); at least 3x leaves room for
  // the Poisson noise of a few dozen failures after 40%.
  const double early = failures[0] / running[0], late = failures[1] / running[1];
  EXPECT_GE(early, 3 * late) << failures[0] << " in " << running[0] / 3600 << " h before 30%, " << failures[1] << " in "
                             << running[1] / 3600 << " h after 40%";
}

TEST(Scenarios, HeavyMaintenanceComesOnItsCalendar) {
  const Scenario& sc = Named("heavy-maintenance");
  const double every = sc.options.maintenance_every_days * kDay;
  const double hours = sc.options.maintenance_hours * 3600;
  ASSERT_GT(every, 0);
  const std::vector<Event> events = Simulated(sc.options);
  std::vector<double> stops, downs;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsInterruption(events[i], true)) continue;
    // On a calendar, the plan's own windows are off: every planned stop is maintenance.
    EXPECT_EQ(events[i].cause, "maintenance");
    stops.push_back(Seconds(events[i].time));
    auto next = std::find_if(events.begin() + static_cast<long>(i), events.end(),
                             [](const Event& e) { return e.kind == EventKind::kJobStarted; });
    ASSERT_NE(next, events.end());
    downs.push_back(absl::ToDoubleSeconds(next->time - events[i].time));
  }
  const double elapsed = Seconds(events.back().time);
  // One stop per calendar period that ended before the finish (the last may not have come
  // yet when the run ended before its next checkpoint).
  const double periods = std::floor(elapsed / every);
  ASSERT_GE(stops.size(), 2u);
  EXPECT_LE(static_cast<double>(stops.size()), periods);
  EXPECT_GE(static_cast<double>(stops.size()), periods - 1);
  for (size_t k = 0; k < stops.size(); ++k) {
    // Stop k (from 0) comes at the first checkpoint after the calendar's mark (k + 1) x 7 d:
    // after it, and soon after (a checkpoint interval of ~9 min, or a crash's recovery of
    // ~13 min first; 6 h is dozens of them).
    EXPECT_GE(stops[k], static_cast<double>(k + 1) * every) << k;
    EXPECT_LT(stops[k], static_cast<double>(k + 1) * every + 6 * 3600) << k;
    // So the gaps are the period give or take that phase: not always >= 7 days (a stop late
    // after its mark followed by one right at its mark is a little under 7 days apart).
    if (k > 0) {
      EXPECT_GT(stops[k] - stops[k - 1], every - 6 * 3600) << k;
      EXPECT_LT(stops[k] - stops[k - 1], every + 6 * 3600) << k;
    }
    // Down for the knob's hours (to the millisecond), then a new attempt.
    EXPECT_NEAR(downs[k], hours, 1e-3) << k;
  }
  // The accounting charges exactly that to planned downtime.
  const RunState s = Fold(events);
  EXPECT_EQ(s.planned_interruptions, stops.size());
  EXPECT_NEAR(s.seconds.down_planned, hours * static_cast<double>(stops.size()), 1e-3);
}

TEST(Scenarios, InterventionsRollBackPastTheLatestCheckpoint) {
  const Scenario& sc = Named("interventions");
  const auto back = static_cast<size_t>(sc.options.intervention_rollback_checkpoints);
  ASSERT_GT(back, 0u);
  const std::vector<Event> events = Simulated(sc.options);
  // The lineage's checkpointed steps, oldest first, as the events tell them.
  std::vector<int64_t> lineage{0};
  size_t interventions = 0;
  std::vector<double> at;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::kCheckpointSaved) lineage.push_back(e.step);
    if (e.kind == EventKind::kJobStarted) {
      while (lineage.back() > e.restored_step) lineage.pop_back();
    }
    if (!IsInterruption(e, true) || e.cause != "intervention") continue;
    ++interventions;
    at.push_back(Seconds(e.time));
    auto next = std::find_if(events.begin() + static_cast<long>(i), events.end(),
                             [](const Event& n) { return n.kind == EventKind::kJobStarted; });
    ASSERT_NE(next, events.end());
    const int64_t latest = lineage.back();
    EXPECT_LT(next->restored_step, latest) << "intervention " << interventions;
    // Exactly `back` checkpoints back (or to the start, if the lineage has fewer).
    const int64_t expected = lineage.size() > back ? lineage[lineage.size() - 1 - back] : 0;
    EXPECT_EQ(next->restored_step, expected) << "intervention " << interventions;
  }
  const double every = sc.options.intervention_every_days * kDay;
  const double periods = std::floor(Seconds(events.back().time) / every);
  EXPECT_GE(interventions, 1u);
  EXPECT_LE(static_cast<double>(interventions), periods);
  EXPECT_GE(static_cast<double>(interventions), periods - 1);
  for (size_t k = 0; k < at.size(); ++k) EXPECT_GE(at[k], static_cast<double>(k + 1) * every);
  // Every restore is to a checkpoint the run saved: the accounting rewinds exactly (no
  // interpolation flags), and the rolled-back work is lost time.
  const RunState s = Fold(events);
  EXPECT_TRUE(s.flags.empty()) << s.flags.front();
  EXPECT_GT(s.seconds.lost, 0);
}

TEST(Scenarios, BurstyFailuresAreOverdispersedAndPlannedOnesAreNot) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    SimulationOptions bursty = Named("bursty").options;
    SimulationOptions planned = Named("as-planned").options;
    bursty.seed = planned.seed = seed;
    const double d_bursty = DailyDispersion(Simulated(bursty));
    const double d_planned = DailyDispersion(Simulated(planned));
    // Poisson counts have variance = mean; bad days with x10 failures make it several
    // times that; the plan's own windows (8 h down on two days) barely move it.
    EXPECT_GT(d_bursty, 2);
    EXPECT_LT(d_planned, 2);
  }
}

TEST(Simulator, SameSeedSameRunOtherSeedOtherRun) {
  SimulationOptions o = Named("bursty").options;  // draws from both random streams
  o.seed = 7;
  const std::vector<Event> a = Simulated(o), b = Simulated(o);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].time, b[i].time);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].attempt, b[i].attempt);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    EXPECT_EQ(a[i].restored_step, b[i].restored_step);
    EXPECT_EQ(a[i].blocking_seconds, b[i].blocking_seconds);
    EXPECT_EQ(a[i].cause, b[i].cause);
    EXPECT_EQ(a[i].planned, b[i].planned);
  }
  o.seed = 8;
  const std::vector<Event> c = Simulated(o);
  // Another seed: failures at other times, so the first interruption differs.
  auto first_crash = [](const std::vector<Event>& v) {
    return std::find_if(v.begin(), v.end(), [](const Event& e) { return IsInterruption(e, false); })->time;
  };
  EXPECT_NE(first_crash(a), first_crash(c));
  EXPECT_NE(a.back().time, c.back().time);
}

}  // namespace
}  // namespace flightplan::forecast
