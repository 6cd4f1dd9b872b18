// flightpland: tracks live pre-training runs against their plans.
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>

#include "CLI/CLI.hpp"
#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "storage/sqlite_store.h"

int main(int argc, char** argv) {
  // Block the stop signals before any library starts a thread; main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  flightplan::daemon::DaemonOptions options;
  options.db = flightplan::storage::DefaultDatabasePath();
  std::string clock = "wall";
  std::string sync = "normal";
  CLI::App app{
      "flightpland: ingests a training run's events over gRPC, stores them in SQLite, accounts "
      "every second of wall time and serves status and Prometheus metrics.\n"
      "SIGTERM or SIGINT drains: NOT_SERVING, stop accepting, commit what is queued, close, exit 0."};
  app.set_version_flag("--version", "flightpland " FLIGHTPLAN_VERSION);
  app.add_option("--listen", options.listen,
                 "gRPC address. Loopback by default: expose it beyond this host only with "
                 "--tls-cert/--tls-key and --token-file, or on a trusted network")
      ->capture_default_str();
  app.add_option("--metrics", options.metrics, "Prometheus /metrics address ('' disables it)")->capture_default_str();
  app.add_option("--db", options.db,
                 "SQLite database; created with its directory if absent. One daemon per file "
                 "(a second one fails at once)")
      ->capture_default_str();
  app.add_option("--clock", clock,
                 "wall: a run's 'now' is the wall clock, so a silent run shows as down or "
                 "stalled; events: its latest event, for replays and backfills of old logs")
      ->check(CLI::IsMember({"wall", "events"}))
      ->capture_default_str();
  app.add_option("--sync", sync,
                 "normal: WAL with synchronous=NORMAL survives a process crash but may lose "
                 "the last commits on power loss; full: survives power loss, at an fsync per "
                 "commit (little on a stream of large batches, more for many small reports)")
      ->check(CLI::IsMember({"normal", "full"}))
      ->capture_default_str();
  app.add_option("--max-batch-events", options.tracker.max_batch_events,
                 "events per batch; a larger batch gets INVALID_ARGUMENT naming the limit, and "
                 "flightplan's clients split it and resend")
      ->capture_default_str();
  std::string max_clock_skew = absl::FormatDuration(options.tracker.max_clock_skew);
  app.add_option("--max-clock-skew", max_clock_skew,
                 "with --clock wall, events dated more than this ahead of the daemon's clock are "
                 "refused (INVALID_ARGUMENT): a host clock that runs fast would otherwise count time "
                 "that has not happened (a duration: 30s, 5m, 1h)")
      ->capture_default_str();
  std::string max_event_gap = absl::FormatDuration(options.tracker.max_event_gap);
  app.add_option("--max-event-gap", max_event_gap,
                 "an event this far after its run's latest event is refused as a typo "
                 "(FAILED_PRECONDITION), whatever the clock: the year 3000 for 2027 would end the "
                 "run's tracking (a duration: 720h)")
      ->capture_default_str();
  app.add_option("--max-runs", options.tracker.max_runs,
                 "runs one daemon tracks; more are RESOURCE_EXHAUSTED (each costs memory, a "
                 "forecast and a label set in every scrape)")
      ->capture_default_str();
  app.add_option("--max-label-values", options.tracker.max_label_values,
                 "distinct interruption causes per run that get their own label value on /metrics; "
                 "later new causes are summed as 'other' there (bounds the series; the status "
                 "keeps every cause)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--node-info-metrics", options.node_info_metrics,
               "also flightplan_run_node_info{run,node} for each node each run's launch holds, to join the DCGM "
               "exporter's Hostname label in PromQL (a series per node of the fleet: off by default)");
  app.add_option("--max-queue", options.tracker.max_queue_requests,
                 "requests waiting for the writer, in each of two lanes (single reports and "
                 "plan changes go ahead of stream batches); beyond it clients get "
                 "RESOURCE_EXHAUSTED and retry (more absorbs bursts, costs memory and ack latency)")
      ->capture_default_str();
  double forecast_interval = absl::ToDoubleSeconds(options.tracker.forecast_min_interval);
  app.add_option("--forecast-interval", forecast_interval,
                 "seconds (wall time) between two simulations of one run's finish forecast, at "
                 "least: lower gives fresher forecasts under a stream of events and a denser "
                 "forecast history during fast replays, at more CPU (one 2,000-draw Monte "
                 "Carlo per run each time)")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  app.add_flag("--bad-period-law", options.tracker.bad_period_law,
               "end a crisis of failures and a slowdown in the forecast by the law from public records "
               "(forecast/bad_period.h; the plan's failures.crisis_fix_days and slowdown_fix_hours move it) "
               "rather than Gott's scale-free D/(D+x); off while the calibration suite scores it worse "
               "(docs/forecasting.md)");
  double forecast_refresh = absl::ToDoubleSeconds(options.tracker.forecast_refresh);
  app.add_option("--forecast-refresh", forecast_refresh,
                 "seconds (wall time) after which a run's forecast is simulated again though nothing "
                 "changed (--clock wall: a silent run's finish moves as time passes): higher costs less "
                 "CPU with many runs, about a core-second per 1,000 runs each time")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  std::string backfill_spacing = absl::FormatDuration(options.tracker.backfill_spacing);
  app.add_option("--backfill-spacing", backfill_spacing,
                 "during a backfill (events arriving faster than the run's time passed: a replay, "
                 "tail --from-start), a history point per this much of the run's time, simulated "
                 "as the forecast would have stood then (0: none; a run's whole life in at most "
                 "512 points at a time, evenly thinned)")
      ->capture_default_str();
  app.add_option("--backfill-draws", options.tracker.backfill_draws,
                 "Monte Carlo draws behind each backfilled history point: fewer make a long "
                 "replay's history cheaper (the backfill is most of a replay's CPU) and its past "
                 "quantiles noisier; the live forecast keeps its own draws")
      ->check(CLI::Range(10, 100000))
      ->capture_default_str();
  app.add_option("--backfill-max-bytes", options.tracker.max_backfill_bytes,
                 "memory the backfill states waiting for the forecaster may hold across all runs "
                 "(a number of bytes, or with a unit: 512MiB, 2GB; 0: no cap): past it the run with "
                 "the most waiting keeps every other one, its history coarser, down to one each")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Validator(
          [](std::string& value) {
            return !value.empty() && value[0] == '-' ? std::string("must be 0 (no cap) or a number of bytes")
                                                     : std::string();
          },
          "BYTES"))
      ->capture_default_str();
  app.add_option("--max-message-bytes", options.max_message_bytes, "largest gRPC message accepted")
      ->capture_default_str();
  app.add_option("--max-db-bytes", options.max_db_bytes,
                 "cap on the database's size (0: the disk's); past it writes answer UNAVAILABLE "
                 "and nothing is acknowledged, while reads go on")
      ->capture_default_str();
  std::string token_file, read_token_file, tls_cert, tls_key;
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain: serve gRPC over TLS (with --tls-key)");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
  app.add_option("--token-file", token_file,
                 "file holding the bearer token that writes (create, update, report) need; "
                 "without it, anyone who reaches --listen may write");
  app.add_option("--read-token-file", read_token_file,
                 "file holding the bearer token that reads (status, watch, runs) need; the write "
                 "token reads too. Without it, reads are open");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  options.tracker.events_clock = clock == "events";
  for (auto [text, out, flag] : {std::tuple{&max_clock_skew, &options.tracker.max_clock_skew, "--max-clock-skew"},
                                 std::tuple{&max_event_gap, &options.tracker.max_event_gap, "--max-event-gap"}}) {
    if (!absl::ParseDuration(*text, out) || *out <= absl::ZeroDuration()) {
      std::cerr << "flightpland: " << flag << " '" << *text
                << "' is not a positive duration (say 30s, 5m, 2h or 720h)\n";
      return 2;
    }
  }
  options.tracker.forecast_min_interval = absl::Seconds(forecast_interval);
  options.tracker.forecast_refresh = absl::Seconds(forecast_refresh);
  if (!absl::ParseDuration(backfill_spacing, &options.tracker.backfill_spacing) ||
      options.tracker.backfill_spacing < absl::ZeroDuration()) {
    std::cerr << "flightpland: --backfill-spacing '" << backfill_spacing
              << "' is not a duration of 0 or more (say 0, 30m or 2h)\n";
    return 2;
  }
  if (tls_cert.empty() != tls_key.empty()) {
    std::cerr << "flightpland: --tls-cert and --tls-key go together\n";
    return 2;
  }
  for (auto [path, pem] : {std::pair{&tls_cert, &options.tls_cert_pem}, std::pair{&tls_key, &options.tls_key_pem}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) {
      std::cerr << "flightpland: cannot read " << *path << "\n";
      return 2;
    }
    *pem = text.str();
  }
  for (auto [path, token] :
       {std::pair{&token_file, &options.write_token}, std::pair{&read_token_file, &options.read_token}}) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> t = flightplan::daemon::ReadTokenFile(*path);
    if (!t.ok()) {
      std::cerr << "flightpland: " << t.status().message() << "\n";
      return 2;
    }
    *token = *t;
  }
  options.sync = sync == "full" ? flightplan::storage::Sync::kFull : flightplan::storage::Sync::kNormal;

  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(options.db).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);

  auto daemon = flightplan::daemon::Daemon::Start(options);
  if (!daemon.ok()) {
    std::cerr << "flightpland: " << daemon.status().message() << "\n";
    return 1;
  }
  const size_t runs = (*daemon)->tracker().List().size();
  std::cout << "flightpland: serving gRPC on " << options.listen.substr(0, options.listen.rfind(':')) << ":"
            << (*daemon)->grpc_port();
  if (!options.metrics.empty()) {
    std::cout << ", metrics on http://" << options.metrics.substr(0, options.metrics.rfind(':')) << ":"
              << (*daemon)->metrics_port() << "/metrics";
  }
  std::cout << ", database " << options.db << " (" << runs << (runs == 1 ? " run)" : " runs)") << std::endl;

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cout << "flightpland: signal " << signal << ", draining" << std::endl;
  (*daemon)->Shutdown();
  std::cout << "flightpland: stopped" << std::endl;
  return 0;
}
