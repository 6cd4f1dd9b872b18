// `flightplan slurm`: follows a job (or every job of a name) through Slurm's own
// interfaces and reports its launches and interruptions (cli/slurm_follow.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/client_support.h"
#include "cli/slurm_follow.h"
#include "convert/plan_convert.h"

namespace flightplan::cli {
namespace {

std::atomic<bool> g_slurm_stop{false};
extern "C" void SlurmStop(int) { g_slurm_stop = true; }

// Runs argv[0] (found on PATH) with no shell and returns what it printed on stdout; an
// error naming the command and its stderr's first line when it fails or cannot start.
absl::StatusOr<std::string> Capture(const std::vector<std::string>& argv) {
  int out[2], errp[2];
  if (pipe(out) != 0 || pipe(errp) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(errp[1], 2);
    close(out[0]);
    close(errp[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(errp[1]);
  std::string text, errors;
  char buf[65536];
  // stderr is small; read stdout to its end first, then stderr (a command that fills the
  // stderr pipe before closing stdout would stall, which Slurm's tools do not).
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  for (ssize_t n; (n = read(errp[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    errors.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  close(errp[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = std::string(absl::StripAsciiWhitespace(errors.substr(0, errors.find('\n'))));
    return absl::UnavailableError(
        absl::StrCat(argv[0], " failed (", WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status)) : "killed",
                     ")", first.empty() ? "" : absl::StrCat(": ", first)));
  }
  return text;
}

// Up to `seconds`, or until SIGINT or SIGTERM.
void Sleep(double seconds) {
  for (double waited = 0; waited < seconds && !g_slurm_stop; waited += 0.1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// `scontrol show config`'s value for `key` ("" when absent or "(null)").
std::string ConfigValue(const std::string& config, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(config, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(line.substr(0, eq)) != key) continue;
    std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    return value == "(null)" ? "" : value;
  }
  return "";
}

// The completion log, read on from where the last look stopped; records by job.
class JobCompLog {
 public:
  JobCompLog(std::string path, absl::TimeZone zone) : path_(std::move(path)), zone_(zone) {}
  void ReadNew() {
    if (path_.empty()) return;
    std::ifstream in(path_);
    if (!in) return;  // not written yet
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < offset_) offset_ = 0, by_job_.clear();  // rotated or truncated: read it again
    in.seekg(offset_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written: read it next time
      offset_ = in.tellg();
      if (std::optional<SlurmRunRecord> r = ParseJobCompLine(line, zone_)) by_job_[r->job_id].push_back(*r);
    }
  }
  std::vector<SlurmRunRecord> Of(const std::set<int64_t>& jobs) const {
    std::vector<SlurmRunRecord> out;
    for (int64_t j : jobs) {
      auto it = by_job_.find(j);
      if (it != by_job_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
  }

 private:
  std::string path_;
  absl::TimeZone zone_;
  std::streamoff offset_ = 0;
  std::map<int64_t, std::vector<SlurmRunRecord>> by_job_;
};

// Accounting's records of the followed jobs' runs: sacct -D (every run a requeue replaced),
// and the node events that name a failed node's reason after it is back, asked once per
// failed run.
class Accounting {
 public:
  explicit Accounting(absl::TimeZone zone) : zone_(zone) {}
  absl::StatusOr<std::vector<SlurmRunRecord>> Records(const std::set<int64_t>& jobs) {
    if (jobs.empty()) return std::vector<SlurmRunRecord>{};
    std::string ids;
    for (int64_t j : jobs) absl::StrAppend(&ids, ids.empty() ? "" : ",", j);
    absl::StatusOr<std::string> text = Capture(
        {"sacct", "-D", "-P", "-X", "-j", ids, "-o", "JobIDRaw,JobName,State,Start,End,NodeList,ExitCode,Submit"});
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<SlurmRunRecord>> records = ParseSacct(*text, zone_);
    if (!records.ok()) return records.status();
    for (const SlurmRunRecord& r : *records) {
      if (r.state != "NODE_FAIL" || r.nodes.empty() || !r.end) continue;
      // Asked until an event with a reason comes back, three times at most (the node's event
      // may reach slurmdbd a moment after the job's end).
      const std::string key = absl::StrCat(r.job_id, "@", absl::ToUnixSeconds(*r.end));
      if (++asked_[key] > 3) continue;
      // From a day before the run's end: a node event starts before the end it caused.
      absl::StatusOr<std::string> events =
          Capture({"sacctmgr", "-n", "-P", "show", "event", absl::StrCat("Nodes=", r.nodes),
                   absl::StrCat("Start=", absl::FormatTime("%Y-%m-%dT%H:%M:%S", *r.end - absl::Hours(24), zone_)),
                   "format=NodeName,TimeStart,TimeEnd,State,Reason"});
      if (!events.ok()) {
        --asked_[key];  // ask again at the next look
        return events.status();
      }
      for (SlurmNodeEvent& e : ParseNodeEvents(*events, zone_)) {
        if (!e.reason.empty()) asked_[key] = 3;
        node_events_.push_back(std::move(e));
      }
    }
    return records;
  }
  const std::vector<SlurmNodeEvent>& node_events() const { return node_events_; }

 private:
  absl::TimeZone zone_;
  std::map<std::string, int> asked_;  // "JOB@END" of a failed run: times its nodes' events were asked for
  std::vector<SlurmNodeEvent> node_events_;
};

}  // namespace

int RunSlurm(const ClientOptions& client, const SlurmOptions& options, std::ostream& out, std::ostream& err) {
  if (options.job.empty() == options.name.empty()) {
    err << "flightplan slurm: give --job ID or --name NAME (one of them)\n";
    return 2;
  }
  std::optional<int64_t> job_id;
  if (!options.job.empty()) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(options.job, &id) || id <= 0) {
      err << "flightplan slurm: --job '" << options.job << "' is not a Slurm job id (a whole number above 0)\n";
      return 2;
    }
    job_id = id;
  }
  if (options.interval_seconds <= 0) {
    err << "flightplan slurm: --interval " << options.interval_seconds << " must be above 0\n";
    return 2;
  }
  absl::TimeZone zone = absl::LocalTimeZone();
  if (!options.timezone.empty() && !absl::LoadTimeZone(options.timezone, &zone)) {
    err << "flightplan slurm: --timezone '" << options.timezone << "' is not a zone this machine knows\n";
    return 2;
  }
  auto stub = Connect(client);
  v1::RunInfo info;
  auto read_run = [&] { return ReadRun(*stub, client, options.run, info); };
  if (grpc::Status st = read_run(); !st.ok()) return Fail(err, "slurm", st, client);

  // Where the ended runs are read: accounting when the site keeps it, else the completion
  // log when it is kept as text (scontrol show config names both), else nowhere (squeue and
  // the nodes only).
  std::string records = options.records, jobcomp = options.jobcomp;
  if (records != "auto" && records != "sacct" && records != "jobcomp" && records != "none") {
    err << "flightplan slurm: --records '" << records << "' is not one of auto, sacct, jobcomp, none\n";
    return 2;
  }
  if (!jobcomp.empty() && records == "auto") records = "jobcomp";
  if (records == "auto" || (records == "jobcomp" && jobcomp.empty())) {
    absl::StatusOr<std::string> config = Capture({"scontrol", "show", "config"});
    if (!config.ok()) {
      err << "flightplan slurm: " << config.status().message() << "\n";
      return 1;
    }
    const bool filetxt = ConfigValue(*config, "JobCompType") == "jobcomp/filetxt";
    if (filetxt && jobcomp.empty()) jobcomp = ConfigValue(*config, "JobCompLoc");
    if (records == "auto") {
      records = ConfigValue(*config, "AccountingStorageType") == "accounting_storage/slurmdbd" ? "sacct"
                : filetxt                                                                      ? "jobcomp"
                                                                                               : "none";
    }
  }
  if (records == "jobcomp" && jobcomp.empty()) {
    err << "flightplan slurm: --records jobcomp, but Slurm keeps no completion log as text (JobCompType is not "
           "jobcomp/filetxt); give --jobcomp PATH\n";
    return 2;
  }
  out << "flightplan slurm: ended runs from "
      << (records == "sacct"     ? "accounting (sacct)"
          : records == "jobcomp" ? absl::StrCat("the completion log ", jobcomp)
                                 : std::string("squeue and the nodes only (no accounting, no completion log)"))
      << "\n";
  if (records != "jobcomp") jobcomp.clear();
  Accounting accounting(zone);
  JobCompLog log(jobcomp, zone);

  bool numbering_failed = false;
  SlurmFollowOptions fo;
  fo.run = options.run;
  for (const v1::Attempt& a : info.attempts()) {
    fo.known_attempts.push_back({a.attempt(), convert::TimeFromProto(a.started()), a.launch()});
  }
  uint32_t local = 0;
  fo.number_launch = [&](const std::string& launch, absl::Time at) -> uint32_t {
    // The attempt the training already reported for this launch; else as `flightplan tail`
    // numbers: the attempt launched at that very instant, else one past the run's latest.
    if (grpc::Status st = read_run(); !st.ok()) {
      err << "flightplan slurm: cannot read the run's launches (" << st.error_message() << "); numbering this one "
          << local + 1 << "\n";
      numbering_failed = true;
      return ++local;
    }
    for (const v1::Attempt& a : info.attempts()) {
      if (a.launch() == launch || convert::TimeFromProto(a.started()) == at) {
        local = std::max(local, a.attempt());
        return a.attempt();
      }
    }
    return local = std::max(info.attempt(), local) + 1;
  };
  fo.latest_event = [&]() -> std::optional<absl::Time> {
    // number_launch has just read the run.
    if (!info.has_latest_event()) return std::nullopt;
    return convert::TimeFromProto(info.latest_event());
  };
  SlurmFollower follower(fo);

  // 22.05 ignores these filters with --json (FollowedJobs keeps the followed jobs); a later
  // Slurm that honours them prints less.
  std::vector<std::string> squeue = {"squeue", "--json", "--states=all"};
  if (!options.job.empty()) squeue.push_back(absl::StrCat("--jobs=", options.job));
  if (!options.name.empty()) squeue.push_back(absl::StrCat("--name=", options.name));
  signal(SIGINT, SlurmStop);
  signal(SIGTERM, SlurmStop);
  ReplayCounts counts;
  size_t limit = 10000;
  uint64_t looks = 0;
  bool failed_look = false;
  while (true) {
    ++looks;
    absl::StatusOr<std::string> jobs_json = Capture(squeue);
    absl::StatusOr<std::string> nodes_json = Capture({"sinfo", "--json"});
    absl::StatusOr<std::vector<SlurmJob>> jobs =
        jobs_json.ok() ? ParseSqueueJson(*jobs_json) : absl::StatusOr<std::vector<SlurmJob>>(jobs_json.status());
    if (jobs.ok()) *jobs = FollowedJobs(std::move(*jobs), job_id, options.name);
    absl::StatusOr<std::vector<SlurmNode>> nodes =
        nodes_json.ok() ? ParseSinfoJson(*nodes_json) : absl::StatusOr<std::vector<SlurmNode>>(nodes_json.status());
    if (!jobs.ok() || !nodes.ok()) {
      // The controller restarting or busy: say so, and look again.
      err << "flightplan slurm: " << (jobs.ok() ? nodes.status() : jobs.status()).message() << "\n";
      failed_look = true;
    } else {
      if (jobs->empty() && looks == 1) {
        err << "flightplan slurm: Slurm shows no job "
            << (options.job.empty() ? absl::StrCat("named ", options.name) : options.job) << "\n";
        return 1;
      }
      std::set<int64_t> followed = follower.followed();
      for (const SlurmJob& j : *jobs) followed.insert(j.job_id);
      std::vector<SlurmRunRecord> ended;
      bool have_records = true;
      if (records == "sacct") {
        absl::StatusOr<std::vector<SlurmRunRecord>> got = accounting.Records(followed);
        if (got.ok()) {
          ended = std::move(*got);
        } else {
          // slurmdbd away: look again, rather than read a requeue's cause from the nodes alone.
          err << "flightplan slurm: " << got.status().message() << "\n";
          failed_look = true;
          have_records = false;
        }
      } else {
        log.ReadNew();
        ended = log.Of(followed);
      }
      PendingBatch batch;
      if (have_records) {
        for (v1::Event& e : follower.Observe(*jobs, *nodes, ended, accounting.node_events())) {
          out << "slurm: " << convert::TimeFromProto(e.time()) << " "
              << (e.has_job_started()
                      ? absl::StrCat("job_started attempt ", e.job_started().attempt())
                      : absl::StrCat("interruption ", e.interruption().cause(),
                                     e.interruption().planned() ? " (planned)" : "", ": ", e.interruption().detail()))
              << "\n";
          batch.lines.push_back(batch.events.size() + 1);
          batch.events.push_back(std::move(e));
        }
      }
      if (!batch.events.empty()) SendInOrder(*stub, client, batch, counts, limit);
      out << std::flush;
      if ((have_records && follower.Done()) || options.once) break;
    }
    if (options.once) break;
    Sleep(options.interval_seconds);
    if (g_slurm_stop) break;
  }
  out << "flightplan slurm: " << follower.launches() << " launches followed; " << counts.accepted
      << " events accepted, " << counts.duplicates << " duplicates, " << counts.rejected << " rejected\n";
  for (const std::string& r : counts.rejections) err << "  rejected: " << r << "\n";
  return counts.rejected > 0 || numbering_failed || (failed_look && options.once) ? 1 : 0;
}

}  // namespace flightplan::cli
