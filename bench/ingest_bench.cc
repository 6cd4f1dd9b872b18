// Ingest benchmark: events/s through a real flightpland (gRPC on loopback, the writer,
// SQLite) beside this machine's SQLite ceiling measured in the same run: bulk inserts of
// as many rows, with the same unique key, in transactions of the same size. Also the
// restart time on the resulting database, with and without snapshots.
//
//   flightplan_bench [--events N] [--batch B]
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/plan_file.h"
#include "convert/plan_convert.h"
#include "daemon/daemon.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "forecast/forecaster.h"
#include "forecast/simulator.h"
#include "grpcpp/grpcpp.h"
#include "planner/plan_engine.h"
#include "tests/event_log.h"
#include "tests/http_get.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void Check(int rc, sqlite3* db) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE) {
    std::fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
    std::exit(1);
  }
}

// Raw SQLite: the same table, index, journal and sync mode as flightpland, one prepared
// INSERT, `batch` rows per transaction. The payloads are the same serialized events.
double SqliteCeiling(const std::string& path, const std::vector<std::string>& payloads,
                     const std::vector<std::string>& keys, size_t batch) {
  sqlite3* db = nullptr;
  Check(sqlite3_open(path.c_str(), &db), db);
  Check(sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE events(seq INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, "
                     "key TEXT NOT NULL, time_us INTEGER NOT NULL, event BLOB NOT NULL);"
                     "CREATE UNIQUE INDEX events_by_key ON events(run_id, key);",
                     nullptr, nullptr, nullptr),
        db);
  sqlite3_stmt* insert = nullptr;
  Check(sqlite3_prepare_v2(db,
                           "INSERT INTO events(run_id, key, time_us, event) VALUES(1, ?1, ?2, ?3) "
                           "ON CONFLICT(run_id, key) DO NOTHING",
                           -1, &insert, nullptr),
        db);
  const auto start = Clock::now();
  for (size_t i = 0; i < payloads.size(); i += batch) {
    Check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db);
    for (size_t j = i; j < std::min(payloads.size(), i + batch); ++j) {
      sqlite3_bind_text(insert, 1, keys[j].data(), static_cast<int>(keys[j].size()), SQLITE_STATIC);
      sqlite3_bind_int64(insert, 2, static_cast<sqlite3_int64>(j));
      sqlite3_bind_blob(insert, 3, payloads[j].data(), static_cast<int>(payloads[j].size()), SQLITE_STATIC);
      Check(sqlite3_step(insert), db);
      sqlite3_reset(insert);
    }
    Check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db);
  }
  const double seconds = Since(start);
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return static_cast<double>(payloads.size()) / seconds;
}

flightplan::daemon::DaemonOptions Options(const std::string& db, uint64_t snapshot_every) {
  flightplan::daemon::DaemonOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics = "";
  o.db = db;
  o.tracker.events_clock = true;
  o.tracker.snapshot_every_events = snapshot_every;
  return o;
}

// Starts a daemon with `options`, creates the run and streams `log` on one ReportEvents
// stream; events/s, or 0 (with a message) when anything was refused.
// `watchers` WatchStatus streams on the run read throughout, as dashboards would.
double StreamInto(std::unique_ptr<flightplan::daemon::Daemon>& d, const flightplan::daemon::DaemonOptions& options,
                  const flightplan::v1::Plan& plan, const std::vector<flightplan::v1::Event>& log, size_t batch,
                  int watchers = 0) {
  auto started = flightplan::daemon::Daemon::Start(options);
  if (!started.ok()) {
    std::fprintf(stderr, "%s\n", std::string(started.status().message()).c_str());
    return 0;
  }
  d = std::move(*started);
  auto stub = flightplan::v1::Tracker::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", d->grpc_port()), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    flightplan::v1::CreateRunRequest create;
    *create.mutable_plan() = plan;
    flightplan::v1::CreateRunResponse response;
    if (!stub->CreateRun(&ctx, create, &response).ok()) return 0;
  }
  std::vector<std::unique_ptr<grpc::ClientContext>> watch_contexts;
  std::vector<std::thread> watch_threads;
  std::atomic<uint64_t> statuses{0};
  for (int w = 0; w < watchers; ++w) {
    watch_contexts.push_back(std::make_unique<grpc::ClientContext>());
    grpc::ClientContext* wctx = watch_contexts.back().get();
    watch_threads.emplace_back([&, wctx] {
      flightplan::v1::GetStatusRequest request;
      request.set_run(plan.name());
      auto reader = stub->WatchStatus(wctx, request);
      flightplan::v1::RunStatus s;
      while (reader->Read(&s)) ++statuses;
      reader->Finish().IgnoreError();
    });
  }
  grpc::ClientContext ctx;
  auto stream = stub->ReportEvents(&ctx);
  const auto start = Clock::now();
  uint64_t sequence = 0;
  std::thread writer([&] {
    for (size_t i = 0; i < log.size(); i += batch) {
      flightplan::v1::EventBatch b;
      b.set_sequence(++sequence);
      for (size_t j = i; j < std::min(log.size(), i + batch); ++j) *b.add_events() = log[j];
      stream->Write(b);
    }
    stream->WritesDone();
  });
  flightplan::v1::BatchAck ack;
  uint64_t accepted = 0, refused = 0;
  while (stream->Read(&ack)) {
    accepted += ack.accepted();
    if (ack.code() != 0) ++refused;
  }
  writer.join();
  const grpc::Status st = stream->Finish();
  const double rate = static_cast<double>(accepted) / Since(start);
  for (auto& c : watch_contexts) c->TryCancel();
  for (std::thread& t : watch_threads) t.join();
  if (watchers > 0) {
    std::printf("    (%d watchers received %llu statuses)\n", watchers,
                static_cast<unsigned long long>(statuses.load()));
  }
  if (!st.ok() || accepted != log.size()) {
    std::fprintf(stderr, "stream: %s, %llu accepted, %llu batches refused\n", st.error_message().c_str(),
                 static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(refused));
    return 0;
  }
  return rate;
}

}  // namespace

