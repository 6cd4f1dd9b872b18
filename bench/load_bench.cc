// Load benchmark: many clients streaming to many runs of one flightpland at once (the
// real binary, a child process, loopback gRPC), while a prober times one-event unary
// reports and a slow reader holds a WatchStatus stream it hardly reads. Prints throughput,
// the RESOURCE_EXHAUSTED refusals that keep the ingest queue bounded, unary latency idle
// and under load, and the daemon's resident memory as events accumulate (it should follow
// the number of runs, not of events). Ends by checking that every run holds exactly the
// events its client sent.
//
//   flightplan_load_bench [--clients 64] [--events 20000] [--batch 100] [--max-queue 256]
//                         [--slow-http 256] [--expect-backpressure]
//
// Then, with the runs loaded, --slow-http connections that send nothing or half a request
// line (a port scanner, a stuck tab, slowloris) are held open on the metrics address while
// /metrics and the runs list are timed.
//
// --events is per client; each client streams to its own run.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_support.h"
#include "cli/plan_file.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/event_log.h"
#include "tests/http_get.h"
#include "tests/subprocess.h"

namespace {

namespace v1 = flightplan::v1;
using namespace flightplan::bench;  // NOLINT(build/namespaces): the benchmarks' shared helpers

// One-event ReportBatch calls on the "probe" run, one at a time; latency of each accepted.
std::vector<double> Probe(v1::Tracker::Stub& stub, const std::vector<v1::Event>& events, size_t& at,
                          const std::atomic<bool>& stop, int max_calls, uint64_t& refused) {
  std::vector<double> latencies;
  while (!stop && at < events.size() && static_cast<int>(latencies.size()) < max_calls) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::EventBatch b;
    *b.add_events() = events[at];
    v1::BatchAck ack;
    const auto t = Clock::now();
    const grpc::Status st = stub.ReportBatch(&ctx, b, &ack);
    const double seconds = Since(t);
    if (st.ok()) {
      latencies.push_back(seconds);
      ++at;
    } else {
      ++refused;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return latencies;
}

}  // namespace

int main(int argc, char** argv) {
  size_t clients = 64, events_per_client = 20000, batch = 100, max_queue = 256, slow_http = 256;
  bool expect_backpressure = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--expect-backpressure") {
      expect_backpressure = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "flightplan_load_bench [--clients N] [--events N] [--batch N] [--max-queue N]\n"
          "  --clients    concurrent streaming clients, each to its own run (64)\n"
          "  --events     events each client streams (20000)\n"
          "  --batch      events per batch (100)\n"
          "  --max-queue  the daemon's --max-queue: requests waiting for the writer (256)\n"
          "  --slow-http  idle and half-sent HTTP connections held while /metrics is timed (256)\n"
          "  --expect-backpressure  fail unless some batch was refused RESOURCE_EXHAUSTED\n"
          "Exits 1 unless every run ends with exactly the events its client sent.\n");
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "flightplan_load_bench: %s needs a value (see --help)\n", flag.c_str());
      return 2;
    }
    const size_t value = std::strtoull(argv[++i], nullptr, 10);
    if (flag == "--clients")
      clients = value;
    else if (flag == "--events")
      events_per_client = value;
    else if (flag == "--batch")
      batch = value;
    else if (flag == "--max-queue")
      max_queue = value;
    else if (flag == "--slow-http")
      slow_http = value;
    else {
      std::fprintf(stderr, "flightplan_load_bench: unknown flag %s (see --help)\n", flag.c_str());
      return 2;
    }
    if (value == 0) {
      std::fprintf(stderr, "flightplan_load_bench: %s must be positive\n", flag.c_str());
      return 2;
    }
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("flightplan-load-", getpid())).string();
  std::filesystem::create_directories(dir);
  absl::StatusOr<v1::Plan> plan = flightplan::cli::LoadPlanFile(FLIGHTPLAN_FLAGSHIP);
  if (!plan.ok()) return 1;

  std::printf(
      "flightplan load benchmark: %zu clients streaming %zu events each (batches of %zu) "
      "to %zu runs, --max-queue %zu\n",
      clients, events_per_client, batch, clients, max_queue);
  std::fflush(stdout);
  flightplan::testing::Child daemon(
      {FLIGHTPLAN_DAEMON_BIN, "--db", dir + "/load.db", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
       "--clock", "events", "--max-queue", std::to_string(max_queue)},
      dir + "/daemon.log");
  const std::string log = daemon.WaitForLog("serving gRPC on", 20);
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("serving gRPC on (127\\.0\\.0\\.1:[0-9]+)"))) {
    std::fprintf(stderr, "flightpland did not start:\n%s\n", log.c_str());
    return 1;
  }
  const std::string address = m[1].str();
  int metrics_port = 0;
  if (std::regex_search(log, m, std::regex("metrics on http://127\\.0\\.0\\.1:([0-9]+)"))) {
    metrics_port = std::stoi(m[1].str());
  }
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Tracker::NewStub(channel);
  const Memory empty = MemoryOf(daemon.pid());

  // The runs, and every client's batches, prepared before the clock starts.
  std::vector<std::vector<v1::EventBatch>> work(clients);
  for (size_t c = 0; c < clients; ++c) {
    const std::string name = absl::StrCat("load-", c);
    if (!CreateRun(*stub, *plan, name)) return 1;
    std::vector<v1::Event> events =
        flightplan::testing::SyntheticRun(name, static_cast<int64_t>(events_per_client), static_cast<uint32_t>(c + 1));
    events.resize(std::min(events.size(), events_per_client));
    for (size_t i = 0; i < events.size(); i += batch) {
      v1::EventBatch b;
      b.set_sequence(work[c].size() + 1);
      for (size_t j = i; j < std::min(events.size(), i + batch); ++j) *b.add_events() = events[j];
      work[c].push_back(std::move(b));
    }
  }
  if (!CreateRun(*stub, *plan, "probe")) return 1;
  const std::vector<v1::Event> probe_events = flightplan::testing::SyntheticRun("probe", 100000, 99);
  const Memory idle = MemoryOf(daemon.pid());
  std::printf("  daemon memory: %.1f MiB empty, %.1f MiB with %zu runs created (%.0f KiB per run)\n", empty.rss,
              idle.rss, clients + 1, (idle.rss - empty.rss) * 1024 / static_cast<double>(clients + 1));

  // Unary latency with the daemon idle.
  size_t probe_at = 0;
  uint64_t probe_refused = 0;
  std::atomic<bool> stop{false};
  const std::vector<double> idle_latency = Probe(*stub, probe_events, probe_at, stop, 200, probe_refused);

  // The slow reader: takes the first status of load-0, then does not read again until
  // the load is over. The daemon keeps only the latest status for it.
  grpc::ClientContext watch_ctx;
  v1::GetStatusRequest watch_request;
  watch_request.set_run("load-0");
  auto watch = stub->WatchStatus(&watch_ctx, watch_request);
  v1::RunStatus watched;
  watch->Read(&watched);

  // The load, with the prober and a sampler of memory and queue depth beside it.
  std::atomic<uint64_t> progress{0};
  const uint64_t total = clients * events_per_client;
  std::vector<StreamStats> stats(clients);
  std::vector<std::thread> threads;
  std::vector<std::pair<uint64_t, Memory>> memory_by_events;
  double max_queue_seen = 0;
  std::mutex sample_mu;
  std::thread sampler([&] {
    uint64_t next_mark = total / 4;
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const uint64_t done = progress;
      const Memory mem = MemoryOf(daemon.pid());
      const std::string metrics = metrics_port ? flightplan::testing::HttpGet(metrics_port, "/metrics") : "";
      std::smatch q;
      std::lock_guard<std::mutex> lock(sample_mu);
      if (std::regex_search(metrics, q, std::regex("\nflightplan_ingest_queue_depth ([0-9.e+]+)"))) {
        max_queue_seen = std::max(max_queue_seen, std::strtod(q[1].str().c_str(), nullptr));
      }
      if (done >= next_mark && next_mark > 0) {
        memory_by_events.emplace_back(done, mem);
        next_mark += total / 4;
      }
    }
  });
  const auto start = Clock::now();
  for (size_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      // A channel per client, as separate training jobs would have.
      auto own = v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      StreamAll(*own, work[c], stats[c], progress);
    });
  }
  std::vector<double> load_latency;
  std::thread prober([&] { load_latency = Probe(*stub, probe_events, probe_at, stop, 1 << 30, probe_refused); });
  std::thread reporter([&] {
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      if (stop) break;
      std::fprintf(stderr, "  ... %llu of %llu events (%.0f%%), %.0f s\n",
                   static_cast<unsigned long long>(progress.load()), static_cast<unsigned long long>(total),
                   100.0 * static_cast<double>(progress) / static_cast<double>(total), Since(start));
    }
  });
  for (std::thread& t : threads) t.join();
  const double seconds = Since(start);
  stop = true;
  prober.join();
  sampler.join();
  reporter.join();
  const Memory after = MemoryOf(daemon.pid());

  StreamStats sum;
  for (const StreamStats& s : stats) {
    sum.accepted += s.accepted;
    sum.duplicates += s.duplicates;
    sum.exhausted += s.exhausted;
    sum.aborted += s.aborted;
    sum.other += s.other;
    sum.streams += s.streams;
  }
  std::printf("  throughput: %.0f events/s (%llu events in %.1f s)\n", static_cast<double>(sum.accepted) / seconds,
              static_cast<unsigned long long>(sum.accepted), seconds);
  std::printf(
      "  back-pressure: %llu batches refused RESOURCE_EXHAUSTED (%llu more ABORTED behind them), "
      "%llu streams opened for %zu clients; ingest queue depth at most %.0f (sampled; "
      "each of its two lanes holds at most %zu)\n",
      static_cast<unsigned long long>(sum.exhausted), static_cast<unsigned long long>(sum.aborted),
      static_cast<unsigned long long>(sum.streams), clients, max_queue_seen, max_queue);
  std::printf(
      "  unary ReportBatch, 1 event: idle p50 %.2f ms p99 %.2f ms; under load p50 %.2f ms p99 %.2f ms "
      "max %.2f ms (%zu calls, %llu refused)\n",
      Percentile(idle_latency, 0.5) * 1e3, Percentile(idle_latency, 0.99) * 1e3, Percentile(load_latency, 0.5) * 1e3,
      Percentile(load_latency, 0.99) * 1e3, Percentile(load_latency, 1.0) * 1e3, load_latency.size(),
      static_cast<unsigned long long>(probe_refused));
  std::printf("  daemon memory as events accumulate:");
  for (const auto& [events, mem] : memory_by_events) {
    std::printf(" %.1f MiB at %.0fk,", mem.rss, static_cast<double>(events) / 1e3);
  }
  std::printf(" %.1f MiB at the end (peak %.1f MiB)\n", after.rss, after.peak);

  // The slow reader now reads: the statuses it was sent while it slept, then the latest.
  int watch_messages = 0;
  uint64_t watch_events = watched.events();
  const auto watch_deadline = Clock::now() + std::chrono::seconds(10);
  while (watch_events < events_per_client && Clock::now() < watch_deadline && watch->Read(&watched)) {
    ++watch_messages;
    watch_events = watched.events();
  }
  watch_ctx.TryCancel();
  watch->Finish().IgnoreError();
  std::printf(
      "  slow WatchStatus reader: %d statuses waiting for it after %zu batches to its run; "
      "the last shows %llu of %zu events\n",
      watch_messages, work[0].size(), static_cast<unsigned long long>(watch_events), events_per_client);

  // Slow HTTP clients against the scrape, the runs loaded.
  if (metrics_port != 0) {
    std::vector<int> slow;
    for (size_t i = 0; i < slow_http; ++i) {
      const int fd = flightplan::testing::ConnectLoopback(metrics_port);
      if (fd < 0) break;
      if (i % 2 == 1 && write(fd, "GET /metr", 9) < 0) break;
      slow.push_back(fd);
    }
    std::vector<double> scrape, page;
    for (int i = 0; i < 5; ++i) {
      auto t = Clock::now();
      const bool ok = flightplan::testing::HttpGet(metrics_port, "/metrics").rfind("HTTP/1.1 200", 0) == 0;
      scrape.push_back(ok ? Since(t) : INFINITY);
      t = Clock::now();
      const bool page_ok = flightplan::testing::HttpGet(metrics_port, "/runs/").rfind("HTTP/1.1 200", 0) == 0;
      page.push_back(page_ok ? Since(t) : INFINITY);
    }
    std::printf(
        "  with %zu slow HTTP connections held: /metrics of %zu runs p50 %.1f ms max %.1f ms, "
        "/runs/ p50 %.1f ms max %.1f ms (5 each)\n",
        slow.size(), clients, Percentile(scrape, 0.5) * 1e3, Percentile(scrape, 1.0) * 1e3, Percentile(page, 0.5) * 1e3,
        Percentile(page, 1.0) * 1e3);
    for (int fd : slow) close(fd);
  }

  // Exactly once: every run holds what its client sent.
  size_t wrong = 0;
  for (size_t c = 0; c < clients; ++c) {
    grpc::ClientContext ctx;
    v1::GetStatusRequest request;
    request.set_run(absl::StrCat("load-", c));
    v1::RunStatus status;
    if (!stub->GetStatus(&ctx, request, &status).ok() || status.events() != events_per_client) ++wrong;
  }
  std::printf("  runs holding exactly the events sent: %zu of %zu\n", clients - wrong, clients);
  daemon.Signal(SIGTERM);
  daemon.Wait();
  std::filesystem::remove_all(dir);
  if (expect_backpressure && sum.exhausted == 0) {
    std::fprintf(stderr, "expected RESOURCE_EXHAUSTED refusals with --max-queue %zu, saw none\n", max_queue);
    return 1;
  }
  return wrong == 0 && sum.other == 0 ? 0 : 1;
}
