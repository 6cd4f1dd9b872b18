#include "forecast/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"

namespace flightplan::forecast {

const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario> kScenarios = [] {
    std::vector<Scenario> v;
    auto add = [&](const char* name, const char* description, double change_at, auto change) {
      SimulationOptions o;
      change(o);
      v.push_back({name, description, o, change_at});
    };
    add("as-planned", "reality as the plan assumes", 0, [](SimulationOptions&) {});
    add("failures-x2", "twice the plan's failure rate", 0, [](SimulationOptions& o) { o.failure_rate_factor = 2; });
    add("failures-x0.5", "half the plan's failure rate", 0, [](SimulationOptions& o) { o.failure_rate_factor = 0.5; });
    add("throughput-85", "85% of the plan's throughput", 0, [](SimulationOptions& o) { o.throughput_factor = 0.85; });
    add("bad-rack-40", "from 40% on, failures x3 and throughput 90% (a rack going bad)", 0.4, [](SimulationOptions& o) {
      o.regime_at = 0.4;
      o.regime_failure_factor = 3;
      o.regime_throughput_factor = 0.9;
    });
    add("degrading", "throughput loses 2% per tenth of progress", 0.1,
        [](SimulationOptions& o) { o.degrade_per_tenth = 0.02; });
    add("heavy-tailed-restarts", "restarts Pareto-tailed (alpha 1.5): a few take hours", 0,
        [](SimulationOptions& o) { o.restart_tail_alpha = 1.5; });
    add("hangs-and-silent-crashes", "30% of failures hang until a watchdog, 30% go unreported", 0,
        [](SimulationOptions& o) {
          o.hang_fraction = 0.3;
          o.unreported_fraction = 0.3;
        });
    add("chaotic-start", "4x the plan's failures for the first 30%, then half the plan's", 0.3,
        [](SimulationOptions& o) {
          o.failure_rate_factor = 0.5;
          o.early_until = 0.3;
          o.early_failure_factor = 8;
        });
    add("crisis-then-settle",
        "a crisis: failures 3x rising to 10x the plan's until 30% (the worst stretch last), then the plan's", 0.3,
        [](SimulationOptions& o) {
          o.early_until = 0.3;
          o.early_failure_factor = 3;
          o.early_failure_ramp_to = 10;
        });
    add("calm", "no failures, the plan's maintenance, 5% step-time noise (the band should be narrow)", 0,
        [](SimulationOptions& o) {
          o.failure_rate_factor = 0;
          o.step_time_noise = 0.05;
        });
    add("worsening", "from 50% on, failures x3", 0.5, [](SimulationOptions& o) {
      o.regime_at = 0.5;
      o.regime_failure_factor = 3;
    });
    add("bursty", "a bad day about every week with failures x10", 0, [](SimulationOptions& o) {
      o.bad_day_every_days = 7;
      o.bad_day_hours = 24;
      o.bad_day_failure_factor = 10;
    });
    add("heavy-maintenance", "8 h of maintenance every week (the plan allots 2%)", 0, [](SimulationOptions& o) {
      o.maintenance_every_days = 7;
      o.maintenance_hours = 8;
    });
    add("interventions", "every 10 days a planned restart rolls back 3 checkpoints", 0, [](SimulationOptions& o) {
      o.intervention_every_days = 10;
      o.intervention_rollback_checkpoints = 3;
    });
    return v;
  }();
  return kScenarios;
}

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario& s : Scenarios()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::vector<Event> SimulateRun(const PlanSpec& plan, const PlanReport& r, const SimulationOptions& o,
                               SimulationTruth* truth) {
  if (truth) truth->slow_seconds.assign(o.slow.size(), 0.0);
  std::mt19937_64 rng(o.seed);
  // The calendar of bad days has its own stream, so it does not depend on the failures.
  std::mt19937_64 calendar_rng(o.seed ^ 0x9e3779b97f4a7c15ULL);
  std::mt19937_64 noise_rng(o.seed ^ 0x5851f42d4c957f2dULL);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::exponential_distribution<double> unit_exp(1.0);
  std::vector<Event> out;
  const absl::Time start = r.schedule.start_time;
  const int64_t target = static_cast<int64_t>(plan.data.tokens);
  const int64_t tokens_per_step = static_cast<int64_t>(r.batch.tokens_per_step);
  const int64_t total_steps = static_cast<int64_t>(r.batch.steps);
  if (tokens_per_step <= 0 || total_steps <= 0 || r.compute.tokens_per_second <= 0) return out;
  const int64_t report_every = std::max<int64_t>(1, total_steps / std::max<int64_t>(1, o.target_reports));
  const double plan_step_seconds = static_cast<double>(tokens_per_step) / r.compute.tokens_per_second;
  const double interval = r.checkpoint.interval_seconds > 0 ? r.checkpoint.interval_seconds : 3600;
  const double blocking = r.checkpoint.blocking_seconds;
  const double mtbf = r.failures.job_mtbf_seconds > 0 ? r.failures.job_mtbf_seconds : 1e12;
  const double detect = plan.failures.detect_seconds.value_or(120);
  const double restart = plan.failures.restart_seconds.value_or(600);
  const double restore = r.checkpoint.read_seconds;
  // Planned downtime: on a calendar when asked, else the plan's allotment as 8-hour windows
  // spread over the run.
  const bool calendar_maintenance = o.maintenance && o.maintenance_every_days > 0;
  const double window = 8 * 3600.0;
  const int windows = o.maintenance && !calendar_maintenance && r.schedule.availability_seconds > 0
                          ? std::max(1, static_cast<int>(std::lround(r.schedule.availability_seconds / window)))
                          : 0;
  int next_window = 1;
  double next_maintenance = calendar_maintenance ? o.maintenance_every_days * 86400 : HUGE_VAL;
  double next_intervention = o.intervention_every_days > 0 ? o.intervention_every_days * 86400 : HUGE_VAL;
  // Bad days: [start, end) in wall seconds, drawn lazily.
  double bad_start = std::numeric_limits<double>::infinity(), bad_end = bad_start;
  auto next_bad_day = [&](double after) {
    if (o.bad_day_every_days <= 0) return;
    bad_start = after + unit_exp(calendar_rng) * o.bad_day_every_days * 86400;
    bad_end = bad_start + o.bad_day_hours * 3600;
  };
  next_bad_day(0);

  int n = 0;
  auto emit = [&](Event e) {
    e.id = absl::StrCat("sim", ++n);
    out.push_back(e);
    if (o.duplicate_fraction > 0 && uniform(rng) < o.duplicate_fraction) out.push_back(e);
  };
  double t = 0;
  uint32_t attempt = 1;
  int64_t step = 0;
  std::vector<int64_t> saved{0};  // checkpointed steps, the lineage's, oldest first
  double since_ckpt = 0;          // compute seconds since the last checkpoint
  auto at = [&](double seconds) { return start + absl::Seconds(seconds); };
  auto started = [&](int64_t restored) {
    Event e;
    e.kind = EventKind::kJobStarted;
    e.time = at(t);
    e.attempt = attempt;
    e.restored_step = restored;
    emit(e);
    t += restart * 0.5 + restore;  // launch to the first step: init and the restore read
  };
  auto planned_stop = [&](const char* cause, double down_seconds) {
    Event m;
    m.kind = EventKind::kInterruption;
    m.time = at(t);
    m.attempt = attempt;
    m.cause = cause;
    m.planned = true;
    emit(m);
    t += down_seconds;
    ++attempt;
  };
  started(0);
  // Failures: a hazard that varies with progress and the calendar, integrated over
  // running time; a failure strikes when it reaches an exponential draw.
  double hazard_left = unit_exp(rng);
  while (step < total_steps) {
    const double progress = static_cast<double>(step) / static_cast<double>(total_steps);
    double speed = o.throughput_factor * (1 - o.degrade_per_tenth * std::floor(progress * 10));
    double failure_factor = o.failure_rate_factor;
    if (o.regime_at > 0 && progress >= o.regime_at) {
      speed *= o.regime_throughput_factor;
      failure_factor *= o.regime_failure_factor;
    }
    if (progress < o.early_until) {
      failure_factor *=
          o.early_failure_ramp_to > 0
              ? o.early_failure_factor + (o.early_failure_ramp_to - o.early_failure_factor) * progress / o.early_until
              : o.early_failure_factor;
    }
    while (t >= bad_end) next_bad_day(bad_end);
    if (t >= bad_start) failure_factor *= o.bad_day_failure_factor;
    const double hazard_per_second = failure_factor / mtbf;
    speed = std::max(speed, 0.05);
    // Up to the next report, or the next checkpoint if sooner (saves follow the plan's
    // interval, not the report cadence).
    const double step_seconds_now = plan_step_seconds / speed;
    const int64_t to_checkpoint = std::max<int64_t>(
        1, static_cast<int64_t>(std::min(9e18, std::ceil((interval - since_ckpt) / step_seconds_now))));
    const int64_t to_report = report_every - (step % report_every);
    const int64_t chunk = std::min({to_report, to_checkpoint, total_steps - step});
    // Small jitter per report interval: real step times wobble.
    double chunk_seconds = static_cast<double>(chunk) * plan_step_seconds / speed * (1 + 0.02 * (uniform(rng) - 0.5));
    if (o.step_time_noise > 0) {
      // Its own stream, so the failures drawn do not depend on the noise.
      std::normal_distribution<double> noise(-0.5 * o.step_time_noise * o.step_time_noise, o.step_time_noise);
      chunk_seconds *= std::exp(noise(noise_rng));
    }
    // Slow stretches, at the interval's start; the first one it falls in gets the excess.
    double slow = 1;
    int slow_in = -1;
    for (size_t i = 0; i < o.slow.size(); ++i) {
      const SlowStretchSpec& sl = o.slow[i];
      const double from = sl.start_days * 86400, into = t - from;
      if (into < 0 || into >= sl.hours * 3600) continue;
      const double ramp = sl.ramp_hours > 0 ? std::min(1.0, into / (sl.ramp_hours * 3600)) : 1.0;
      slow *= 1 + (sl.factor - 1) * ramp;
      if (slow_in < 0) slow_in = static_cast<int>(i);
    }
    const double slow_excess = chunk_seconds * (slow - 1);
    chunk_seconds += slow_excess;
    if (hazard_per_second > 0 && chunk_seconds * hazard_per_second >= hazard_left) {
      // A failure inside this chunk: the work since the last checkpoint is lost.
      t += hazard_left / hazard_per_second;
      const bool hang = uniform(rng) < o.hang_fraction;
      if (hang) t += o.watchdog_seconds;
      const bool reported = uniform(rng) >= o.unreported_fraction;
      if (reported) {
        Event e;
        e.kind = EventKind::kInterruption;
        e.time = at(t);
        e.attempt = attempt;
        e.cause = hang ? "hang" : (uniform(rng) < 0.6 ? "gpu" : "nccl");
        emit(e);
      }
      double down = detect + restart * 0.5;
      if (o.restart_tail_alpha > 0) {
        // Pareto tail on the restart: most are quick, a few take hours.
        const double u = std::max(uniform(rng), 1e-9);
        down = detect + restart * 0.5 * std::pow(u, -1.0 / o.restart_tail_alpha);
      }
      t += down;
      ++attempt;
      step = saved.back();
      since_ckpt = 0;
      started(step);
      hazard_left = unit_exp(rng);
      continue;
    }
    hazard_left -= chunk_seconds * hazard_per_second;
    if (truth && slow_in >= 0) truth->slow_seconds[static_cast<size_t>(slow_in)] += slow_excess;
    t += chunk_seconds;
    since_ckpt += chunk_seconds;
    step += chunk;
    Event steps;
    steps.kind = EventKind::kSteps;
    steps.time = at(t);
    steps.attempt = attempt;
    steps.step = step;
    steps.tokens = std::min(target, step * tokens_per_step);
    emit(steps);
    if (since_ckpt >= interval || step >= total_steps) {
      t += blocking;
      Event c;
      c.kind = EventKind::kCheckpointSaved;
      c.time = at(t);
      c.attempt = attempt;
      c.step = step;
      c.blocking_seconds = blocking;
      emit(c);
      saved.push_back(step);
      since_ckpt = 0;
      if (step >= total_steps) break;
      if (t >= next_intervention) {
        // A deliberate rollback: back `k` checkpoints, that work redone.
        next_intervention += o.intervention_every_days * 86400;
        const size_t k = static_cast<size_t>(std::max(0, o.intervention_rollback_checkpoints));
        saved.resize(saved.size() > k ? saved.size() - k : 1);
        planned_stop("intervention", detect);
        step = saved.back();
        started(step);
        continue;
      }
      const bool plan_window = next_window <= windows && static_cast<double>(step) / static_cast<double>(total_steps) >=
                                                             static_cast<double>(next_window) / (windows + 1);
      if (plan_window || t >= next_maintenance) {
        double down = window;
        if (plan_window) {
          ++next_window;
        } else {
          down = o.maintenance_hours * 3600;
          while (next_maintenance <= t) next_maintenance += o.maintenance_every_days * 86400;
        }
        planned_stop("maintenance", down);
        started(step);
      }
    }
  }
  Event done;
  done.kind = EventKind::kRunFinished;
  done.time = at(t);
  done.attempt = attempt;
  emit(done);
  return out;
}

}  // namespace flightplan::forecast
