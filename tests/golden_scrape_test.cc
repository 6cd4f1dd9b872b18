// The golden scrape, as node_exporter keeps one: the whole /metrics of a fixed run (the
// flagship plan and its example events, replayed into the real flightpland under the
// events clock), compared line by line with tests/golden/metrics.txt. A metric renamed,
// relabelled, dropped or added, or a value that moves, fails it. Values that depend on
// timing (how long a commit or this scrape took, how the writer grouped the batches) are
// compared by name and labels only.
//
// After a change that is meant: tests/golden/update.sh rewrites the file; review its diff.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/http_get.h"

namespace flightplan::testing {
namespace {

const char* const kGolden = FLIGHTPLAN_GOLDEN_DIR "/metrics.txt";

// Metrics whose values depend on timing, not on the run.
bool Varies(const std::string& name) {
  for (const char* prefix :
       {"flightplan_scrape_duration_seconds", "flightplan_storage_commit_seconds", "flightplan_ingest_batches_total",
        "flightplan_storage_database_bytes", "flightplan_forecast_age_seconds", "flightplan_http_connections",
        "flightplan_http_timeouts_total", "flightplan_ingest_queue_depth", "flightplan_forecast_simulation",
        "flightplan_backfill_states", "flightplan_backfill_bytes"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The scrape's body, with the values of Varies() metrics replaced by "<varies>".
std::vector<std::string> Normalized(const std::string& response) {
  const size_t body = response.find("\r\n\r\n");
  std::vector<std::string> out;
  if (body == std::string::npos) return out;
  std::istringstream in(response.substr(body + 4));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      const size_t space = line.rfind(' ');
      const std::string series = line.substr(0, space);
      if (Varies(series.substr(0, series.find('{')))) line = series + " <varies>";
    }
    out.push_back(line);
  }
  return out;
}

// Equal, or both numbers within a relative 1e-9 (the last digits of a double printed).
bool SameLine(const std::string& want, const std::string& got) {
  if (want == got) return true;
  const size_t a = want.rfind(' '), b = got.rfind(' ');
  if (want[0] == '#' || a == std::string::npos || b == std::string::npos || want.substr(0, a) != got.substr(0, b)) {
    return false;
  }
  double x = 0, y = 0;
  if (!absl::SimpleAtod(want.substr(a + 1), &x) || !absl::SimpleAtod(got.substr(b + 1), &y)) return false;
  return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
}

TEST(GoldenScrape, TheExampleRunsMetricsAreAsRecorded) {
  TempDir dir;
  DaemonProcess d(dir.path() + "/f.db", dir.path() + "/d.log", /*metrics=*/true);
  ASSERT_GT(d.metrics_port(), 0);
  ASSERT_EQ(Cli(d.address(), {"create", std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml"}).exit_code, 0);
  ASSERT_EQ(
      Cli(d.address(), {"replay", std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.events.jsonl"}).exit_code, 0);
  ASSERT_FALSE(d.Status().forecast().forecast_stale());  // the forecast of the last event
  const std::vector<std::string> got = Normalized(HttpGet(d.metrics_port(), "/metrics"));
  ASSERT_GT(got.size(), 100u);

  if (std::getenv("FLIGHTPLAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream out(kGolden);
    for (const std::string& line : got) out << line << "\n";
    GTEST_SKIP() << "wrote " << kGolden << " (" << got.size() << " lines): review its diff";
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in.good()) << kGolden << " is missing: run tests/golden/update.sh";
  std::vector<std::string> want;
  for (std::string line; std::getline(in, line);) want.push_back(line);

  int shown = 0;
  for (size_t i = 0; i < std::max(want.size(), got.size()) && shown < 10; ++i) {
    const std::string w = i < want.size() ? want[i] : "(nothing)";
    const std::string g = i < got.size() ? got[i] : "(nothing)";
    if (!SameLine(w, g)) {
      ADD_FAILURE() << "line " << i + 1 << " of " << kGolden << "\n  recorded: " << w << "\n  scraped:  " << g;
      ++shown;
    }
  }
  EXPECT_EQ(want.size(), got.size()) << "if the change is meant, run tests/golden/update.sh and review its diff";
}

}  // namespace
}  // namespace flightplan::testing
