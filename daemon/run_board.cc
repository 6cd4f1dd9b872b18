#include "daemon/run_board.h"

#include <algorithm>

#include "forecast/forecaster.h"

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
  if (!changed.empty()) ++publishes_;
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

absl::Time RunBoard::NowOf(const RunView& view) const {
  absl::Time now = options_.events_clock ? view.state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();  // no events yet
  return now;
}

forecast::RunNodes RunBoard::NodesOf(const RunView& view) const {
  forecast::RunNodes r;
  r.run = view.name;
  r.book = view.state.node_book;
  const auto& stretches = view.state.slowdown.stretches;
  if (!stretches.empty() && stretches.back().active) r.active_stretch_node = stretches.back().node;
  r.now = NowOf(view);
  return r;
}

std::shared_ptr<const forecast::NodeLedger> RunBoard::Ledger() const {
  uint64_t publishes = 0;
  {
    absl::MutexLock lock(&runs_mu_);
    publishes = publishes_;
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&ledger_mu_);
  // Fresh enough: nothing changed since, or (on the wall clock) it is younger than
  // kLedgerMinAge, so that a daemon whose runs stream does not rebuild it per read.
  const bool unchanged =
      ledger_publishes_ == publishes || (!options_.events_clock && now - ledger_built_ < kLedgerMinAge);
  if (ledger_ != nullptr && unchanged && now - ledger_built_ < kLedgerMaxAge) return ledger_;
  std::vector<forecast::RunNodes> runs;
  for (const auto& view : List()) runs.push_back(NodesOf(*view));
  ledger_ = std::make_shared<const forecast::NodeLedger>(forecast::BuildLedger(runs));
  ledger_publishes_ = publishes;
  ledger_built_ = now;
  return ledger_;
}

RunStatus RunBoard::StatusOf(const RunView& view) const {
  const absl::Time now = NowOf(view);
  RunStatus status;
  status.run = view.name;
  status.snapshot = forecast::Snapshot(view.state, now);
  status.plan_revision = view.plan->revision;
  status.plan_name = view.plan->spec.name;
  status.target_tokens = static_cast<int64_t>(view.plan->spec.data.tokens);
  status.plan_tokens_per_second = view.plan->report.compute.tokens_per_second;
  status.plan_tokens_now = forecast::PlannedTokensAt(view.plan->prior, now);
  // The cheap part now; the simulation as last computed (never waited for), labelled with
  // how old it is.
  status.forecast = forecast::ForecastNow(view.state, view.plan->prior, now);
  const ForecastScheduler::Cached cached = forecasts_->Latest(view.name);
  if (const forecast::Simulation* sim = cached.sim.get()) {
    status.forecast = forecast::Combine(status.forecast, *sim);
    status.simulated_events = sim->events;
    status.simulated_as_of = sim->as_of;
  }
  status.forecast_stale =
      cached.sim == nullptr || cached.sim->events != view.state.events || cached.plan_revision != view.plan->revision;
  const forecast::Forecast& f = status.forecast;
  status.prices = view.plan->prior.cost;
  status.cost = forecast::CostOfRun(status.snapshot.seconds, status.prices, f.as_of, f.finish_p50, f.finish_p90);
  status.flags = forecast::PlausibilityFlags(status.snapshot, view.plan->prior);
  const forecast::ForecastPrior& prior = view.plan->prior;
  status.outage = forecast::OutageOf(view.state, prior.plan_start, prior.outage_allowance_seconds, now);
  status.checkpoints = forecast::CheckpointsOf(view.state, status.snapshot);
  if (const forecast::NodeBook* book = view.state.node_book.get()) {
    status.nodes.named = true;
    status.nodes.nodes = static_cast<uint32_t>(book->nodes.size());
    const std::shared_ptr<const forecast::NodeLedger> ledger = Ledger();
    for (const forecast::NodeRecord& r : ledger->nodes) {
      if (!r.suspect) break;  // suspects come first
      if (book->nodes.count(r.node)) status.nodes.suspects.push_back(r);
    }
  }
  return status;
}

}  // namespace flightplan::daemon
