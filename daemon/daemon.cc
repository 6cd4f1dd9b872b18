#include "daemon/daemon.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "daemon/heap_keeper.h"
#include "daemon/http_server.h"
#include "daemon/service.h"
#include "daemon/wire.h"
#include "exporters/daemon_metrics.h"
#include "exporters/fleet_page.h"
#include "exporters/forecaster_collector.h"
#include "exporters/node_collector.h"
#include "exporters/run_collector.h"
#include "exporters/run_page.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/registry.h"

namespace flightplan::daemon {
namespace {

// A live run's page reloads itself this often.
constexpr int kPageRefreshSeconds = 60;
// The HTTP/2 window of each gRPC stream (see Daemon::Start).
constexpr int kStreamWindowBytes = 256 << 10;

// Every run's status, as the metrics and the runs' list show them.
std::vector<v1::RunStatus> AllStatuses(const Tracker& tracker) {
  std::vector<v1::RunStatus> statuses;
  for (const auto& view : tracker.List()) statuses.push_back(RunStatusToProto(tracker.StatusOf(*view)));
  return statuses;
}

// The ledger's suspects, and with `held` each run's held nodes.
exporters::NodeSeries NodeSeriesOf(const Tracker& tracker, bool held) {
  exporters::NodeSeries out;
  absl::StatusOr<std::shared_ptr<const forecast::NodeLedger>> ledger = tracker.Nodes("");
  if (ledger.ok()) {
    for (const forecast::NodeRecord& r : (*ledger)->nodes) {
      if (!r.suspect) break;  // suspects come first
      for (absl::string_view reason : absl::StrSplit(r.reason, ',')) out.suspects.emplace_back(r.node, reason);
    }
  }
  if (held) {
    for (const auto& view : tracker.List()) {
      const forecast::NodeBook* book = view->state.node_book.get();
      if (book == nullptr) continue;
      std::set<std::string> seen;
      for (const std::string& n : book->held) {
        if (seen.insert(n).second) out.held.emplace_back(view->name, n);
      }
    }
  }
  return out;
}

// One run's page: its status and its forecast history (read through the writer, as
// GetHistory does; a page without it after 2 s). nullopt for an unknown run.
std::optional<std::string> RunPage(Tracker& tracker, const std::string& name) {
  const std::shared_ptr<const RunView> view = tracker.Find(name);
  if (!view) return std::nullopt;
  exporters::RunPageInput in;
  in.status = RunStatusToProto(tracker.StatusOf(*view));
  in.status.set_run(view->name);
  auto history = std::make_shared<std::promise<HistoryResult>>();
  std::future<HistoryResult> got = history->get_future();
  if (tracker.SubmitHistoryRead(name, [history](HistoryResult r) { history->set_value(std::move(r)); }).ok() &&
      got.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
    if (HistoryResult r = got.get(); r.ok()) in.history = HistoryToProto(name, *r, &view->state);
  }
  in.refresh_seconds = in.status.state() == "finished" ? 0 : kPageRefreshSeconds;
  return exporters::RunPageHtml(in);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const DaemonOptions& options, Clock* clock) {
  std::unique_ptr<Daemon> d(new Daemon());
  if (clock == nullptr) clock = &d->wall_clock_;
  d->registry_ = std::make_shared<prometheus::Registry>();
  d->metrics_ = std::make_unique<exporters::DaemonMetrics>(*d->registry_);

  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
      storage::SqliteStore::Open(options.db, options.sync, options.max_db_bytes);
  if (!store.ok()) return store.status();
  if ((*store)->read_only()) {
    std::fprintf(stderr,
                 "flightpland: database %s is read-only: serving reads, refusing writes "
                 "(UNAVAILABLE) until it and its directory are writable again\n",
                 options.db.c_str());
  }
  absl::StatusOr<std::unique_ptr<Tracker>> tracker =
      Tracker::Start(std::move(*store), clock, d->metrics_.get(), options.tracker);
  if (!tracker.ok()) return tracker.status();
  d->tracker_ = std::move(*tracker);

  if (!options.metrics.empty()) {
    Tracker* tracker_ptr = d->tracker_.get();
    d->run_collector_ = std::make_shared<exporters::RunCollector>([tracker_ptr] { return AllStatuses(*tracker_ptr); },
                                                                  options.tracker.max_label_values);
    const bool node_info = options.node_info_metrics;
    d->node_collector_ = std::make_shared<exporters::NodeCollector>(
        [tracker_ptr, node_info] { return NodeSeriesOf(*tracker_ptr, node_info); });
    const size_t budget = options.tracker.max_backfill_bytes;
    d->forecaster_collector_ = std::make_shared<exporters::ForecasterCollector>([tracker_ptr, budget] {
      const ForecastScheduler::Stats s = tracker_ptr->ForecasterStats();
      return exporters::ForecasterFigures{
          s.simulations,     s.backfill_simulations, s.cpu_seconds, s.backfill_cpu_seconds,
          s.backfill_states, s.backfill_bytes,       budget};
    });
    HttpPages pages;
    pages.list = [tracker_ptr] { return exporters::FleetPageHtml(AllStatuses(*tracker_ptr), kPageRefreshSeconds); };
    pages.run = [tracker_ptr](const std::string& name) { return RunPage(*tracker_ptr, name); };
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
        options.metrics, {d->registry_, d->run_collector_, d->node_collector_, d->forecaster_collector_},
        std::move(pages), Auth(options.write_token, options.read_token));
    if (!http.ok()) {
      d->tracker_->Stop();
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", options.metrics, ": ", http.status().message()));
    }
    d->http_ = std::move(*http);
    d->metrics_port_ = d->http_->port();
  }

  d->service_ = std::make_unique<TrackerService>(d->tracker_.get(), Auth(options.write_token, options.read_token));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options.listen, credentials, &d->grpc_port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  // What a stream may have sent and the daemon not yet read: a fixed HTTP/2 window rather
  // than gRPC's, which grows with its bandwidth-delay probe to megabytes per stream. While
  // the writer's queue is full the streams stop being read, and 128 replays at once held
  // about 1.6 MiB each in the transport: the daemon peaked at 347 MiB against 158 MiB for 32
  // (the backfill budget holding the states at 64 MiB in both); with this window, 145 MiB
  // (docs/scaling.md). 256 KiB in flight is 5 MB/s per stream at 50 ms of round trip.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  builder.RegisterService(d->service_.get());
  d->server_ = builder.BuildAndStart();
  if (!d->server_ || d->grpc_port_ == 0) {
    d->tracker_->Stop();
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", options.listen));
  }
  d->server_->GetHealthCheckService()->SetServingStatus(true);
  d->heap_keeper_ = std::make_unique<HeapKeeper>();
  return d;
}

Daemon::~Daemon() { Shutdown(absl::Seconds(1)); }

void Daemon::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    service_->EndWatches();
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(grace));
    server_->Wait();
  }
  http_.reset();  // no page or scrape reads a stopping tracker
  if (tracker_) tracker_->Stop();
  heap_keeper_.reset();
}

}  // namespace flightplan::daemon
