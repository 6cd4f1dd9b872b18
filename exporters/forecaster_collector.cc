#include "exporters/forecaster_collector.h"

#include <string>

namespace flightplan::exporters {
namespace {

prometheus::MetricFamily ByKind(std::string name, std::string help, double live, double backfill) {
  prometheus::MetricFamily f{std::move(name), std::move(help), prometheus::MetricType::Counter, {}};
  for (const auto& [kind, value] : {std::pair{"live", live}, std::pair{"backfill", backfill}}) {
    prometheus::ClientMetric m;
    m.label = {{"kind", kind}};
    m.counter.value = value;
    f.metric.push_back(std::move(m));
  }
  return f;
}

prometheus::MetricFamily Gauge(std::string name, std::string help, double value) {
  prometheus::MetricFamily f{std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric m;
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::vector<prometheus::MetricFamily> ForecasterCollector::Collect() const {
  const ForecasterFigures f = source_();
  std::vector<prometheus::MetricFamily> out;
  out.push_back(ByKind("flightplan_forecast_simulations_total",
                       "Monte Carlo simulations the forecaster ran: live (a run's current forecast) or backfill (a "
                       "history point of a replay or a catch-up).",
                       static_cast<double>(f.simulations), static_cast<double>(f.backfill_simulations)));
  out.push_back(ByKind("flightplan_forecast_simulation_cpu_seconds_total",
                       "CPU time of the forecaster thread in those simulations; its rate is the share of a core the "
                       "forecasts take.",
                       f.cpu_seconds, f.backfill_cpu_seconds));
  out.push_back(Gauge("flightplan_backfill_states", "Backfill states waiting for the forecaster, across runs.",
                      static_cast<double>(f.backfill_states)));
  out.push_back(Gauge("flightplan_backfill_bytes",
                      "Memory the waiting backfill states hold (their containers' sizes), across runs.",
                      static_cast<double>(f.backfill_bytes)));
  out.push_back(Gauge("flightplan_backfill_budget_bytes",
                      "The cap on flightplan_backfill_bytes (flightpland --backfill-max-bytes; 0: none).",
                      static_cast<double>(f.backfill_budget_bytes)));
  return out;
}

}  // namespace flightplan::exporters
