#include "daemon/tracker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "forecast/whatif.h"
#include "proto/event_convert.h"
#include "proto/plan_convert.h"

namespace flightplan::daemon {

Tracker::Tracker(std::unique_ptr<storage::RunStore> store, Clock* clock, IngestMetrics* metrics,
                 TrackerOptions options)
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

absl::Status Tracker::SubmitEvents(std::vector<v1::Event> events, std::function<void(BatchResult)> done,
                                   std::shared_ptr<OrderedStream> stream, uint64_t sequence) {
  return writer_->SubmitEvents(std::move(events), std::move(done), std::move(stream), sequence);
}
absl::Status Tracker::SubmitCreateRun(std::string run, v1::Plan plan, std::function<void(CreateResult)> done) {
  return writer_->SubmitCreateRun(std::move(run), std::move(plan), std::move(done));
}
absl::Status Tracker::SubmitUpdatePlan(std::string run, v1::Plan plan, std::function<void(CreateResult)> done) {
  return writer_->SubmitUpdatePlan(std::move(run), std::move(plan), std::move(done));
}
absl::Status Tracker::SubmitHistoryRead(std::string run, std::function<void(HistoryResult)> done) {
  return writer_->SubmitHistoryRead(std::move(run), std::move(done));
}
absl::Status Tracker::SubmitRunRead(std::string run, std::function<void(absl::StatusOr<RunInfo>)> done) {
  return writer_->SubmitRunRead(std::move(run), std::move(done));
}
absl::Status Tracker::SubmitRetract(std::string run, RetractSpec spec, std::function<void(RetractResult)> done) {
  return writer_->SubmitRetract(std::move(run), std::move(spec), std::move(done));
}

std::shared_ptr<const RunView> Tracker::Find(const std::string& run) const { return board_->Find(run); }
std::vector<std::shared_ptr<const RunView>> Tracker::List() const { return board_->List(); }
v1::RunStatus Tracker::StatusOf(const RunView& view) const { return board_->StatusOf(view); }
uint64_t Tracker::Subscribe(const std::string& run, std::function<void()> fn) {
  return board_->Subscribe(run, std::move(fn));
}
void Tracker::Unsubscribe(uint64_t id) { board_->Unsubscribe(id); }
size_t Tracker::QueueDepth() const { return writer_->QueueDepth(); }

std::shared_ptr<const forecast::Simulation> Tracker::LatestSimulation(const std::string& run) const {
  return forecasts_->Latest(run).sim;
}

absl::StatusOr<v1::RunStatus> Tracker::Status(const std::string& run) const {
  std::shared_ptr<const RunView> view = Find(run);
  if (!view) return absl::NotFoundError(absl::StrCat("run '", run, "' does not exist"));
  return StatusOf(*view);
}

absl::StatusOr<v1::WhatIfResponse> Tracker::WhatIf(const v1::WhatIfRequest& request) const {
  std::shared_ptr<const RunView> view = Find(request.run());
  if (!view) return absl::NotFoundError(absl::StrCat("run '", request.run(), "' does not exist"));
  absl::Time now = options_.events_clock ? view->state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();
  std::optional<absl::Time> deadline;
  if (request.has_deadline()) {
    deadline = TimeFromProto(request.deadline());
    if (*deadline <= now) {
      return absl::InvalidArgumentError(absl::StrCat("deadline ", forecast::FormatUtc(*deadline),
                                                     " is not after the run's now, ", forecast::FormatUtc(now)));
    }
  }
  std::vector<forecast::Variant> variants;
  for (int i = 0; i < request.variants_size(); ++i) {
    const v1::WhatIfVariant& in = request.variants(i);
    forecast::Variant v;
    v.name = in.name();
    if (in.has_gpus()) v.gpus = in.gpus();
    if (in.has_add_gpus()) v.add_gpus = in.add_gpus();
    if (in.has_checkpoint_interval_seconds()) v.checkpoint_interval_seconds = in.checkpoint_interval_seconds();
    if (in.has_async_checkpoint()) v.async_checkpoint = in.async_checkpoint();
    if (in.has_node_mtbf_hours()) v.node_mtbf_hours = in.node_mtbf_hours();
    if (in.has_node_mtbf_factor()) v.node_mtbf_factor = in.node_mtbf_factor();
    if (in.has_restart_seconds()) v.restart_seconds = in.restart_seconds();
    if (in.has_mfu()) v.mfu = in.mfu();
    if (!(v.gpus || v.add_gpus || v.checkpoint_interval_seconds || v.async_checkpoint || v.node_mtbf_hours ||
          v.node_mtbf_factor || v.restart_seconds || v.mfu)) {
      return absl::InvalidArgumentError(absl::StrCat("variants[", i, "] changes nothing"));
    }
    variants.push_back(std::move(v));
  }
  forecast::ForecastOptions options;
  options.draws = options_.forecast_draws;
  const std::vector<forecast::Outcome> outcomes =
      forecast::WhatIf(PlanFromProto(view->plan->plan), view->state, now, variants, deadline, options);
  v1::WhatIfResponse out;
  out.set_run(view->name);
  *out.mutable_as_of() = TimeToProto(now);
  out.set_budget_seconds(view->plan->report.failures.budget_seconds);
  auto fill = [](const forecast::Outcome& o, v1::WhatIfOutcome* p) {
    p->set_name(o.name);
    p->set_broken(o.broken);
    for (const std::string& e : o.errors) p->add_errors(e);
    if (o.broken) return;
    p->set_gpus(o.gpus);
    p->set_tokens_per_second(o.tokens_per_second);
    p->set_mtbf_seconds(o.mtbf_seconds);
    *p->mutable_finish_p10() = TimeToProto(o.finish_p10);
    *p->mutable_finish_p50() = TimeToProto(o.finish_p50);
    *p->mutable_finish_p90() = TimeToProto(o.finish_p90);
    p->set_projected_budget_seconds(o.budget_projected_seconds);
    p->set_exhaustion_probability(o.exhaustion_probability);
    p->set_deadline_probability(o.deadline_probability);
    p->set_cost_p50_dollars(o.cost_p50_dollars);
    p->set_energy_p50_mwh(o.energy_p50_mwh);
  };
  for (const forecast::Outcome& o : outcomes) fill(o, out.add_outcomes());
  if (deadline) {
    const forecast::LiveDeadlineFleet d =
        forecast::FleetForDeadline(PlanFromProto(view->plan->plan), view->state, now, *deadline, 1u << 20, options);
    v1::WhatIfDeadlineFleet* p = out.mutable_deadline_fleet();
    p->set_met(d.met);
    if (d.fleet.gpus > 0 || d.fleet.broken) fill(d.fleet, p->mutable_fleet());
    p->set_smaller_gpus(d.smaller_gpus);
    if (d.smaller_gpus > 0) *p->mutable_smaller_finish_p90() = TimeToProto(d.smaller_p90);
    p->set_explanation(d.explanation);
  }
  return out;
}

}  // namespace flightplan::daemon
