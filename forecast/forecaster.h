// The forecaster (docs/contract.md §6): from the plan (the prior) and the run so far (the
// evidence), when the run will finish (P10/P50/P90 by Monte Carlo) and how its failure
// budget stands.
//
// Pure: no I/O, no clock (`now` is a parameter), deterministic for a given history (the
// random draws are seeded from it). Thread-safe.
#ifndef FLIGHTPLAN_FORECAST_FORECASTER_H_
#define FLIGHTPLAN_FORECAST_FORECASTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "forecast/accounting.h"
#include "planner/plan.h"

namespace flightplan::forecast {

// The planner's plan and report, which the forecaster takes as its prior.
using planner::PlanReport;
using planner::PlanSpec;

// What the forecaster takes from the plan.
struct ForecastPrior {
  int64_t target_tokens = 0;
  absl::Time plan_start = absl::UnixEpoch();
  absl::Time plan_finish = absl::UnixEpoch();           // committed: the deadline's and the alerts'
  absl::Time plan_expected_finish = absl::UnixEpoch();  // the plan's P50, which the slip is against
  std::optional<absl::Time> deadline;
  double plan_tokens_per_second = 0;
  double peak_tokens_per_second = 0;     // the fleet at 100% MFU (0: unknown)
  uint32_t gpus_per_node = 0;            // the plan's fleet.gpus / fleet.nodes (0: unknown)
  uint32_t plan_gpus = 0;                // the plan's fleet.gpus (0: unknown)
  double flops_per_token = 0;            // the plan's model FLOPs per token (MFU's numerator)
  double peak_flops_per_gpu = 0;         // hardware.peak_flops (MFU's denominator, per GPU)
  double outage_allowance_seconds = 0;   // OutageAllowanceSeconds of the plan's detect and restart
  double plan_total_seconds = 0;         // the whole schedule
  double plan_active_seconds = 0;        // active compute
  double plan_checkpoint_seconds = 0;    // checkpoint overhead over the run
  double plan_availability_seconds = 0;  // planned downtime over the run
  double plan_custom_seconds = 0;        // deliberate work over the run (schedule.custom_fraction)
  // Nodes the plan holds in reserve (fleet.spare_nodes) and a failed node's mean time out
  // (failures.spare_repair_hours, the planner's default when not given): the return of a
  // run that launched on fewer GPUs to full size.
  uint32_t spare_nodes = 0;
  double node_repair_seconds = 0;
  double budget_seconds = 0;  // the failure budget
  double job_mtbf_seconds = 0;
  double loss_per_interruption_seconds = 0;
  double checkpoint_blocking_seconds = 0;
  double checkpoint_interval_seconds = 0;
  // The team's time to find and fix a slowdown (failures.slowdown_fix_hours); 0: unknown.
  double slowdown_fix_seconds = 0;
  // The team's time to find and fix a crisis of failures (failures.crisis_fix_days); 0:
  // unknown. Read only by the law for the end of a bad period (ForecastOptions::bad_period_law).
  double crisis_fix_seconds = 0;
  // A revised plan (flightplan create --update) governs the work from `revised_at` on.
  // Until the run has shown its own rate under it, the rate it showed before is scaled by
  // `revision_rate_scale`, the new plan's tokens per second over the old one's (a fleet
  // twice as large: twice the rate), then the rate since the revision takes over.
  std::optional<absl::Time> revised_at;
  double revision_rate_scale = 1;
  // A plan in phases (PlanReport::phases): where each ends in tokens and in the schedule's
  // seconds from the start, and its rate. Empty: one rate, a straight plan line.
  struct Phase {
    double tokens_end = 0, schedule_end_seconds = 0, tokens_per_second = 0;
  };
  std::vector<Phase> phases;
  // A change to the run from now on (flightplan whatif): what the forecaster believes of the
  // run (its evidence where it has shown some, the plan where not) moved by the change as the
  // planner computes it: throughput and the failure rate scaled by the changed plan's over
  // the plan's, each loss shifted by the difference in loss per interruption, checkpoint
  // overhead scaled by the ratio of overhead per compute second. Identity by default.
  struct Change {
    double rate_scale = 1, failure_scale = 1, loss_shift_seconds = 0, checkpoint_scale = 1;
    // Set: the failure rate ahead is this (incidents per running second), whatever the run
    // has shown (an operator who types an MTBF means that MTBF ahead); failure_scale then
    // does not apply.
    std::optional<double> failure_rate_ahead;
  } change;
  // Prices and power for the run's cost (the plan's cost section and power model).
  struct Cost {
    double gpu_hour_dollars = 0, energy_dollars_per_mwh = 0, reserved_gpus = 0, training_watts = 0, idle_watts = 0;
  } cost;
};
[[nodiscard]] ForecastPrior PriorFromPlan(const PlanSpec& plan, const PlanReport& report);
// The fold's settings from the plan (FoldSettings): its phases' ends where the rate changes by
// more than 1%, and a revision's start when it changed the rate by more than 1%.
[[nodiscard]] FoldSettings FoldSettingsFor(const ForecastPrior& prior, uint32_t max_causes = kMaxStatusCauses);

// What a run has cost so far, by time category, and what it will cost at a finish: the
// reserved fleet is paid for every second since the first event; it draws the training
// power while the job runs (productive, checkpoint, lost, startup, stalled) and the idle
// power while it is down. Projections add the fleet and its training draw from `as_of` to
// each finish.
struct RunCost {
  struct Category {
    std::string name;
    double dollars = 0, joules = 0;
  };
  std::vector<Category> categories;  // in TimeSeconds order
  double spent_dollars = 0, badput_dollars = 0, energy_joules = 0;
  double projected_dollars_p50 = 0, projected_dollars_p90 = 0;
};
[[nodiscard]] RunCost CostOfRun(const TimeSeconds& seconds, const ForecastPrior::Cost& cost, absl::Time as_of,
                                absl::Time finish_p50, absl::Time finish_p90);

// Where the plan says progress should be at `t`: the target spread over the schedule,
// phase by phase (each phase's tokens over its span), 0 before the start.
[[nodiscard]] double PlannedTokensAt(const ForecastPrior& prior, absl::Time t);

// Seconds of active compute the plan gives to the tokens in [from, to), phase by phase
// (without phases: at the one plan rate).
[[nodiscard]] double PlannedActiveSeconds(const ForecastPrior& prior, double from, double to);

// How the failure process (interruption rate, loss per incident) and the planned overhead
// (maintenance, deliberate restarts) ahead are estimated from the run so far. docs/forecasting.md's
// calibration section has the backtest figures of each.
enum class EvidenceModel {
  // The whole history weighs equally (a Gamma-Poisson rate with the plan as a prior, a
  // bootstrap of the observed losses); planned downtime ahead as the plan allots. The
  // forecaster before issue 11, kept as the baseline of the backtests.
  kLifetime,
  // Discounted Gamma-Poisson: old exposure, counts and overhead lose half their weight
  // every `recent_share` of the elapsed time.
  kDiscounted,
  // Two regimes for failures and losses, "the past continues" (lifetime) and "the recent
  // regime continues" (the last `recent_share` of the elapsed time), weighted by the
  // posterior probability of a change between them (an exact Gamma-Poisson Bayes factor,
  // tempered by overdispersion); each draw picks a regime, so the P10..P90 covers both
  // while they disagree. A throughput trend regime (BIC against a constant and a step);
  // planned overhead from the evidence, censored and phased. The default of issue 11.
  kChangepoint,
  // kChangepoint, and an excess of failures over the plan read as a crisis that will be
  // fixed with the probability CrisisProbability gives, after a time drawn from how long
  // it has lasted (the "plan" future); the two futures are reported. The default.
  kFutures,
};
[[nodiscard]] const char* EvidenceModelName(EvidenceModel model);

struct ForecastOptions {
  int draws = 2000;
  EvidenceModel model = EvidenceModel::kFutures;
  // The recent window (kChangepoint, kFutures) or half-life (kDiscounted), as a share of the time
  // elapsed: scale-free, so a week-old run and a three-month one are read alike.
  double recent_share = 0.25;
  // While a slowdown is active (RunStatus.slowdown), the throughput ahead is a mixture of "it
  // persists" and "it is found and fixed" (docs/contract.md §6); false: the rates as they
  // are, the forecaster before issue 26 (the calibration's baseline).
  bool slowdown_mixture = true;
  // How long a crisis and a slowdown last ahead: true, the law from the records
  // (bad_period.h: its ways of ending, conditioned on the period's age, moved by the plan's
  // fix times and the run's own ended slowdowns, and "it never ends" beside them); false,
  // Gott's scale-free D/(D+x) with a week's floor for a crisis (the default while the
  // calibration suite says the law is not yet as good: docs/forecasting.md).
  bool bad_period_law = false;
};

// A run on fewer GPUs than the plan's (RunState.gpus): when the forecast has it back at full
// size. The plan's spares were in use (else the launch would have been full size), so full
// size returns when `missing_nodes` of the spare_nodes + missing_nodes nodes out are back
// from repair, each out for an exponential time of mean node_repair_seconds.
struct FullSize {
  uint32_t gpus = 0, plan_gpus = 0, missing_nodes = 0;
  double p50_seconds = 0;  // median time ahead until full size
  std::string reason;
};

// The time ahead of a simulation by category (docs/contract.md §3), the mean over its draws:
// compute at the run's pace (productive), the share a smaller fleet adds until full size
// (capacity), checkpoint saves, deliberate work, failures (lost work, restarts and an
// incident in progress) and planned downtime; `waiting` until the plan's start. They add up
// to the mean time ahead.
struct TimeAhead {
  double waiting = 0, productive = 0, capacity = 0, checkpoint = 0, custom = 0, failures = 0, planned = 0;
  [[nodiscard]] double Sum() const {
    return waiting + productive + capacity + checkpoint + custom + failures + planned;
  }
};

// Two futures of the failure process, when the run's recent one is far from its plan's
// (docs/contract.md §10): "the last days continue" and "the run returns to its plan", each with its
// median finish and budget at finish, and the weight the forecast gives it, with why.
struct Future {
  std::string name;                     // "recent" | "plan"
  double finish_p50_seconds = 0;        // from the simulation's as_of
  double budget_at_finish_seconds = 0;  // consumed + the median loss still to come
  double mtbf_seconds = 0;              // running seconds per incident ahead
  double loss_per_incident_seconds = 0;
  double weight = 0;
  std::string reason;
};

// The quantile levels of Forecast::finish_quantiles: the midpoints of 20 equal bins, so
// that twice the mean pinball loss over them approximates the CRPS.
inline constexpr int kFinishQuantiles = 20;
[[nodiscard]] inline double FinishQuantileLevel(int i) { return (i + 0.5) / kFinishQuantiles; }

struct Forecast {
  absl::Time as_of = absl::UnixEpoch();
  uint64_t events = 0;
  bool finished = false;

