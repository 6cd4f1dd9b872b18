// Fleet benchmark: one flightpland (the real binary, a child process, loopback gRPC and HTTP)
// holding as many runs as an organisation's cluster would, some streaming live and the rest
// at rest, and then a backfill of many runs at once. It prints what docs/scaling.md quotes:
//
//   - a refresh of every run: the forecaster thread's CPU time per simulation (the daemon's
//     flightplan_forecast_simulation_cpu_seconds_total over _simulations_total) times the
//     runs, and its share of a core over the window;
//   - /metrics and /runs/ answered with every run loaded, timed while the runs stream;
//   - memory per run at rest, loaded and again after a restart (the runs recovered from their
//     snapshots, nothing else in the heap);
//   - a backfill of --backfill-runs runs of --backfill-events events each, under the
//     --backfill-max-bytes budget and without one: the states held and the daemon's memory.
//
// The runs are the flagship plan's, each drawn by the simulator from one of the calibration
// scenarios (run i: scenario i mod 15, its own seed) and cut at a tenth to nine tenths of its
// tokens, dated so that its cut is a minute ago (the daemon on the wall clock). A streaming run
// then sends the rest of its events as their times come, and every 3 s between them the step
// it has reached (the simulator's reports are minutes apart; a job reports every few steps).
//
//   flightplan_fleet_bench [--runs 1000] [--streaming 50] [--window 40] [--refresh 20]
//                          [--backfill-runs 64] [--backfill-events 40000]
//                          [--backfill-max-bytes 67108864]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/bench_support.h"
#include "cli/plan_file.h"
#include "convert/event_convert.h"
#include "convert/plan_convert.h"
#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "forecast/state_bytes.h"
#include "planner/plan_engine.h"
#include "tests/event_log.h"
#include "tests/http_get.h"

