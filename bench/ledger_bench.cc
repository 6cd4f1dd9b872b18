// The node ledger's cost (issue 39), in Google Benchmark:
//   - BM_BuildLedger/R: the ledger over R runs of 128 nodes each from a pool of 2,048 (a
//     daemon's runs sharing a cluster), what a status or a scrape pays when a run changed;
//   - BM_TouchEveryEntry/R, the ceiling: one pass adding each book entry into a map by node,
//     the least any ledger over the same books must do. The ratio of the two is the price of
//     the verdicts (the Poisson tails, the words);
//   - BM_CopyState/with_book|without_book: copying a run's state (what an all-or-nothing batch
//     does) with a book of 2,048 nodes against one without: the book is shared, not copied.
// Run: build/bench/flightplan_ledger_bench
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "forecast/accounting.h"
#include "forecast/nodes.h"

namespace flightplan::forecast {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1799020800);

std::vector<RunNodes> Runs(int runs) {
  std::mt19937_64 rng(7);
  std::vector<std::string> pool;
  for (int i = 0; i < 2048; ++i) pool.push_back(absl::StrCat("gpu-node-", 1000 + i));
  std::vector<RunNodes> out;
  for (int r = 0; r < runs; ++r) {
    auto book = std::make_shared<NodeBook>();
    for (int a = 0; a < 10; ++a) {  // ten launches on a random 128 of the pool
      std::shuffle(pool.begin(), pool.end(), rng);
      std::vector<std::string> held(pool.begin(), pool.begin() + 128);
      HoldNodes(*book, held, 1024, kT0 + absl::Hours(24 * a));
      BlameFailure(*book, {held[rng() % held.size()]});
    }
    out.push_back({absl::StrCat("run-", r), book, "", kT0 + absl::Hours(240)});
  }
  return out;
}

void BM_BuildLedger(benchmark::State& state) {
  const std::vector<RunNodes> runs = Runs(static_cast<int>(state.range(0)));
  size_t suspects = 0;
  for (auto _ : state) {
    NodeLedger ledger = BuildLedger(runs);
    suspects = ledger.Suspects().size();
    benchmark::DoNotOptimize(ledger);
  }
  state.counters["suspects"] = static_cast<double>(suspects);
}
BENCHMARK(BM_BuildLedger)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_TouchEveryEntry(benchmark::State& state) {
  const std::vector<RunNodes> runs = Runs(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::map<std::string, double> hours;
    for (const RunNodes& r : runs) {
      for (const auto& [node, use] : r.book->nodes) hours[node] += use.held_seconds;
    }
    benchmark::DoNotOptimize(hours);
  }
}
BENCHMARK(BM_TouchEveryEntry)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

RunState StateWithBook(bool book) {
  RunState s;
  Event start;
  start.kind = EventKind::kJobStarted;
  start.attempt = 1;
  start.time = kT0;
  if (book) {
    for (int i = 0; i < 2048; ++i) start.nodes.push_back(absl::StrCat("gpu-node-", 1000 + i));
  }
  (void)ApplyEvent(s, start);
  return s;
}

void BM_CopyState(benchmark::State& state) {
  const RunState s = StateWithBook(state.range(0) != 0);
  for (auto _ : state) {
    RunState copy = s;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_CopyState)->Arg(0)->Arg(1)->ArgName("with_book");

}  // namespace
}  // namespace flightplan::forecast

BENCHMARK_MAIN();
