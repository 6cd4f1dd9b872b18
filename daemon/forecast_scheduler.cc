#include "daemon/forecast_scheduler.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <utility>

namespace flightplan::daemon {
namespace {

// The history point of a simulation of `state` at `now`: the forecast, and the run as it
// stood (the page's burn-up and time charts).
storage::ForecastPoint HistoryPoint(const forecast::RunState& state, const forecast::ForecastPrior& prior,
                                    absl::Time now, const forecast::Simulation& sim) {
  storage::ForecastPoint point = PointFromForecast(forecast::Combine(forecast::ForecastNow(state, prior, now), sim));
  point.tokens = state.tokens;
  const forecast::TimeSeconds& t = state.seconds;
  const double seconds[10] = {t.productive,   t.checkpoint, t.lost,     t.startup, t.down_unplanned,
                              t.down_planned, t.stalled,    t.capacity, t.custom,  t.excluded};
  std::copy(std::begin(seconds), std::end(seconds), std::begin(point.seconds));
  point.slowdown_seconds = forecast::ReportSlowdown(state.slowdown, 0, now).seconds;
  return point;
}

// This thread's CPU time so far, in seconds (what a simulation costs, whatever else runs).
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

void ForecastScheduler::CountSimulation(double cpu_seconds, bool backfill) {
  absl::MutexLock lock(&mu_);
  (backfill ? stats_.backfill_simulations : stats_.simulations) += 1;
  (backfill ? stats_.backfill_cpu_seconds : stats_.cpu_seconds) += cpu_seconds;
}

ForecastScheduler::ForecastScheduler(const TrackerOptions& options, Clock* clock, Hooks hooks)
    : options_(options), clock_(clock), hooks_(std::move(hooks)) {}

ForecastScheduler::~ForecastScheduler() { Stop(); }

void ForecastScheduler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ForecastScheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void ForecastScheduler::MarkDue(const std::string& run, bool urgent) {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    due_.insert(run);
    if (urgent) urgent_.insert(run);
  }
  cv_.Signal();
}

ForecastScheduler::Cached ForecastScheduler::Latest(const std::string& run) const {
  absl::MutexLock lock(&mu_);
  auto it = simulations_.find(run);
  return it == simulations_.end() ? Cached{} : it->second;
}

void ForecastScheduler::Forget(const std::string& run) {
  absl::MutexLock lock(&mu_);
  simulations_.erase(run);
}

ForecastScheduler::BackfillWindow ForecastScheduler::BackfillFor(const std::string& run) const {
  absl::MutexLock lock(&mu_);
  BackfillWindow w;
  if (auto at = simulated_at_.find(run); at != simulated_at_.end()) w.simulated_to = at->second;
  auto scale = backfill_scale_.find(run);
  w.spacing = options_.backfill_spacing * (scale == backfill_scale_.end() ? 1 : scale->second);
  return w;
}

void ForecastScheduler::RaiseSimulatedTo(const std::string& run, absl::Time to) {
  // Never a default-constructed absl::Time (the Unix epoch): a mark of 1970 would let the
  // writer keep a run's very first state, its job start alone, as a backfill point.
  absl::Time& mark = simulated_at_.try_emplace(run, absl::InfinitePast()).first->second;
  mark = std::max(mark, to);
}

void ForecastScheduler::AddBackfill(const RunView& view,
                                    std::vector<std::shared_ptr<const forecast::RunState>> states) {
  if (states.empty()) return;
  absl::MutexLock lock(&mu_);
  std::deque<BackfillState>& queue = backfill_[view.name];
  for (std::shared_ptr<const forecast::RunState>& state : states) {
    // The node book is the run's, shared by its states: not counted per state.
    const size_t bytes = forecast::StateBytes(*state, /*count_node_book=*/false);
    backfill_bytes_ += bytes;
    queue.push_back(BackfillState{view.id, view.version, std::move(state), view.plan, bytes});
  }
  while (queue.size() > options_.max_backfill_states) ThinLocked(view.name, queue);
  // Across runs: while the states waiting are over the budget, the run with the most gives
  // up every other one (its history coarser, as above), down to one state each.
  while (options_.max_backfill_bytes > 0 && backfill_bytes_ > options_.max_backfill_bytes) {
    auto largest = std::max_element(backfill_.begin(), backfill_.end(),
                                    [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (largest == backfill_.end() || largest->second.size() <= 1) break;
    ThinLocked(largest->first, largest->second);
  }
}

void ForecastScheduler::ThinLocked(const std::string& run, std::deque<BackfillState>& queue) {
  std::deque<BackfillState> kept;
  for (size_t i = 0; i < queue.size(); ++i) {
    if (i % 2 == 1 || i + 1 == queue.size()) {
      kept.push_back(std::move(queue[i]));
    } else {
      backfill_bytes_ -= queue[i].bytes;
    }
  }
  queue.swap(kept);
  int64_t& scale = backfill_scale_.try_emplace(run, 1).first->second;
  scale = std::min<int64_t>(scale * 2, int64_t{1} << 20);
}

ForecastScheduler::Stats ForecastScheduler::GetStats() const {
  absl::MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.backfill_bytes = backfill_bytes_;
  for (const auto& [run, queue] : backfill_) stats.backfill_states += queue.size();
  return stats;
}

size_t ForecastScheduler::BackfillWaiting(const std::string& run) const {
  absl::MutexLock lock(&mu_);
  auto it = backfill_.find(run);
  return it == backfill_.end() ? 0 : it->second.size();
}

std::string ForecastScheduler::PickLocked(absl::Time now, absl::Time& next) {
  const absl::Duration min_interval = std::max(options_.forecast_min_interval, absl::Milliseconds(1));
  const absl::Duration refresh = std::max(options_.forecast_refresh, absl::Milliseconds(10));
  waiting_.insert(due_.begin(), due_.end());
  due_.clear();
  auto last_of = [&](const std::string& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = last_simulated_.find(run);
    return it == last_simulated_.end() ? absl::InfinitePast() : it->second;
  };
  const std::string* pick = nullptr;
  bool pick_urgent = false;
  next = now + refresh;
  for (const std::string& run : waiting_) {
    const absl::Time last = last_of(run);
    const absl::Time ready = last == absl::InfinitePast() ? now : last + min_interval;
    if (ready > now) {
      next = std::min(next, ready);
      continue;
    }
    const bool urgent = urgent_.count(run) > 0;
    if (pick == nullptr || (urgent && !pick_urgent) || (urgent == pick_urgent && last < last_of(*pick))) {
      pick = &run;
      pick_urgent = urgent;
    }
  }
  std::string chosen;
  if (pick != nullptr) {
    chosen = *pick;
    waiting_.erase(chosen);
  } else if (!options_.events_clock) {
    // On the wall clock, a run not simulated for `refresh` is ready too (a silent run's
    // forecast moves as time passes).
    absl::Time oldest = absl::InfiniteFuture();
    for (const auto& [run, at] : last_simulated_) {
      if (at + refresh <= now && at < oldest) {
        chosen = run;
        oldest = at;
      } else {
        next = std::min(next, at + refresh);
      }
    }
  }
  if (!chosen.empty()) urgent_.erase(chosen);
  return chosen;
}

ForecastScheduler::Turn ForecastScheduler::SimulateNext() {
  Turn turn;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return turn;
    absl::Time next;
    turn.simulated = PickLocked(clock_->Now(), next);
    if (turn.simulated.empty()) {
      turn.next_ready = next;
      return turn;
    }
  }
  SimulateRun(turn.simulated);
  return turn;
}

void ForecastScheduler::Loop() {
  // Best effort: the simulations yield the CPU to the writer and the gRPC threads (a
  // backfill's hundreds of simulations would otherwise slow the ingest of every run on a
  // small machine). Linux's per-thread nice; nothing else changes where it is refused.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  while (true) {
    const Turn turn = SimulateNext();
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    if (!turn.simulated.empty()) continue;
    // Nothing is due before `next_ready` unless a run changes (or the scheduler stops),
    // and both are signalled; the next turn reads everything again after any wake-up.
    if (due_.empty()) {
      const absl::Duration wait = turn.next_ready ? *turn.next_ready - clock_->Now() : absl::Seconds(1);
      cv_.WaitWithTimeout(&mu_, std::max(wait, absl::Milliseconds(1)));
    }
  }
}

bool ForecastScheduler::SimulateBackfill(const std::string& run) {
  std::deque<BackfillState> queued;
  {
    absl::MutexLock lock(&mu_);
    auto it = backfill_.find(run);
    if (it == backfill_.end()) return false;
    queued.swap(it->second);
    backfill_.erase(it);
    backfill_scale_.erase(run);
    // Their bytes stay counted until each is simulated: the budget holds while they are out.
  }
  if (queued.empty()) return false;
  forecast::ForecastOptions options;
  options.draws = std::max(1, options_.backfill_draws);
  options.bad_period_law = options_.bad_period_law;
  // Each as it would have stood then: its "now" is its latest event, under either clock.
  // While requests wait for the writer, the rest waits for a later turn: the ingest goes
  // first (on a small machine the simulations would take its CPU).
  size_t done = 0;
  for (; done < queued.size(); ++done) {
    if (done > 0 && hooks_.writer_backlog() > 0) break;
    const BackfillState& b = queued[done];
    const absl::Time at = b.state->last_time;
    const double cpu = ThreadCpuSeconds();
    const forecast::Simulation sim = forecast::Simulate(*b.state, b.plan->prior, at, options);
    CountSimulation(ThreadCpuSeconds() - cpu, /*backfill=*/true);
    hooks_.offer_point(b.run_id, b.version, HistoryPoint(*b.state, b.plan->prior, at, sim));
  }
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < done; ++i) backfill_bytes_ -= queued[i].bytes;
  RaiseSimulatedTo(run, queued[done - 1].state->last_time);
  if (done < queued.size()) {
    std::deque<BackfillState>& rest = backfill_[run];  // any kept since go after these
    rest.insert(rest.begin(), std::make_move_iterator(queued.begin() + static_cast<long>(done)),
                std::make_move_iterator(queued.end()));
    due_.insert(run);
    return true;
  }
  return false;
}