namespace {

namespace v1 = flightplan::v1;
namespace fc = flightplan::forecast;
using namespace flightplan::bench;  // NOLINT(build/namespaces): the benchmarks' shared helpers

// A run of the fleet: its plan, the events it holds at rest, and (streaming) the rest.
struct FleetRun {
  std::string name;
  v1::Plan plan;
  std::vector<v1::EventBatch> history;
  std::vector<v1::Event> live;  // dated from now on
  v1::Event last_steps;         // the history's newest step report
};

// The first number of a series in a scrape ("" labels: the series as written), or -1.
double Series(const std::string& scrape, const std::string& series) {
  const size_t at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(scrape.c_str() + at + series.size() + 2, nullptr);
}

std::string Scrape(int port) {
  const std::string response = flightplan::testing::HttpGet(port, "/metrics");
  return response.rfind("HTTP/1.1 200", 0) == 0 ? response : "";
}

// The process's CPU time so far, user and system, in seconds (/proc/PID/stat).
double ProcessCpuSeconds(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtod(field.c_str(), nullptr);
    if (i == 15) stime = std::strtod(field.c_str(), nullptr);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::vector<v1::EventBatch> Batches(const std::vector<v1::Event>& events, size_t batch) {
  std::vector<v1::EventBatch> out;
  for (size_t i = 0; i < events.size(); i += batch) {
    v1::EventBatch b;
    b.set_sequence(out.size() + 1);
    for (size_t j = i; j < std::min(events.size(), i + batch); ++j) *b.add_events() = events[j];
    out.push_back(std::move(b));
  }
  return out;
}

// Where a run's memory goes: the parts of its state (forecast::StateBytes), summed over the runs.
std::map<std::string, double> state_parts;

// The fleet's runs, drawn and dated (see the file's comment).
std::vector<FleetRun> DrawFleet(const v1::Plan& plan, size_t runs, size_t streaming) {
  const fc::PlanSpec spec = flightplan::convert::PlanFromProto(plan);
  const fc::PlanReport report = flightplan::planner::ComputePlan(spec);
  const std::vector<fc::Scenario>& scenarios = fc::Scenarios();
  const absl::Time now = absl::Now();
  const fc::FoldSettings settings = fc::FoldSettingsFor(fc::PriorFromPlan(spec, report));
  std::vector<FleetRun> fleet(runs);
  for (size_t i = 0; i < runs; ++i) {
    FleetRun& r = fleet[i];
    r.name = absl::StrCat("fleet-", i);
    fc::SimulationOptions o = scenarios[i % scenarios.size()].options;
    o.seed = static_cast<uint64_t>(i / scenarios.size() + 1);
    const std::vector<fc::Event> events = fc::SimulateRun(spec, report, o);
    const double share = 0.1 + 0.1 * static_cast<double>((i * 7) % 9);
    size_t cut = 0;
    while (cut < events.size() &&
           static_cast<double>(events[cut].tokens) < share * static_cast<double>(spec.data.tokens)) {
      ++cut;
    }
    cut = std::max<size_t>(1, cut);
    const absl::Duration shift = (now - absl::Minutes(1)) - events[cut - 1].time;
    r.plan = plan;
    r.plan.set_name(r.name);
    *r.plan.mutable_start_time() = flightplan::convert::TimeToProto(report.schedule.start_time + shift);
    fc::RunState state;
    state.settings = settings;
    for (size_t k = 0; k < cut; ++k) (void)fc::ApplyEvent(state, events[k]);
    for (const fc::StatePart& part : fc::StateBytesByPart(state)) state_parts[part.name] += part.bytes;
    std::vector<v1::Event> held;
    for (size_t k = 0; k < events.size(); ++k) {
      fc::Event e = events[k];
      e.time += shift;
      v1::Event p = flightplan::convert::EventToProto(e, r.name);
      if (k < cut) {
        held.push_back(std::move(p));
      } else if (i < streaming) {
        r.live.push_back(std::move(p));
      }
    }
    for (const v1::Event& e : held) {
      if (e.has_steps()) r.last_steps = e;
    }
    r.history = Batches(held, 1000);
    if ((i + 1) % 100 == 0 || i + 1 == runs) std::fprintf(stderr, "  ... drew %zu of %zu runs\n", i + 1, runs);
  }
  return fleet;
}

// Streams every run's history, `clients` runs at a time; the events accepted.
uint64_t LoadFleet(const std::string& address, const std::vector<FleetRun>& fleet, size_t clients) {
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> progress{0};
  std::vector<StreamStats> stats(clients);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      for (size_t i = next++; i < fleet.size(); i = next++) StreamAll(*stub, fleet[i].history, stats[c], progress);
    });
  }
  for (std::thread& t : threads) t.join();
  return progress;
}