  // Throughput, tokens per productive second.
  double tokens_per_second = 0;
  double recent_tokens_per_second = 0;
  double plan_tokens_per_second = 0;
  double forecast_tokens_per_second = 0;  // what the simulation centres on
  bool throughput_shifted = false;        // recent differs from the lifetime rate

  // Finish.
  absl::Time finish_p10 = absl::UnixEpoch();
  absl::Time finish_p50 = absl::UnixEpoch();
  absl::Time finish_p90 = absl::UnixEpoch();
  absl::Time plan_finish = absl::UnixEpoch();           // committed (contingency, P90 budget)
  absl::Time plan_expected_finish = absl::UnixEpoch();  // the plan's own P50
  std::optional<absl::Time> deadline;
  double slip_seconds = 0;          // finish_p50 - plan_expected_finish: ~0 on plan
  double deadline_probability = 0;  // P(finish <= deadline), 0 without one

  // Failure budget.
  double budget_seconds = 0;
  double schedule_seconds = 0;  // the plan's whole schedule
  double consumed_seconds = 0;
  double remaining_seconds = 0;
  double burn_rate = 0;  // share of budget used / share of the planned schedule elapsed
  double burn_rate_1h = 0, burn_rate_6h = 0, burn_rate_1d = 0, burn_rate_3d = 0;
  double projected_at_finish_seconds = 0;  // P50 of consumed + the loss still to come
  double exhaustion_probability = 0;
  std::optional<absl::Time> exhausted_at;  // at the current burn; past when already spent