void ForecastScheduler::SimulateRun(const std::string& run) {
  // While backfill states wait, the current state's point would close the history to them.
  if (SimulateBackfill(run)) {
    // States still wait (requests wait for the writer): so does the current state's
    // simulation. Published without its point, it let a status read fresh (forecast_events
    // == events) while the history still ended at a backfill state, the finished point
    // coming one or more turns later. The run is due again; its turn counts as taken.
    absl::MutexLock lock(&mu_);
    last_simulated_[run] = clock_->Now();
    return;
  }
  std::shared_ptr<const RunView> view = hooks_.find(run);
  if (!view) return;
  {
    // The writer hands a group's states over before it publishes the group's view: a view
    // newer than the states just simulated may come with states of its own, older than it.
    // The view waits for the next turn, which simulates them first: its point would close
    // the history to them, and a simulation published without its point would let a status
    // read fresh before the history has it.
    absl::MutexLock lock(&mu_);
    auto it = backfill_.find(run);
    if (it != backfill_.end() && !it->second.empty()) {
      due_.insert(run);
      return;
    }
  }
  absl::Time now = options_.events_clock ? view->state.last_time : clock_->Now();
  if (now == absl::InfinitePast()) now = clock_->Now();
  forecast::ForecastOptions options;
  options.draws = options_.forecast_draws;
  options.bad_period_law = options_.bad_period_law;
  const double cpu = ThreadCpuSeconds();
  auto sim =
      std::make_shared<const forecast::Simulation>(forecast::Simulate(view->state, view->plan->prior, now, options));
  CountSimulation(ThreadCpuSeconds() - cpu, /*backfill=*/false);
  const absl::Time simulated = clock_->Now();
  // Under the wall clock, a run whose events are still arriving for a stretch well behind
  // now is being backfilled: a point now would close the history to the states behind it,
  // which the backfill is about to give.
  const bool backfilling =
      !options_.events_clock && view->state.events > 0 && now - view->state.last_time > options_.backfill_spacing &&
      simulated - view->received < options_.forecast_refresh && options_.backfill_spacing > absl::ZeroDuration();
  // The point goes to the writer before the simulation is published: once a status reads
  // fresh, a history read that follows it sees the point (when it was kept).
  if (!backfilling) {
    hooks_.offer_point(view->id, view->version, HistoryPoint(view->state, view->plan->prior, now, *sim));
  }
  {
    absl::MutexLock lock(&mu_);
    last_simulated_[run] = simulated;
    simulations_[run] = Cached{std::move(sim), view->plan->revision};
    if (view->state.events > 0) RaiseSimulatedTo(run, view->state.last_time);
  }
  hooks_.simulated(run);
}

}  // namespace flightplan::daemon
