// Replay benchmark (issue 15): how fast a recorded run's events get back into flightpland.
// In one run, on the bench's event log (tests/event_log SyntheticRun, as flightplan_bench):
//
//   - parsing alone: protobuf's JSON parser and proto/event_json, events/s;
//   - the ceiling: the sqlite3 command line's own bulk import (.import --csv) of the same
//     rows (run, id, time, event) into a table keyed by (run, id), rows/s;
//   - end to end: the real `flightplan replay` into the real flightpland (loopback gRPC,
//     SQLite, WAL), events/s, and its ratio to the sqlite3 import.
//
//   flightplan_replay_bench [--events N] [--keep DIR]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/event_json.h"
#include "flightplan/v1/event.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/event_log.h"
#include "tests/subprocess.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

flightplan::testing::Child* g_daemon = nullptr;  // stopped on the way out

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "flightplan_replay_bench: %s\n", what.c_str());
  if (g_daemon != nullptr) g_daemon->Signal(SIGKILL);
  std::exit(1);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    out.push_back(text.substr(from, nl - from));
  }
  return out;
}

// Events/s of `parse` over the first `limit` lines, repeated for at least half a second.
template <typename Parse>
double ParseRate(const std::vector<std::string>& lines, size_t limit, Parse parse) {
  const size_t n = std::min(limit, lines.size());
  flightplan::v1::Event e;
  size_t done = 0;
  const auto start = Clock::now();
  do {
    for (size_t i = 0; i < n; ++i) {
      if (!parse(lines[i], e)) Die(absl::StrCat("line ", i + 1, " did not parse"));
    }
    done += n;
  } while (Since(start) < 0.5);
  return static_cast<double>(done) / Since(start);
}