  // Reliability. goodput: productive / (elapsed - excluded); counting_excluded: / elapsed.
  double goodput = 0;
  double goodput_counting_excluded = 0;
  // Model FLOPs utilisation, end to end over productive time (the plan's model FLOPs per
  // token x tokens per productive second / (the plan's GPUs x peak)): over the run and over
  // the last hour. 0 when the plan gives no FLOPs or peak, or no work was seen.
  double mfu_lifetime = 0, mfu_last_hour = 0, mfu_plan = 0;
  uint32_t plan_gpus = 0;            // the plan's fleet
  double observed_mtbf_seconds = 0;  // running time / unplanned interruptions; 0 before one
  double plan_mtbf_seconds = 0;
  double posterior_mtbf_seconds = 0;  // Gamma-Poisson: the plan's as a prior
  double mean_loss_per_interruption_seconds = 0;
  double recommended_checkpoint_interval_seconds = 0;  // Daly, observed cost and MTBF
  double plan_checkpoint_interval_seconds = 0;

  // The finish at FinishQuantileLevel(0..kFinishQuantiles-1), for scoring (empty before a
  // simulation); the futures, when the failure process is far from the plan's.
  std::vector<absl::Time> finish_quantiles;
  struct FutureFinish {
    Future future;
    absl::Time finish_p50 = absl::UnixEpoch();
  };
  std::vector<FutureFinish> futures;
  double custom_ratio = 0;            // Simulation::custom_ratio
  std::optional<FullSize> full_size;  // Simulation::full_size

