#include "daemon/run_board.h"

#include <algorithm>

#include "forecast/forecaster.h"
#include "proto/event_convert.h"
#include "proto/plan_convert.h"

namespace flightplan::daemon {

std::shared_ptr<const RunView> RunBoard::Find(const std::string& run) const {
  absl::MutexLock lock(&runs_mu_);
  auto it = runs_.find(run);
  return it == runs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const RunView>> RunBoard::List() const {
  absl::MutexLock lock(&runs_mu_);
  std::vector<std::shared_ptr<const RunView>> out;
  out.reserve(runs_.size());
  for (const auto& [name, view] : runs_) out.push_back(view);
  return out;
}

size_t RunBoard::Count() const {
  absl::MutexLock lock(&runs_mu_);
  return runs_.size();
}

std::set<std::string> RunBoard::Publish(std::vector<std::shared_ptr<const RunView>> views) {
  std::set<std::string> changed;
  absl::MutexLock lock(&runs_mu_);
  for (std::shared_ptr<const RunView>& view : views) {
    auto it = runs_.find(view->name);
    if (it == runs_.end() || it->second->version != view->version) changed.insert(view->name);
    const std::string name = view->name;
    runs_[name] = std::move(view);
  }
  return changed;
}

uint64_t RunBoard::Subscribe(const std::string& run, std::function<void()> fn) {
  absl::MutexLock lock(&subscribers_mu_);
  const uint64_t id = next_subscriber_++;
  subscribers_[id] = {run, std::move(fn)};
  return id;
}

void RunBoard::Unsubscribe(uint64_t id) {
  absl::MutexLock lock(&subscribers_mu_);
  subscribers_.erase(id);
}

void RunBoard::Notify(const std::set<std::string>& runs) {
  absl::MutexLock lock(&subscribers_mu_);
  for (const auto& [id, sub] : subscribers_) {
    if (runs.count(sub.first)) sub.second();
  }
}

v1::RunStatus RunBoard::StatusOf(const RunView& view) const {
  absl::Time now = options_.events_clock ? view.state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();  // no events yet
  const forecast::RunSnapshot snap = forecast::Snapshot(view.state, now);
  const auto& plan = view.plan->plan;
  v1::RunStatus status =
      StatusToProto(view.name, snap, static_cast<int64_t>(plan.data().tokens()),
                    view.plan->report.compute.tokens_per_second);
  status.set_plan_revision(view.plan->revision);
  status.set_plan_name(view.plan->plan.name());
  status.mutable_progress()->set_plan_tokens(
      static_cast<int64_t>(forecast::PlannedTokensAt(view.plan->prior, now)));
  // The cheap part now; the simulation as last computed (never waited for), labelled with
  // how old it is.
  forecast::Forecast f = forecast::ForecastNow(view.state, view.plan->prior, now);
  const ForecastScheduler::Cached cached = forecasts_->Latest(view.name);
  const forecast::Simulation* sim = cached.sim.get();
  if (sim) f = forecast::Combine(f, *sim);
  ForecastToProto(f, sim ? std::max<uint64_t>(sim->events, 1) : 0, status);
  const bool stale = sim == nullptr || sim->events != view.state.events ||
                     cached.plan_revision != view.plan->revision;
  v1::Forecast* fc = status.mutable_forecast();
  fc->set_forecast_stale(stale);
  if (sim) {
    // Exact, also for a simulation of a run without events (forecast_as_of says one exists).
    fc->set_forecast_events(sim->events);
    *fc->mutable_forecast_as_of() = TimeToProto(sim->as_of);
    fc->set_forecast_age_seconds(std::max(0.0, absl::ToDoubleSeconds(f.as_of - sim->as_of)));
  }
  CostToProto(forecast::CostOfRun(snap.seconds, view.plan->prior.cost, f.as_of, f.finish_p50, f.finish_p90),
              view.plan->prior.cost, status);
  for (std::string& flag : forecast::PlausibilityFlags(snap, view.plan->prior)) status.add_flags(std::move(flag));
  return status;
}

}  // namespace flightplan::daemon