// The forecaster's cost per run per refresh: the flagship plan's simulated run folded to
// half way (the evidence windows and dispersion are read from a full history), then the
// simulation the daemon's forecaster thread runs (2,000 draws, the default) and the cheap
// part every status read and scrape runs, each timed over repeats.
static void ForecasterCost() {
  namespace fc = flightplan::forecast;
  absl::StatusOr<flightplan::v1::Plan> plan = flightplan::cli::LoadPlanFile(FLIGHTPLAN_FLAGSHIP);
  if (!plan.ok()) return;
  const fc::PlanSpec spec = flightplan::convert::PlanFromProto(*plan);
  const fc::PlanReport report = flightplan::planner::ComputePlan(spec);
  const fc::ForecastPrior prior = fc::PriorFromPlan(spec, report);
  fc::SimulationOptions so = fc::FindScenario("chaotic-start")->options;
  const std::vector<fc::Event> events = fc::SimulateRun(spec, report, so);
  fc::RunState state;
  for (const fc::Event& e : events) {
    if (state.tokens * 2 >= prior.target_tokens) break;
    (void)fc::ApplyEvent(state, e);
  }
  using Clock = std::chrono::steady_clock;
  for (fc::EvidenceModel model :
       {fc::EvidenceModel::kLifetime, fc::EvidenceModel::kChangepoint, fc::EvidenceModel::kFutures}) {
    fc::ForecastOptions options;
    options.model = model;
    constexpr int kRepeats = 50;
    auto t = Clock::now();
    double sink = 0;
    for (int i = 0; i < kRepeats; ++i) sink += fc::Simulate(state, prior, state.last_time, options).finish_p50_seconds;
    const double simulate = std::chrono::duration<double>(Clock::now() - t).count() / kRepeats;
    t = Clock::now();
    for (int i = 0; i < kRepeats * 20; ++i) sink += fc::ForecastNow(state, prior, state.last_time).burn_rate;
    const double now_part = std::chrono::duration<double>(Clock::now() - t).count() / (kRepeats * 20);
    std::printf(
        "  forecaster (%s, %d draws, %llu events, %zu evidence samples): simulate %.2f ms, "
        "cheap part %.1f us per run per refresh; 1,000 runs: %.2f s of one core per refresh%s\n",
        fc::EvidenceModelName(model), options.draws, static_cast<unsigned long long>(state.events),
        state.evidence.size(), simulate * 1e3, now_part * 1e6, 1000 * simulate, sink < 0 ? " " : "");
  }
}

// The planner's cost: one report of each example plan (the BLOOM one in phases, with a
// 116-size batch ramp), and the deadline search over every dp that divides the batch.
static void PlannerCost() {
  namespace fc = flightplan::forecast;
  using Clock = std::chrono::steady_clock;
  const std::string examples = std::filesystem::path(FLIGHTPLAN_FLAGSHIP).parent_path().string();
  for (const char* name : {"dense-70b-10t.yaml", "moe-400b-a50b-15t.yaml", "bloom-176b.yaml"}) {
    absl::StatusOr<flightplan::v1::Plan> plan = flightplan::cli::LoadPlanFile(examples + "/" + name);
    if (!plan.ok()) continue;
    const fc::PlanSpec spec = flightplan::convert::PlanFromProto(*plan);
    constexpr int kRepeats = 200;
    auto t = Clock::now();
    double sink = 0;
    for (int i = 0; i < kRepeats; ++i) sink += flightplan::planner::ComputePlan(spec).schedule.total_seconds;
    const double report = std::chrono::duration<double>(Clock::now() - t).count() / kRepeats;
    t = Clock::now();
    const flightplan::planner::DeadlineFleet fleet =
        flightplan::planner::FindFleetForDeadline(spec, *spec.start_time + absl::Hours(24 * 30));
    const double search = std::chrono::duration<double>(Clock::now() - t).count();
    std::printf("  planner (%s): report %.1f us; deadline search %.1f ms (%s)%s\n", name, report * 1e6, search * 1e3,
                fleet.met ? "met" : "not met", sink < 0 ? " " : "");
  }
}

