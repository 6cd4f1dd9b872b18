#include "daemon/tracker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "forecast/whatif.h"

namespace flightplan::daemon {

Tracker::Tracker(std::unique_ptr<storage::RunStore> store, Clock* clock, IngestMetrics* metrics, TrackerOptions options)
    : options_(options), clock_(clock) {
  ForecastScheduler::Hooks hooks;
  hooks.find = [this](const std::string& run) { return board_->Find(run); };
  hooks.offer_point = [this](int64_t run_id, uint64_t version, const storage::ForecastPoint& point) {
    writer_->OfferForecastPoint(run_id, version, point);
  };
  hooks.writer_backlog = [this] { return writer_->QueueDepth(); };
  hooks.simulated = [this](const std::string& run) { board_->Notify({run}); };
  forecasts_ = std::make_unique<ForecastScheduler>(options_, clock_, std::move(hooks));
  board_ = std::make_unique<RunBoard>(options_, clock_, forecasts_.get());
  writer_ = std::make_unique<IngestWriter>(std::move(store), options_, clock_, metrics, board_.get(), forecasts_.get());
}

absl::StatusOr<std::unique_ptr<Tracker>> Tracker::Start(std::unique_ptr<storage::RunStore> store, Clock* clock,
                                                        IngestMetrics* metrics, TrackerOptions options) {
  std::unique_ptr<Tracker> t(new Tracker(std::move(store), clock, metrics, options));
  if (absl::Status st = t->writer_->Recover(); !st.ok()) return st;
  t->writer_->Start();
  t->forecasts_->Start();
  for (const auto& view : t->List()) t->forecasts_->MarkDue(view->name);
  return t;
}

Tracker::~Tracker() { Stop(); }

void Tracker::Stop() {
  std::call_once(stopped_, [this] {
    // The forecaster first: its last history points reach the writer before it drains.
    forecasts_->Stop();
    writer_->Stop();
  });
}

absl::Status Tracker::SubmitEvents(std::vector<IngestEvent> events, std::function<void(BatchResult)> done,
                                   std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  return writer_->SubmitEvents(std::move(events), std::move(done), std::move(stream), sequence);
}
absl::Status Tracker::SubmitCreateRun(std::string run, PlanInput plan, std::function<void(CreateResult)> done) {
  return writer_->SubmitCreateRun(std::move(run), std::move(plan), std::move(done));
}
absl::Status Tracker::SubmitUpdatePlan(std::string run, PlanInput plan, std::function<void(CreateResult)> done) {
  return writer_->SubmitUpdatePlan(std::move(run), std::move(plan), std::move(done));
}
absl::Status Tracker::SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done) {
  return writer_->SubmitHistoryRead(std::move(run), std::move(done));
}
absl::Status Tracker::SubmitRunRead(std::string run, std::function<void(absl::StatusOr<RunInfo>)> done,
                                    bool with_events) {
  return writer_->SubmitRunRead(std::move(run), std::move(done), with_events);
}
absl::Status Tracker::SubmitRetract(std::string run, RetractSpec spec, std::function<void(RetractResult)> done) {
  return writer_->SubmitRetract(std::move(run), std::move(spec), std::move(done));
}

std::shared_ptr<const RunView> Tracker::Find(const std::string& run) const { return board_->Find(run); }
std::vector<std::shared_ptr<const RunView>> Tracker::List() const { return board_->List(); }
RunStatus Tracker::StatusOf(const RunView& view) const { return board_->StatusOf(view); }
uint64_t Tracker::Subscribe(const std::string& run, std::function<void()> fn) {
  return board_->Subscribe(run, std::move(fn));
}
void Tracker::Unsubscribe(uint64_t id) { board_->Unsubscribe(id); }
size_t Tracker::QueueDepth() const { return writer_->QueueDepth(); }

std::shared_ptr<const forecast::Simulation> Tracker::LatestSimulation(const std::string& run) const {
  return forecasts_->Latest(run).sim;
}