std::string Csv(const std::string& field) {
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  size_t events = 500000;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("usage: flightplan_replay_bench [--events N] [--keep DIR]\n");
      return 0;
    }
    if (i + 1 >= argc) Die(flag + ": needs a value");
    if (flag == "--events")
      events = std::strtoull(argv[++i], nullptr, 10);
    else if (flag == "--keep")
      keep = argv[++i];
    else
      Die(flag + ": unknown flag");
  }
  if (events < 1000) Die("--events: at least 1000");
  // Its own directory: a temporary one, removed at the end, or --keep's, which must be new
  // or empty (nothing of the user's is ever removed).
  const std::filesystem::path dir =
      keep.empty() ? std::filesystem::temp_directory_path() / absl::StrCat("flightplan-replay-bench-", getpid())
                   : std::filesystem::path(keep);
  std::error_code ec;
  if (!keep.empty() && std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    Die("--keep " + keep + ": not empty; give a new or empty directory");
  }
  if (keep.empty()) std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  // The run: the flagship plan's name, a synthetic log of `events` events.
  const std::string run = "dense-70b-10t";
  const std::vector<flightplan::v1::Event> log =
      flightplan::testing::SyntheticRun(run, static_cast<int64_t>(events), 1);
  std::string jsonl, csv;
  for (size_t i = 0; i < log.size(); ++i) {
    flightplan::v1::Event e = log[i];
    e.set_id(absl::StrCat("e", i + 1));  // a (run, id) key for every row, as the import's
    std::string line;
    flightplan::convert::AppendEventJson(e, line);
    absl::StrAppend(&jsonl, line, "\n");
    absl::StrAppend(&csv, Csv(run), ",", Csv(e.id()), ",", e.time().seconds() * 1000000 + e.time().nanos() / 1000, ",",
                    Csv(line), "\n");
  }
  const std::string events_path = (dir / "events.jsonl").string();
  const std::string csv_path = (dir / "rows.csv").string();
  std::ofstream(events_path, std::ios::binary) << jsonl;
  std::ofstream(csv_path, std::ios::binary) << csv;
  const std::vector<std::string> lines = Lines(jsonl);
  std::printf("flightplan replay benchmark: %zu events (%.1f MB of JSON Lines)\n", lines.size(),
              static_cast<double>(jsonl.size()) / 1e6);

  // Parsing alone.
  google::protobuf::util::JsonParseOptions popt;
  const double protobuf_rate = ParseRate(lines, 50000, [&](const std::string& l, flightplan::v1::Event& e) {
    e.Clear();
    return google::protobuf::util::JsonStringToMessage(l, &e, popt).ok();
  });
  const double fast_rate = ParseRate(lines, lines.size(), [](const std::string& l, flightplan::v1::Event& e) {
    return flightplan::convert::ParseEventJson(l, e).ok();
  });
  std::printf("  parse alone, protobuf JsonStringToMessage:             %9.0f events/s\n", protobuf_rate);
  std::printf("  parse alone, proto/event_json (flightplan's parser):   %9.0f events/s (%.1fx)\n", fast_rate,
              fast_rate / protobuf_rate);

  // The ceiling: sqlite3's own bulk import of the same rows.
  const std::string import_db = (dir / "import.db").string();
  std::string sqlite3 = "sqlite3";
  for (const char* d : {"/usr/bin/", "/usr/local/bin/", "/bin/"}) {
    if (access((std::string(d) + "sqlite3").c_str(), X_OK) == 0) {
      sqlite3 = std::string(d) + "sqlite3";
      break;
    }
  }
  const flightplan::testing::ProcessResult schema = flightplan::testing::RunProcess(
      {sqlite3, import_db,
       "CREATE TABLE events(run TEXT NOT NULL, id TEXT NOT NULL, time_us INTEGER NOT NULL, "
       "event TEXT NOT NULL, PRIMARY KEY(run, id));"});
  if (schema.exit_code != 0) Die("sqlite3: " + schema.err + " (is the sqlite3 command installed?)");
  auto start = Clock::now();
  const flightplan::testing::ProcessResult import =
      flightplan::testing::RunProcess({sqlite3, import_db, ".import --csv " + csv_path + " events"});
  const double import_seconds = Since(start);
  if (import.exit_code != 0 || !import.err.empty()) Die("sqlite3 .import: " + import.err);
  const flightplan::testing::ProcessResult count =
      flightplan::testing::RunProcess({sqlite3, import_db, "SELECT count(*) FROM events;"});
  if (std::strtoull(count.out.c_str(), nullptr, 10) != lines.size()) Die("sqlite3 imported " + count.out);
  const double import_rate = static_cast<double>(lines.size()) / import_seconds;
  std::printf("  sqlite3 .import --csv, same rows, (run, id) key:       %9.0f rows/s\n", import_rate);

  // End to end: flightplan replay into flightpland.
  const std::string db = (dir / "flightplan.db").string();
  flightplan::testing::Child daemon(
      {FLIGHTPLAN_DAEMON_BIN, "--db", db, "--listen", "127.0.0.1:0", "--metrics", "", "--clock", "events"},
      (dir / "flightpland.log").string());
  g_daemon = &daemon;
  const std::string text = daemon.WaitForLog("serving gRPC on", 20);
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("serving gRPC on (127\\.0\\.0\\.1:[0-9]+)"))) {
    Die("flightpland did not start: " + text);
  }
  const std::string server = m[1].str();
  const auto create =
      flightplan::testing::RunProcess({FLIGHTPLAN_BIN, "--server", server, "create", FLIGHTPLAN_FLAGSHIP});
  if (create.exit_code != 0) Die("create: " + create.err);
  start = Clock::now();
  const auto replay =
      flightplan::testing::RunProcess({FLIGHTPLAN_BIN, "--server", server, "replay", events_path, "--no-progress"});
  const double replay_seconds = Since(start);
  if (replay.exit_code != 0) Die("replay: " + replay.out + replay.err);
  // "replayed N events from PATH: A accepted, D duplicates, R rejected", counts with commas.
  std::smatch counts;
  std::string accepted;
  if (std::regex_search(replay.out, counts, std::regex(": ([0-9,]+) accepted"))) accepted = counts[1].str();
  accepted.erase(std::remove(accepted.begin(), accepted.end(), ','), accepted.end());
  if (std::strtoull(accepted.c_str(), nullptr, 10) != lines.size())
    Die("replay did not accept every event: " + replay.out);
  const double replay_rate = static_cast<double>(lines.size()) / replay_seconds;
  std::printf("  flightplan replay into flightpland, end to end:        %9.0f events/s\n", replay_rate);
  std::printf("  ratio of replay to the sqlite3 import:                 %9.2f\n", replay_rate / import_rate);
  g_daemon = nullptr;
  if (keep.empty()) std::filesystem::remove_all(dir);
  return 0;
}
