#include "exporters/run_collector.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "exporters/text_format.h"
#include "exporters/timestamp_seconds.h"
#include "text/run_figures.h"

namespace flightplan::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// The families of one scrape as prometheus-cpp's MetricFamily (Collect), each found by its
// name without a string built per series.
class FamilySink {
 public:
  // `runs`: series each family holds at least (one per run), room made at once.
  explicit FamilySink(size_t runs) : runs_(runs) {}
  void Add(std::string_view name, MetricType type, std::string_view help, const Labels& labels, double value) {
    auto it = index_.find(absl::string_view(name.data(), name.size()));
    if (it == index_.end()) {
      it = index_.emplace(std::string(name), families_.size()).first;
      families_.push_back(MetricFamily{std::string(name), std::string(help), type, {}});
      families_.back().metric.reserve(runs_);
    }
    ClientMetric m;
    for (const LabelView& l : labels) m.label.push_back({std::string(l.name), std::string(l.value)});
    if (type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    families_[it->second].metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  size_t runs_;
  std::vector<MetricFamily> families_;
  absl::flat_hash_map<std::string, size_t> index_;
};

// The same families written as text straight away (AppendText): each family's samples in a
// string of their own, in the order the families first appear, then joined under their
// heads. A scrape of 1,000 runs builds no object per series.
class TextSink {
 public:
  void Add(std::string_view name, MetricType type, std::string_view help, const Labels& labels, double value) {
    auto it = index_.find(absl::string_view(name.data(), name.size()));
    if (it == index_.end()) {
      it = index_.emplace(std::string(name), families_.size()).first;
      families_.push_back({std::string(name), std::string(help), type, {}});
    }
    Family& f = families_[it->second];
    AppendSample(f.samples, f.name, labels, value);
  }
  void AppendTo(std::string& out) const {
    size_t bytes = 0;
    for (const Family& f : families_) bytes += f.samples.size() + f.name.size() + f.help.size() + 32;
    out.reserve(out.size() + bytes);
    for (const Family& f : families_) {
      AppendFamilyHead(out, f.name, f.help, f.type);
      out += f.samples;
    }
  }

 private:
  struct Family {
    std::string name, help;
    MetricType type;
    std::string samples;
  };
  std::vector<Family> families_;
  absl::flat_hash_map<std::string, size_t> index_;
};

constexpr MetricType kGauge = MetricType::Gauge;
constexpr char kMtbfHelp[] =
    "Mean time between unplanned interruptions of the job: observed (absent before the first), the "
    "plan's, and the posterior the forecast uses.";
constexpr char kIntervalHelp[] =
    "Checkpoint interval: Daly's advice for the observed save cost and MTBF, the plan's, and the observed "
    "cadence between saves.";
constexpr MetricType kCounter = MetricType::Counter;

// Every run's series, to either sink, in one order.
template <typename Sink>
void Emit(const std::vector<v1::RunStatus>& statuses, uint32_t max_causes, Sink& f) {
  for (const v1::RunStatus& s : statuses) {
    const LabelView run{"run", s.run()};
    // The views live to the end of the f.Add(...) they are written in.
    auto with = [&](std::string_view name, std::string_view value) { return Labels{run, {name, value}}; };
    const v1::Progress& p = s.progress();
    f.Add("flightplan_progress_tokens", kGauge,
          "Tokens of the run's lineage that still count (rolled-back steps excluded).", {run},
          static_cast<double>(p.tokens()));
    f.Add("flightplan_plan_progress_tokens", kGauge,
          "Where the plan says progress should be now: the target spread evenly over the planned "
          "schedule (the burn-down's line).",
          {run}, static_cast<double>(p.plan_tokens()));
    f.Add("flightplan_target_tokens", kGauge, "The run's training target, tokens.", {run},
          static_cast<double>(p.target_tokens()));
    f.Add("flightplan_step_report_age_seconds", kGauge,
          "Seconds since the latest step report (a stall shows as this growing past the usual "
          "interval).",
          {run}, p.seconds_since_step());
    f.Add("flightplan_step_report_interval_seconds", kGauge,
          "The usual seconds between step reports while running (0 until known).", {run},
          p.usual_report_interval_seconds());
    if (s.has_last_event_time()) {
      f.Add("flightplan_last_event_timestamp_seconds", kGauge, "Unix time of the run's latest event.", {run},
            Seconds(s.last_event_time()));
    }
    for (const char* state : {"new", "starting", "running", "down", "finished"}) {
      f.Add("flightplan_run_state", kGauge, "1 for the run's current state, else 0.", with("state", state),
            s.state() == state ? 1 : 0);
    }
    f.Add("flightplan_outage_seconds", kGauge,
          "Seconds the run has not trained when it should: since its latest unplanned stop while down (no "
          "relaunch yet), or since the plan's start while it never started; 0 otherwise.",
          {run}, s.outage().seconds());
    f.Add("flightplan_outage_allowance_seconds", kGauge,
          "The outage the plan allows a relaunch before a page: max(detect + restart, 15 minutes).", {run},
          s.outage().allowance_seconds());

    const v1::TimeSeconds& t = s.time_seconds();
    for (const text::TimeCategory& c : text::TimeCategories(t)) {
      f.Add("flightplan_time_seconds", kGauge,
            "Wall time of the run by category; the categories add up to the elapsed time. A "
            "gauge: a restore moves productive time to lost.",
            with("category", c.name), c.seconds);
    }
    // The label limit: the first max_causes_ distinct causes keep their label.
    std::vector<std::string> labelled;
    std::map<std::pair<std::string, bool>, double> counts;  // (cause label, planned)
    for (const v1::InterruptionCount& i : s.interruptions()) {
      const bool known = std::find(labelled.begin(), labelled.end(), i.cause()) != labelled.end();
      if (!known && labelled.size() < max_causes) labelled.push_back(i.cause());
      const bool own = known || (!labelled.empty() && labelled.back() == i.cause());
      counts[{own ? i.cause() : std::string("other"), i.planned()}] += static_cast<double>(i.count());
    }
    for (const auto& [key, count] : counts) {
      f.Add("flightplan_interruptions_total", kCounter,
            "Interruptions of the run by cause; planned ones are charged to availability, not "
            "the failure budget.",
            {run, {"cause", key.first}, {"planned", key.second ? "true" : "false"}}, count);
    }

    const v1::Forecast& fc = s.forecast();
    // `percentile`, not `quantile`: Prometheus reserves that label for summaries
    // (docs/contract.md §7; promtool check metrics refuses it on a gauge).
    const std::pair<const char*, const google::protobuf::Timestamp*> percentiles[] = {
        {"10", fc.has_finish_p10() ? &fc.finish_p10() : nullptr},
        {"50", fc.has_finish_p50() ? &fc.finish_p50() : nullptr},
        {"90", fc.has_finish_p90() ? &fc.finish_p90() : nullptr}};
    for (const auto& [q, ts] : percentiles) {
      if (ts == nullptr) continue;
      f.Add("flightplan_forecast_finish_timestamp_seconds", kGauge,
            "Forecast finish, Unix time, at the percentile (P10/P50/P90 of a Monte Carlo over "
            "throughput, interruptions and their losses).",
            with("percentile", q), Seconds(*ts));
    }
    // The two futures (docs/contract.md §10): their median finish under a `future` label of
    // their own (no `percentile`, so a selector on percentile="50" still finds one series).
    for (const v1::Future& fu : s.futures()) {
      f.Add("flightplan_forecast_finish_timestamp_seconds", kGauge,
            "Forecast finish, Unix time, at the percentile (P10/P50/P90 of a Monte Carlo over "
            "throughput, interruptions and their losses).",
            with("future", fu.name()), Seconds(fu.finish_p50()));
      f.Add("flightplan_forecast_future_weight_ratio", kGauge,
            "Share of the forecast's draws in each future: recent (the last days continue) or plan "
            "(the run returns to its plan).",
            with("future", fu.name()), fu.weight());
      f.Add("flightplan_forecast_future_budget_at_finish_seconds", kGauge,
            "Failure budget consumed at the finish in each future: consumed so far plus the median "
            "loss still to come, seconds.",
            with("future", fu.name()), fu.budget_at_finish_seconds());
    }
    const v1::RunCost& cost = s.cost();
    for (const v1::CategoryCost& c : cost.categories()) {
      f.Add("flightplan_cost_dollars", kGauge,
            "What the run has cost so far by time category: the reserved fleet's GPU-hours at the "
            "plan's price plus energy at its price, dollars (0 without a price in the plan).",
            with("category", c.category()), c.dollars());
      f.Add("flightplan_energy_joules", kGauge,
            "Facility energy the run has drawn so far by time category: the plan's training power "
            "while the job runs, its idle power while down, joules.",
            with("category", c.category()), c.energy_joules());
    }
    if (cost.categories_size() > 0) {
      for (const auto& [q, dollars] :
           {std::pair<const char*, double>{"50", cost.projected_dollars_p50()}, {"90", cost.projected_dollars_p90()}}) {
        f.Add("flightplan_forecast_cost_dollars", kGauge,
              "What the run will have cost at the forecast finish percentile: spent, plus the fleet "
              "and its training draw until then, dollars.",
              with("percentile", q), dollars);
      }
    }
    f.Add("flightplan_forecast_stale", kGauge,
          "1 while the simulated forecast (finish, projected budget, P(exhausted)) is older "
          "than the run's events or plan shown with it; a newer one is being computed.",
          {run}, fc.forecast_stale() ? 1 : 0);
    if (fc.has_forecast_as_of()) {
      f.Add("flightplan_forecast_age_seconds", kGauge,
            "The run's time between the simulated forecast and the state shown with it, seconds.", {run},
            fc.forecast_age_seconds());
    }
    if (fc.has_plan_finish()) {
      f.Add("flightplan_plan_finish_timestamp_seconds", kGauge,
            "The plan's committed finish (contingency and the P90 failure budget in it), Unix time.", {run},
            Seconds(fc.plan_finish()));
    }
    if (fc.has_plan_expected_finish()) {
      f.Add("flightplan_plan_expected_finish_timestamp_seconds", kGauge,
            "The plan's expected (P50) finish, which the slip is measured against, Unix time.", {run},
            Seconds(fc.plan_expected_finish()));
    }
    if (fc.has_deadline()) {
      f.Add("flightplan_deadline_timestamp_seconds", kGauge, "The plan's deadline, Unix time.", {run},
            Seconds(fc.deadline()));
      f.Add("flightplan_forecast_deadline_probability", kGauge, "Probability that the run finishes by its deadline.",
            {run}, fc.deadline_probability());
    }
    if (fc.has_finish_p50()) {
      f.Add("flightplan_forecast_slip_seconds", kGauge,
            "Forecast P50 finish minus the plan's expected (P50) finish, seconds (positive: late).", {run},
            fc.slip_seconds());
    }

    const v1::FailureBudget& b = s.failure_budget();
    f.Add("flightplan_failure_budget_seconds", kGauge,
          "The plan's failure budget: the budget_quantile of interruptions times the loss per "
          "interruption, seconds.",
          {run}, b.budget_seconds());
    f.Add("flightplan_failure_budget_consumed_seconds", kGauge,
          "Failure budget consumed: lost work, unplanned downtime, stalls and restarts after "
          "unplanned stops, seconds, charged as it happens. A gauge: when the first report "
          "after a restart shows how much of the restart was already training, that share "
          "moves from the budget to productive time.",
          {run}, b.consumed_seconds());
    if (b.has_exhausted_at()) {
      f.Add("flightplan_failure_budget_exhausted_timestamp_seconds", kGauge,
            "When the failure budget runs out at the current burn (in the past once spent), "
            "Unix time.",
            {run}, Seconds(b.exhausted_at()));
    }
    f.Add("flightplan_plan_schedule_seconds", kGauge,
          "The plan's whole schedule, seconds: burn rates compare the budget's share used with "
          "the share of this that passed.",
          {run}, b.schedule_seconds());
    f.Add("flightplan_failure_budget_remaining_seconds", kGauge,
          "Failure budget left, seconds (negative once overspent).", {run}, b.remaining_seconds());
    const std::pair<const char*, double> burns[] = {{"total", b.burn_rate()},
                                                    {"1h", b.burn_rate_1h()},
                                                    {"6h", b.burn_rate_6h()},
                                                    {"1d", b.burn_rate_1d()},
                                                    {"3d", b.burn_rate_3d()}};
    for (const auto& [window, rate] : burns) {
      f.Add("flightplan_failure_budget_burn_rate", kGauge,
            "Share of the failure budget used over the window divided by the share of the "
            "planned schedule the window is; 1 = on plan ('total': since the start).",
            with("window", window), rate);
    }
    if (b.burn_rate_ceiling() > 0) {
      f.Add("flightplan_failure_budget_burn_rate_ceiling", kGauge,
            "The highest burn rate a window can show: planned schedule / failure budget (the job down the whole "
            "window). The alert rules' thresholds are shares of it.",
            {run}, b.burn_rate_ceiling());
    }
    f.Add("flightplan_failure_budget_projected_seconds", kGauge,
          "Failure budget projected to be used by the finish (consumed plus the median loss to "
          "come), seconds.",
          {run}, b.projected_at_finish_seconds());
    f.Add("flightplan_failure_budget_exhaustion_probability", kGauge,
          "Probability that the failure budget runs out before the finish.", {run}, b.exhaustion_probability());

    // Slowdowns on the run's own pace (docs/contract.md §5).
    const v1::Slowdown& sd = s.slowdown();
    f.Add("flightplan_slowdown_seconds", kGauge,
          "What the run's slowdowns have cost so far: the time beyond what the same tokens would have taken at "
          "its own sustained pace, seconds.",
          {run}, sd.seconds());
    f.Add("flightplan_slowdown_projected_seconds", kGauge,
          "The slowdowns' cost by the finish if the active one continues (their cost so far without one), "
          "seconds.",
          {run}, sd.projected_seconds());
    f.Add("flightplan_slowdown_active", kGauge, "1 while a slowdown on the run's own pace is found and not over.",
          {run}, sd.active() ? 1 : 0);
    f.Add("flightplan_slowdown_factor", kGauge,
          "The active (else the latest) slowdown's time per token over the run's own pace (1.05: 5% slower); "
          "1 before the first.",
          {run}, sd.factor());
    if (sd.rank_spread() > 0) {
      static const char* const kSpreadHelp =
          "The slowest rank's compute time over the fastest's, minus 1, where the training reports it (Megatron's "
          "timers): at the latest report, and as usual. A straggler widens it.";
      f.Add("flightplan_rank_spread_ratio", kGauge, kSpreadHelp, with("kind", "latest"), sd.rank_spread());
      f.Add("flightplan_rank_spread_ratio", kGauge, kSpreadHelp, with("kind", "typical"), sd.typical_rank_spread());
    }
    for (const v1::WindowRatio& w : sd.throughput_ratio()) {
      f.Add("flightplan_throughput_ratio", kGauge,
            "Tokens per productive second over the window against the run's own sustained pace (1: its own "
            "pace; 0.95: 5% slower). Absent until that pace is known.",
            with("window", w.window()), w.ratio());
    }

    const v1::Reliability& r = s.reliability();
    f.Add("flightplan_goodput_ratio", kGauge,
          "Productive time over elapsed time, the windows an operator excluded left out of both.", {run}, r.goodput());
    // MFU, end to end over productive time; absent until the plan and the run give one.
    constexpr char kMfuHelp[] =
        "Model FLOPs utilisation, end to end: the plan's model FLOPs per token x tokens per productive "
        "second / (the plan's GPUs x peak FLOP/s), over the run (lifetime) or the last hour (1h).";
    if (s.mfu().lifetime() > 0)
      f.Add("flightplan_mfu_ratio", kGauge, kMfuHelp, with("window", "lifetime"), s.mfu().lifetime());
    if (s.mfu().last_hour() > 0)
      f.Add("flightplan_mfu_ratio", kGauge, kMfuHelp, with("window", "1h"), s.mfu().last_hour());
    // Absent before the first unplanned interruption: no failure seen is no MTBF (a 0 would
    // read as a failure every instant).
    if (r.observed_mtbf_seconds() > 0) {
      f.Add("flightplan_mtbf_seconds", kGauge, kMtbfHelp, with("kind", "observed"), r.observed_mtbf_seconds());
    }
    f.Add("flightplan_mtbf_seconds", kGauge, kMtbfHelp, with("kind", "plan"), r.plan_mtbf_seconds());
    f.Add("flightplan_mtbf_seconds", kGauge, kMtbfHelp, with("kind", "posterior"), r.posterior_mtbf_seconds());
    f.Add("flightplan_loss_per_interruption_seconds", kGauge,
          "Mean failure budget consumed per unplanned interruption (the plan's until one is seen).", {run},
          r.mean_loss_per_interruption_seconds());
    f.Add("flightplan_checkpoint_interval_seconds", kGauge, kIntervalHelp, with("kind", "recommended"),
          r.recommended_checkpoint_interval_seconds());
    f.Add("flightplan_checkpoint_interval_seconds", kGauge, kIntervalHelp, with("kind", "plan"),
          r.plan_checkpoint_interval_seconds());
    if (r.observed_checkpoint_interval_seconds() > 0) {
      f.Add("flightplan_checkpoint_interval_seconds", kGauge, kIntervalHelp, with("kind", "observed"),
            r.observed_checkpoint_interval_seconds());
    }
    if (r.has_last_checkpoint_time()) {
      f.Add("flightplan_last_checkpoint_timestamp_seconds", kGauge, "Unix time of the run's latest durable checkpoint.",
            {run}, Seconds(r.last_checkpoint_time()));
    }
    f.Add("flightplan_unsaved_work_seconds", kGauge,
          "Productive seconds since the lineage's newest checkpoint: what a failure now would lose.", {run},
          r.unsaved_work_seconds());

    const v1::Throughput& tp = s.throughput();
    const std::pair<const char*, double> rates[] = {{"lifetime", tp.tokens_per_second()},
                                                    {"recent", tp.recent_tokens_per_second()},
                                                    {"plan", tp.plan_tokens_per_second()},
                                                    {"forecast", fc.forecast_tokens_per_second()}};
    for (const auto& [kind, rate] : rates) {
      f.Add("flightplan_throughput_tokens_per_second", kGauge,
            "Tokens per productive second: over the run, over the last hour, the plan's, and "
            "what the forecast assumes.",
            with("kind", kind), rate);
    }
  }
}

}  // namespace

std::vector<MetricFamily> RunCollector::Collect() const {
  const std::vector<v1::RunStatus> statuses = source_();
  FamilySink f(statuses.size());
  Emit(statuses, max_causes_, f);
  return f.Take();
}

void RunCollector::AppendText(std::string& out) const {
  TextSink f;
  Emit(source_(), max_causes_, f);
  f.AppendTo(out);
}

}  // namespace flightplan::exporters
