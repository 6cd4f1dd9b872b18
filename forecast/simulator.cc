#include "forecast/simulator.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace flightplan::forecast {

std::vector<Event> SimulateRun(const PlanSpec& plan, const PlanReport& r,
                               const SimulationOptions& o) {
  std::mt19937_64 rng(o.seed);
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
  // Planned downtime as 8-hour windows spread over the run.
  const double window = 8 * 3600.0;
  const int windows = o.maintenance && r.schedule.availability_seconds > 0
                          ? std::max(1, static_cast<int>(std::lround(r.schedule.availability_seconds / window)))
                          : 0;
  int next_window = 1;

  int n = 0;
  auto emit = [&](Event e) {
    e.id = absl::StrCat("sim", ++n);
    out.push_back(e);
    if (o.duplicate_fraction > 0 && uniform(rng) < o.duplicate_fraction) out.push_back(e);
  };
  double t = 0;
  uint32_t attempt = 1;
  int64_t step = 0, ckpt_step = 0;
  double since_ckpt = 0;  // compute seconds since the last checkpoint
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
  started(0);
  double next_failure = unit_exp(rng) * mtbf / o.failure_rate_factor;  // in running seconds
  double running = 0;
  while (step < total_steps) {
    const double progress = static_cast<double>(step) / static_cast<double>(total_steps);
    double speed = o.throughput_factor * (1 - o.degrade_per_tenth * std::floor(progress * 10));
    double failure_factor = o.failure_rate_factor;
    if (o.regime_at > 0 && progress >= o.regime_at) {
      speed *= o.regime_throughput_factor;
      failure_factor *= o.regime_failure_factor;
    }
    speed = std::max(speed, 0.05);
    // Up to the next report, or the next checkpoint if sooner (saves follow the plan's
    // interval, not the report cadence).
    const double step_seconds_now = plan_step_seconds / speed;
    const int64_t to_checkpoint =
        std::max<int64_t>(1, static_cast<int64_t>(std::min(
                                 9e18, std::ceil((interval - since_ckpt) / step_seconds_now))));
    const int64_t to_report = report_every - (step % report_every);
    const int64_t chunk = std::min({to_report, to_checkpoint, total_steps - step});
    // Small jitter per report interval: real step times wobble.
    const double chunk_seconds =
        static_cast<double>(chunk) * plan_step_seconds / speed * (1 + 0.02 * (uniform(rng) - 0.5));
    if (running + chunk_seconds >= next_failure) {
      // A failure inside this chunk: the work since the last checkpoint is lost.
      // (A failure due during the last save strikes right after it.)
      const double into = std::max(0.0, next_failure - running);
      t += into;
      running += into;
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
      step = ckpt_step;
      since_ckpt = 0;
      started(step);
      next_failure = running + unit_exp(rng) * mtbf / failure_factor;
      continue;
    }
    t += chunk_seconds;
    running += chunk_seconds;
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
      running += blocking;
      Event c;
      c.kind = EventKind::kCheckpointSaved;
      c.time = at(t);
      c.attempt = attempt;
      c.step = step;
      c.blocking_seconds = blocking;
      emit(c);
      ckpt_step = step;
      since_ckpt = 0;
      if (next_window <= windows && step < total_steps &&
          static_cast<double>(step) / static_cast<double>(total_steps) >=
              static_cast<double>(next_window) / (windows + 1)) {
        ++next_window;
        Event m;
        m.kind = EventKind::kInterruption;
        m.time = at(t);
        m.attempt = attempt;
        m.cause = "maintenance";
        m.planned = true;
        emit(m);
        t += window;
        ++attempt;
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