absl::StatusOr<RunStatus> Tracker::Status(const std::string& run) const {
  std::shared_ptr<const RunView> view = Find(run);
  if (!view) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  return StatusOf(*view);
}

absl::StatusOr<std::shared_ptr<const forecast::NodeLedger>> Tracker::Nodes(const std::string& run) const {
  std::shared_ptr<const forecast::NodeLedger> ledger = board_->Ledger();
  if (run.empty()) return ledger;
  std::shared_ptr<const RunView> view = Find(run);
  if (!view) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  auto out = std::make_shared<forecast::NodeLedger>();
  *out = *ledger;  // the fleet's figures; its nodes, only the run's
  out->nodes.clear();
  if (const forecast::NodeBook* book = view->state.node_book.get()) {
    for (const forecast::NodeRecord& r : ledger->nodes) {
      if (book->nodes.count(r.node)) out->nodes.push_back(r);
    }
  }
  return std::shared_ptr<const forecast::NodeLedger>(std::move(out));
}

namespace {

// The variant that leaves `nodes` out of `view`'s run: its failure rate ahead times the
// share of its failures that were not those nodes' excess over the fleet's rate (at least
// one failure's worth is left: no evidence says a run will not fail at all).
absl::StatusOr<forecast::Variant> ExcludeVariant(const RunView& view, const std::vector<std::string>& nodes,
                                                 const forecast::NodeLedger& ledger, absl::Time now) {
  const forecast::NodeBook* book = view.state.node_book.get();
  if (book == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("exclude_nodes: run '", view.name,
                     "' has no node attribution (its events name no nodes: JobStarted.nodes, Interruption.nodes)"));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!book->nodes.count(nodes[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("exclude_nodes[", i, "] '", nodes[i], "': run '", view.name, "' never held or named it"));
    }
  }
  const double failures = view.state.unplanned_interruptions;
  const double excess = forecast::ExcessFailures(*book, nodes, ledger.fleet_rate_per_hour, now);
  forecast::Variant v;
  v.name = absl::StrCat("without ", absl::StrJoin(nodes, ","),
                        absl::StrFormat(" (%.1f of %.0f failures in excess)", excess, failures));
  v.node_mtbf_factor = failures > 0 ? failures / std::max(failures - excess, 1.0) : 1.0;
  return v;
}

}  // namespace

absl::StatusOr<WhatIfAnswer> Tracker::WhatIf(const WhatIfQuery& query) const {
  std::shared_ptr<const RunView> view = Find(query.run);
  if (!view) return absl::NotFoundError(absl::StrCat("run '", query.run, "' does not exist"));
  absl::Time now = options_.events_clock ? view->state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();
  if (query.deadline && *query.deadline <= now) {
    return absl::InvalidArgumentError(absl::StrCat("deadline ", forecast::FormatUtc(*query.deadline),
                                                   " is not after the run's now, ", forecast::FormatUtc(now)));
  }
  std::vector<forecast::Variant> variants = query.variants;
  if (!query.exclude_nodes.empty()) {
    absl::StatusOr<forecast::Variant> v = ExcludeVariant(*view, query.exclude_nodes, *board_->Ledger(), now);
    if (!v.ok()) return v.status();
    variants.push_back(*std::move(v));
  }
  forecast::ForecastOptions options;
  options.draws = options_.forecast_draws;
  options.bad_period_law = options_.bad_period_law;
  WhatIfAnswer out;
  out.run = view->name;
  out.as_of = now;
  out.budget_seconds = view->plan->report.failures.budget_seconds;
  out.outcomes = forecast::WhatIf(view->plan->spec, view->state, now, variants, query.deadline, options);
  if (query.deadline) {
    out.deadline_fleet =
        forecast::FleetForDeadline(view->plan->spec, view->state, now, *query.deadline, 1u << 20, options);
  }
  return out;
}

}  // namespace flightplan::daemon