// Waits up to `seconds` until every run has been simulated at least `at_least` times in all
// (the live simulations counter); the counter then.
double WaitForSimulations(int port, double at_least, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  double done = 0;
  while (Clock::now() < deadline) {
    done = Series(Scrape(port), "flightplan_forecast_simulations_total{kind=\"live\"}");
    if (done >= at_least) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done;
}

struct BackfillFigures {
  double seconds = 0, events_per_second = 0, peak_states_bytes = 0, peak_rss = 0, end_rss = 0;
  std::vector<double> rss_at_quarters;
  bool exact = true;
};

// Daemon B: `runs` runs streamed `events` events each at full speed (faster than their time
// passed: a backfill), under the budget `budget` bytes (0: none).
BackfillFigures Backfill(const std::string& dir, const v1::Plan& plan, size_t runs, size_t events, size_t budget) {
  BackfillFigures out;
  const std::string db = absl::StrCat(dir, "/backfill-", budget, ".db");
  DaemonChild daemon(db, db + ".log",
                     {"--clock", "events", "--backfill-max-bytes", std::to_string(budget), "--max-queue", "256"});
  if (daemon.address().empty()) return out;
  auto stub = daemon.Stub();
  std::vector<std::vector<v1::EventBatch>> work(runs);
  for (size_t c = 0; c < runs; ++c) {
    const std::string name = absl::StrCat("backfill-", c);
    if (!CreateRun(*stub, plan, name)) return out;
    std::vector<v1::Event> log =
        flightplan::testing::SyntheticRun(name, static_cast<int64_t>(events), static_cast<uint32_t>(c + 1));
    log.resize(std::min(log.size(), events));
    work[c] = Batches(log, 100);
  }
  std::atomic<uint64_t> progress{0};
  std::atomic<bool> stop{false};
  const uint64_t total = runs * events;
  std::thread sampler([&] {
    uint64_t next_mark = total / 4;
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double held = Series(Scrape(daemon.metrics_port()), "flightplan_backfill_bytes");
      const Memory m = MemoryOf(daemon.pid());
      out.peak_states_bytes = std::max(out.peak_states_bytes, held);
      if (progress >= next_mark && next_mark > 0 && out.rss_at_quarters.size() < 4) {
        out.rss_at_quarters.push_back(m.rss);
        next_mark += total / 4;
      }
    }
  });
  std::vector<StreamStats> stats(runs);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (size_t c = 0; c < runs; ++c) {
    threads.emplace_back([&, c] {
      auto own = daemon.Stub();
      StreamAll(*own, work[c], stats[c], progress);
    });
  }
  for (std::thread& t : threads) t.join();
  out.seconds = Since(start);
  out.events_per_second = static_cast<double>(progress) / out.seconds;
  // The forecaster drains what the stream left: memory until then.
  const auto drain = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < drain && Series(Scrape(daemon.metrics_port()), "flightplan_backfill_states") > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop = true;
  sampler.join();
  const Memory end = MemoryOf(daemon.pid());
  out.peak_rss = end.peak;
  out.end_rss = end.rss;
  for (const StreamStats& s : stats) out.exact = out.exact && s.other == 0;
  out.exact = out.exact && progress == total;
  daemon.child().Signal(SIGTERM);
  daemon.child().Wait();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it comes, into a file too
  size_t runs = 1000, streaming = 50, backfill_runs = 64, backfill_events = 40000, budget = size_t{64} << 20;
  double window = 40, refresh = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "flightplan_fleet_bench [--runs N] [--streaming N] [--window S] [--refresh S]\n"
          "                       [--backfill-runs N] [--backfill-events N] [--backfill-max-bytes B]\n"
          "  --runs                runs on one daemon (1000)\n"
          "  --streaming           of them, runs that go on reporting live (50)\n"
          "  --window              seconds the refresh, scrapes and streams are measured over (40)\n"
          "  --refresh             the daemon's --forecast-refresh, seconds (20)\n"
          "  --backfill-runs       runs backfilled at once, then (64; 0: skip)\n"
          "  --backfill-events     events each (40000)\n"
          "  --backfill-max-bytes  the daemon's budget for them (67108864: a quarter of its default, to show the cap "
          "at work)\n");
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "flightplan_fleet_bench: %s needs a value (see --help)\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    const double number = std::strtod(value.c_str(), nullptr);
    if (number < 0 || (number == 0 && flag != "--backfill-runs" && flag != "--streaming")) {
      std::fprintf(stderr, "flightplan_fleet_bench: %s '%s' must be a positive number\n", flag.c_str(), value.c_str());
      return 2;
    }
    if (flag == "--runs") {
      runs = static_cast<size_t>(number);
    } else if (flag == "--streaming") {
      streaming = static_cast<size_t>(number);
    } else if (flag == "--window") {
      window = number;
    } else if (flag == "--refresh") {
      refresh = number;
    } else if (flag == "--backfill-runs") {
      backfill_runs = static_cast<size_t>(number);
    } else if (flag == "--backfill-events") {
      backfill_events = static_cast<size_t>(number);
    } else if (flag == "--backfill-max-bytes") {
      budget = static_cast<size_t>(number);
    } else {
      std::fprintf(stderr, "flightplan_fleet_bench: unknown flag %s (see --help)\n", flag.c_str());
      return 2;
    }
  }
  streaming = std::min(streaming, runs);
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("flightplan-fleet-", getpid())).string();
  std::filesystem::create_directories(dir);
  absl::StatusOr<v1::Plan> plan = flightplan::cli::LoadPlanFile(FLIGHTPLAN_FLAGSHIP);
  if (!plan.ok()) return 1;
  std::printf("flightplan fleet benchmark: %zu runs of the flagship plan on one daemon, %zu streaming\n", runs,
              streaming);
  std::fflush(stdout);
  const auto drawing = Clock::now();
  const std::vector<FleetRun> fleet = DrawFleet(*plan, runs, streaming);
  size_t held = 0;
  for (const FleetRun& r : fleet) {
    for (const v1::EventBatch& b : r.history) held += static_cast<size_t>(b.events_size());
  }
  std::printf("  the runs drawn: %zu events held (%.0f per run), in %.1f s\n", held,
              static_cast<double>(held) / static_cast<double>(runs), Since(drawing));
  {
    std::vector<std::pair<double, std::string>> parts;
    double total = 0;
    for (const auto& [name, bytes] : state_parts) {
      parts.emplace_back(bytes / static_cast<double>(runs) / 1024, name);
      total += bytes / static_cast<double>(runs) / 1024;
    }
    std::sort(parts.rbegin(), parts.rend());
    std::string line;
    for (const auto& [kib, name] : parts)
      absl::StrAppend(&line, line.empty() ? "" : ", ", name, " ", absl::StrFormat("%.1f", kib));
    std::printf("  a run's state (forecast::StateBytes, the mean): %.1f KiB: %s\n", total, line.c_str());
  }

  const std::string db = dir + "/fleet.db";
  const std::vector<std::string> flags = {"--clock",
                                          "wall",
                                          "--backfill-spacing",
                                          "0",
                                          "--max-runs",
                                          std::to_string(runs + 1),
                                          "--forecast-refresh",
                                          std::to_string(refresh)};
  auto daemon = std::make_unique<DaemonChild>(db, dir + "/daemon.log", flags);
  if (daemon->address().empty()) return 1;
  const Memory empty = MemoryOf(daemon->pid());
  {
    auto stub = daemon->Stub();
    for (const FleetRun& r : fleet) {
      if (!CreateRun(*stub, r.plan, r.name)) return 1;
    }
  }
  const auto loading = Clock::now();
  const uint64_t accepted = LoadFleet(daemon->address(), fleet, 4);
  const double load_seconds = Since(loading);
  std::printf("  loaded: %llu events in %.1f s (%.0f events/s, 4 clients)\n", static_cast<unsigned long long>(accepted),
              load_seconds, static_cast<double>(accepted) / load_seconds);
  const double first = WaitForSimulations(daemon->metrics_port(), static_cast<double>(runs), 300);
  const Memory loaded = MemoryOf(daemon->pid());
  std::printf("  every run forecast (%.0f live simulations); daemon memory %.1f MiB empty, %.1f MiB loaded\n", first,
              empty.rss, loaded.rss);

  // The window: the streaming runs report as their times come; the scrapes are timed.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> streamed{0};
  std::vector<std::thread> streams;
  for (size_t i = 0; i < streaming; ++i) {
    streams.emplace_back([&, i] {
      auto stub = daemon->Stub();
      const std::vector<v1::Event>& live = fleet[i].live;
      size_t at = 0;
      uint64_t sequence = 0;
      v1::Event from = fleet[i].last_steps;  // the latest step report sent
      int64_t last_step = from.steps().step();
      int fine = 0;
      while (!stop && at < live.size()) {
        v1::EventBatch b;
        b.set_sequence(++sequence);
        const absl::Time now = absl::Now();
        while (at < live.size() && flightplan::convert::TimeFromProto(live[at].time()) <= now) {
          if (live[at].has_steps()) {
            from = live[at];
            last_step = from.steps().step();
          }
          *b.add_events() = live[at++];
        }
        // Between two of the simulator's step reports (minutes apart), the step reached by
        // now, as a job reporting every few steps would send it.
        if (b.events_size() == 0 && at < live.size() && live[at].has_steps() && from.has_steps() &&
            live[at].attempt() == from.attempt() &&
            (at == 0 || live[at - 1].has_steps() || live[at - 1].has_checkpoint_saved())) {
          const v1::Event& to = live[at];
          const absl::Time t0 = flightplan::convert::TimeFromProto(from.time());
          const absl::Time t1 = flightplan::convert::TimeFromProto(to.time());
          const double share = absl::FDivDuration(now - t0, t1 - t0);
          const int64_t steps = to.steps().step() - from.steps().step();
          const int64_t step = from.steps().step() + static_cast<int64_t>(share * static_cast<double>(steps));
          if (steps > 0 && step > last_step && step < to.steps().step()) {
            v1::Event e = from;
            e.set_id(absl::StrCat(fleet[i].name, "-fine-", ++fine));
            *e.mutable_time() = flightplan::convert::TimeToProto(now);
            e.mutable_steps()->set_step(step);
            e.mutable_steps()->set_tokens(from.steps().tokens() + (to.steps().tokens() - from.steps().tokens()) /
                                                                      steps * (step - from.steps().step()));
            *b.add_events() = e;
            last_step = step;
          }
        }
        if (b.events_size() > 0) {
          grpc::ClientContext ctx;
          v1::BatchAck ack;
          const grpc::Status st = stub->ReportBatch(&ctx, b, &ack);
          if (st.ok()) {
            streamed += ack.accepted();
          } else {
            std::fprintf(stderr, "  %s: %s\n", fleet[i].name.c_str(), st.error_message().c_str());
          }
        }
        std::this_thread::sleep_for(std::chrono::seconds(3));
      }
    });
  }
  const std::string before = Scrape(daemon->metrics_port());
  const double cpu_before = ProcessCpuSeconds(daemon->pid());
  const auto start = Clock::now();
  std::vector<double> scrape, page;
  size_t scrape_bytes = 0;
  while (Since(start) < window) {
    auto t = Clock::now();
    const std::string body = Scrape(daemon->metrics_port());
    scrape.push_back(body.empty() ? INFINITY : Since(t));
    scrape_bytes = body.size();
    t = Clock::now();
    const bool page_ok = flightplan::testing::HttpGet(daemon->metrics_port(), "/runs/").rfind("HTTP/1.1 200", 0) == 0;
    page.push_back(page_ok ? Since(t) : INFINITY);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  const double seconds = Since(start);
  const double process_cpu = ProcessCpuSeconds(daemon->pid()) - cpu_before;
  const std::string after = Scrape(daemon->metrics_port());
  stop = true;
  for (std::thread& t : streams) t.join();
  const std::string live_sims = "flightplan_forecast_simulations_total{kind=\"live\"}";
  const std::string live_cpu = "flightplan_forecast_simulation_cpu_seconds_total{kind=\"live\"}";
  const double sims = Series(after, live_sims) - Series(before, live_sims);
  const double cpu = Series(after, live_cpu) - Series(before, live_cpu);
  const double per_simulation = sims > 0 ? cpu / sims : 0;
  std::printf(
      "  over %.0f s (--forecast-refresh %.0f s, %llu events streamed by %zu runs): %.0f simulations, %.2f ms of "
      "CPU each\n",
      seconds, refresh, static_cast<unsigned long long>(streamed.load()), streaming, sims, per_simulation * 1e3);
  std::printf("  a refresh of %zu runs: %.2f core-seconds; the forecaster took %.0f%% of a core, the daemon %.0f%%\n",
              runs, per_simulation * static_cast<double>(runs), 100 * cpu / seconds, 100 * process_cpu / seconds);
  std::printf("  GET /metrics of %zu runs: p50 %.1f ms, max %.1f ms (%zu scrapes, %.1f MB each)\n", runs,
              Percentile(scrape, 0.5) * 1e3, Percentile(scrape, 1.0) * 1e3, scrape.size(),
              static_cast<double>(scrape_bytes) / 1e6);
  std::printf("  GET /runs/ of %zu runs: p50 %.1f ms, max %.1f ms\n", runs, Percentile(page, 0.5) * 1e3,
              Percentile(page, 1.0) * 1e3);

  // At rest: loaded, and again after a restart (the runs recovered from their snapshots),
  // each once the daemon has been at rest long enough for its heap keeper to hand the pages
  // freed by the load, the first forecasts and the scrapes back to the system
  // (daemon/heap_keeper.h: looks every second, trims at most every 5 s).
  constexpr auto kAtRest = std::chrono::seconds(12);
  std::this_thread::sleep_for(kAtRest);
  const Memory rest = MemoryOf(daemon->pid());
  daemon->child().Signal(SIGTERM);
  daemon->child().Wait();
  daemon = std::make_unique<DaemonChild>(db, dir + "/daemon-restarted.log", flags);
  if (daemon->address().empty()) return 1;
  WaitForSimulations(daemon->metrics_port(), static_cast<double>(runs), 300);
  std::this_thread::sleep_for(kAtRest);
  const Memory restarted = MemoryOf(daemon->pid());
  const double per_run_loaded = (rest.rss - empty.rss) * 1024 / static_cast<double>(runs);
  const double per_run_restarted = (restarted.rss - empty.rss) * 1024 / static_cast<double>(runs);
  std::printf(
      "  memory per run at rest: %.0f KiB after the load and window (%.1f MiB), %.0f KiB after a restart "
      "(%.1f MiB), beside %.1f MiB empty\n",
      per_run_loaded, rest.rss, per_run_restarted, restarted.rss, empty.rss);
  // Exactly once: every run holds what was sent to it.
  size_t wrong = 0;
  {
    auto stub = daemon->Stub();
    for (size_t i = 0; i < runs; ++i) {
      grpc::ClientContext ctx;
      v1::GetStatusRequest request;
      request.set_run(fleet[i].name);
      v1::RunStatus status;
      size_t sent = 0;
      for (const v1::EventBatch& b : fleet[i].history) sent += static_cast<size_t>(b.events_size());
      if (!stub->GetStatus(&ctx, request, &status).ok() || status.events() < sent) ++wrong;
    }
  }
  std::printf("  runs holding every event sent: %zu of %zu\n", runs - wrong, runs);
  daemon->child().Signal(SIGTERM);
  daemon->child().Wait();
  daemon.reset();

  bool exact = wrong == 0;
  if (backfill_runs > 0) {
    for (size_t cap : {budget, size_t{0}}) {
      const BackfillFigures b = Backfill(dir, *plan, backfill_runs, backfill_events, cap);
      std::printf(
          "  backfill of %zu runs x %zu events, %s: %.0f events/s; states held at most %.1f MiB; daemon %s MiB at "
          "each quarter, peak %.1f MiB\n",
          backfill_runs, backfill_events, cap > 0 ? absl::StrCat("budget ", cap >> 20, " MiB").c_str() : "no budget",
          b.events_per_second, b.peak_states_bytes / (1 << 20),
          [&] {
            std::string s;
            for (double r : b.rss_at_quarters) absl::StrAppend(&s, s.empty() ? "" : ", ", static_cast<int>(r));
            return s;
          }()
              .c_str(),
          b.peak_rss);
      exact = exact && b.exact;
    }
  }
  if (std::getenv("FLIGHTPLAN_BENCH_KEEP") != nullptr) {
    std::printf("  kept %s (FLIGHTPLAN_BENCH_KEEP)\n", dir.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
  return exact ? 0 : 1;
}