int main(int argc, char** argv) {
  size_t events = 300000, batch = 1000;
  if (argc > 1 && std::string(argv[1]) == "--forecaster-only") {
    ForecasterCost();
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--events")
      events = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--batch")
      batch = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("flightplan-bench-", getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string run = "bench";
  std::vector<flightplan::v1::Event> log = flightplan::testing::SyntheticRun(run, static_cast<int64_t>(events), 1);
  log.resize(std::min(log.size(), events));
  std::vector<std::string> payloads, keys;
  for (const auto& e : log) {
    payloads.push_back(e.SerializeAsString());
    keys.push_back(e.id());
  }
  std::printf("flightplan ingest benchmark: %zu events in batches of %zu\n", log.size(), batch);

  const double ceiling = SqliteCeiling(dir + "/ceiling.db", payloads, keys, batch);
  std::printf("  SQLite ceiling (bulk insert, same schema and key, WAL, NORMAL): %10.0f rows/s\n", ceiling);

  absl::StatusOr<flightplan::v1::Plan> plan = flightplan::cli::LoadPlanFile(FLIGHTPLAN_FLAGSHIP);
  if (!plan.ok()) return 1;
  plan->set_name(run);
  const std::string db = dir + "/daemon.db";
  double streamed = 0;
  {
    std::unique_ptr<flightplan::daemon::Daemon> d;
    streamed = StreamInto(d, Options(db, 20000), *plan, log, batch);
    if (streamed == 0) return 1;
    auto stub = flightplan::v1::Tracker::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", d->grpc_port()), grpc::InsecureChannelCredentials()));
    std::printf("  flightpland, ReportEvents stream over loopback gRPC:          %10.0f events/s\n", streamed);

    // One event per unary call, one at a time: the latency a training loop's client sees.
    const int calls = 2000;
    const auto unary_start = Clock::now();
    for (int i = 0; i < calls; ++i) {
      grpc::ClientContext c;
      flightplan::v1::EventBatch b;
      *b.add_events() = log[static_cast<size_t>(i)];  // duplicates: the full round trip, no state change
      flightplan::v1::BatchAck a;
      stub->ReportBatch(&c, b, &a);
    }
    std::printf("  unary ReportBatch, 1 event, sequential: %.0f us per call\n", Since(unary_start) / calls * 1e6);

    // A late event: a checkpoint saved half way through, reported now. The run is folded
    // again from its whole log in time order (the cost of a late-filed failure).
    for (size_t i = log.size() / 2; i < log.size(); ++i) {
      if (!log[i].has_steps()) continue;
      flightplan::v1::Event late;
      late.set_run(run);
      late.set_id("late-checkpoint");
      *late.mutable_time() = log[i].time();
      late.mutable_time()->set_nanos(late.time().nanos() + 1000);
      late.mutable_checkpoint_saved()->set_step(log[i].steps().step());
      grpc::ClientContext c;
      flightplan::v1::EventBatch b;
      *b.add_events() = late;
      flightplan::v1::BatchAck a;
      const auto t = Clock::now();
      const grpc::Status st = stub->ReportBatch(&c, b, &a);
      const double seconds = Since(t);
      if (!st.ok()) std::fprintf(stderr, "late event refused: %s\n", st.error_message().c_str());
      std::printf("  a late event (the run folded again, %zu events): %.0f ms, %.0f events/s folded\n", log.size() + 1,
                  seconds * 1e3, static_cast<double>(log.size()) / seconds);
      break;
    }
  }
  std::printf("  ratio to the SQLite ceiling: %.2f\n", streamed / ceiling);
  {
    // The same stream with --sync full (an fsync at every commit).
    flightplan::daemon::DaemonOptions full = Options(dir + "/full.db", 20000);
    full.sync = flightplan::storage::Sync::kFull;
    std::unique_ptr<flightplan::daemon::Daemon> d;
    const double rate = StreamInto(d, full, *plan, log, batch);
    if (rate == 0) return 1;
    std::printf("  the same stream with --sync full:                              %10.0f events/s (%.0f%% of normal)\n",
                rate, 100 * rate / streamed);
  }
  {
    // The same stream without the backfill's history states (--backfill-spacing 0), and
    // with them again after it (the first stream of the process runs cold): what keeping
    // a state per hour of the run's time, and simulating them, costs the ingest (this
    // stream spans SyntheticRun's 10-second steps, weeks of the run).
    flightplan::daemon::DaemonOptions off = Options(dir + "/nobackfill.db", 20000);
    off.tracker.backfill_spacing = absl::ZeroDuration();
    double without = 0, with = 0;
    {
      std::unique_ptr<flightplan::daemon::Daemon> d;
      without = StreamInto(d, off, *plan, log, batch);
    }
    {
      std::unique_ptr<flightplan::daemon::Daemon> d;
      with = StreamInto(d, Options(dir + "/backfill.db", 20000), *plan, log, batch);
    }
    if (without == 0 || with == 0) return 1;
    std::printf(
        "  the same stream without backfill states, then with them again: %10.0f, %.0f events/s "
        "(with / without %.2f; ratios to the ceiling %.2f, %.2f)\n",
        without, with, with / without, without / ceiling, with / ceiling);
  }

  {
    // The same stream with 100 WatchStatus readers on the run: their statuses are built on
    // the watch pump, not on the writer thread, so they should cost the ingest little.
    double alone = 0, watched = 0;
    {
      std::unique_ptr<flightplan::daemon::Daemon> d;
      alone = StreamInto(d, Options(dir + "/alone.db", 20000), *plan, log, batch);
    }
    {
      std::unique_ptr<flightplan::daemon::Daemon> d;
      watched = StreamInto(d, Options(dir + "/watched.db", 20000), *plan, log, batch, 100);
    }
    if (alone == 0 || watched == 0) return 1;
    std::printf(
        "  the same stream alone, then with 100 watchers:                 %10.0f, %.0f events/s "
        "(watched / alone %.2f)\n",
        alone, watched, watched / alone);
  }

  // Restart on the database just written: with snapshots (every 20,000 events), then
  // forcing a fold of the whole log.
  auto restart = [&](const char* what) {
    const auto t = Clock::now();
    auto d = flightplan::daemon::Daemon::Start(Options(db, 20000));
    const double seconds = Since(t);
    const uint64_t folded = d.ok() ? (*d)->tracker().Find(run)->state.events : 0;
    std::printf("  restart %s: %.3f s to serve (%llu events in the run's state)\n", what, seconds,
                static_cast<unsigned long long>(folded));
  };
  restart("with snapshots");
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_exec(raw, "DELETE FROM snapshots; UPDATE meta SET value = 0;", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  restart("folding the whole log");

  // Scrapes with 100 active runs, each a few thousand events into its run: GET /metrics
  // over loopback, median of 20, beside the daemon's own single-run scrape.
  {
    flightplan::daemon::DaemonOptions o = Options(dir + "/scrape.db", 20000);
    o.metrics = "127.0.0.1:0";
    auto d = flightplan::daemon::Daemon::Start(o);
    if (!d.ok()) return 1;
    auto stub = flightplan::v1::Tracker::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*d)->grpc_port()), grpc::InsecureChannelCredentials()));
    const int runs = 100;
    for (int r = 0; r < runs; ++r) {
      const std::string name = absl::StrCat("run-", r);
      grpc::ClientContext c1;
      flightplan::v1::CreateRunRequest create;
      *create.mutable_plan() = *plan;
      create.set_run(name);
      flightplan::v1::CreateRunResponse created;
      stub->CreateRun(&c1, create, &created);
      std::vector<flightplan::v1::Event> events =
          flightplan::testing::SyntheticRun(name, 2000, static_cast<uint32_t>(r));
      events.resize(events.size() / 2);  // runs in progress
      for (size_t i = 0; i < events.size(); i += 1000) {
        grpc::ClientContext c2;
        flightplan::v1::EventBatch b;
        for (size_t j = i; j < std::min(events.size(), i + 1000); ++j) *b.add_events() = events[j];
        flightplan::v1::BatchAck a;
        stub->ReportBatch(&c2, b, &a);
      }
    }
    std::vector<double> times;
    size_t bytes = 0;
    for (int i = 0; i < 20; ++i) {
      const auto t = Clock::now();
      bytes = flightplan::testing::HttpGet((*d)->metrics_port(), "/metrics").size();
      times.push_back(Since(t));
    }
    std::sort(times.begin(), times.end());
    std::printf("  GET /metrics with %d runs: %.1f ms median (%zu bytes)\n", runs, times[10] * 1e3, bytes);
  }
  ForecasterCost();
  PlannerCost();
  std::filesystem::remove_all(dir);
  return 0;
}