  // Naive estimates, for backtests: remaining tokens / lifetime tokens per wall second,
  // and / the last hour's (InfiniteFuture when the rate is 0).
  absl::Time naive_lifetime_finish = absl::InfiniteFuture();
  absl::Time naive_recent_finish = absl::InfiniteFuture();
};

// Everything but the simulation: cheap, for every status read and scrape.
[[nodiscard]] Forecast ForecastNow(const RunState& state, const ForecastPrior& prior, absl::Time now);

// Progress that is accepted but implausible against the plan, as sentences naming the
// numbers (shown as the status's flags): tokens beyond the target, a throughput above what
// the fleet can do at 100% MFU (tokens per step or the fleet are wrong), a run finished
// well short of its target. Empty when nothing is off.
[[nodiscard]] std::vector<std::string> PlausibilityFlags(const RunSnapshot& snapshot, const ForecastPrior& prior);

// The simulation's outcome, as offsets from its `as_of`, so a cached one can be read later.
struct Simulation {
  absl::Time as_of = absl::UnixEpoch();
  uint64_t events = 0;
  double forecast_tokens_per_second = 0;
  bool throughput_shifted = false;
  // An active slowdown taken in: its time per token over the run's own pace (1: none), and
  // the scale of how long it persists ahead (productive seconds; its median).
  double slowdown_factor = 1;
  double slowdown_persist_seconds = 0;
  double slowdown_permanent_probability = 0;  // the share of draws in which it never ends
  double finish_p10_seconds = 0, finish_p50_seconds = 0, finish_p90_seconds = 0;
  double future_loss_p50_seconds = 0;
  double exhaustion_probability = 0;
  double deadline_probability = 0;
  // What the simulation assumed for the rest of the run (kChangepoint: the mixture's mean).
  double change_probability_failures = 0;  // the recent regime's weight
  double change_probability_losses = 0;
  double mtbf_seconds = 0;  // running seconds per incident ahead
  double loss_per_incident_seconds = 0;
  double overhead_ratio = 0;  // planned overhead per compute second ahead
  // Deliberate work (spans) per compute second ahead: the plan's schedule.custom_fraction as
  // a prior worth kCustomPriorSeconds of compute, then the run's own.
  double custom_ratio = 0;
  std::optional<FullSize> full_size;  // set while the run is on fewer GPUs than the plan's
  TimeAhead ahead;                    // the forecast's draws' time ahead, by category
  double trend_weight = 0;            // weight of "the throughput trend continues"
  // The failure process ahead against the plan's: the recent regime's cost per running
  // second over the plan's, the probability that an excess is a crisis that will be fixed,
  // and how long it has lasted (running seconds).
  double excess_ratio = 1;
  double crisis_probability = 0;
  double crisis_age_seconds = 0;
  double recovery_weight = 0;  // P(fixed before the finish): the "plan" future's weight
  // ForecastOptions::bad_period_law: the wall lengths of the run's own crises that ended
  // before the present one began (crisis_history.h), each weighed by the law.
  std::vector<double> earlier_crises_seconds;
  std::vector<double> quantile_seconds;  // at FinishQuantileLevel
  std::vector<Future> futures;           // empty while they agree
};
[[nodiscard]] Simulation Simulate(const RunState& state, const ForecastPrior& prior, absl::Time now,
                                  const ForecastOptions& options = {});

// The probability that failures costing `excess_ratio` times the plan's are a crisis the
// team will fix rather than the fleet's own level (forecaster.cc: kPlanMissSigma).
[[nodiscard]] double CrisisProbability(double excess_ratio);

// Both: ForecastNow with the simulation's fields filled in.
[[nodiscard]] Forecast Combine(Forecast now_part, const Simulation& simulation);
[[nodiscard]] Forecast ComputeForecast(const RunState& state, const ForecastPrior& prior, absl::Time now,
                                       const ForecastOptions& options = {});

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_FORECASTER_H_
