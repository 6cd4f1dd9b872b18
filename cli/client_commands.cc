#include "cli/client_commands.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/client_support.h"
#include "cli/log_events.h"
#include "cli/plan_file.h"
#include "cli/status_print.h"
#include "convert/event_convert.h"
#include "convert/event_json.h"
#include "convert/plan_convert.h"
#include "exporters/run_page.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "planner/plan_engine.h"
#include "text/hostlist.h"
#include "text/units.h"

namespace flightplan::cli {

namespace units = text::units;  // the one rendering of numbers, shared with the run page

namespace {}  // namespace

int RunCreate(const ClientOptions& client, const CreateOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::Plan> plan = LoadPlanFile(options.plan_path);
  if (!plan.ok()) {
    err << "flightplan create: " << plan.status().message() << "\n";
    return 2;
  }
  const std::string run = options.run.empty() ? plan->name() : options.run;
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  if (options.update) {
    v1::UpdatePlanRequest request;
    request.set_run(run);
    *request.mutable_plan() = *plan;
    v1::UpdatePlanResponse response;
    grpc::Status st = stub->UpdatePlan(&ctx, request, &response);
    if (!st.ok()) return Fail(err, "create --update", st, client);
    out << "run " << run << ": plan revision " << response.plan_revision() << "\n";
    return 0;
  }
  v1::CreateRunRequest request;
  request.set_run(run);
  *request.mutable_plan() = *plan;
  v1::CreateRunResponse response;
  grpc::Status st = stub->CreateRun(&ctx, request, &response);
  if (!st.ok()) return Fail(err, "create", st, client);
  out << (response.created() ? "created run " : "run already exists with this plan: ") << run << " (plan revision "
      << response.plan_revision() << ", target " << units::Sci(static_cast<double>(plan->data().tokens()))
      << " tokens, plan finish " << units::Date(convert::TimeFromProto(response.report().schedule().finish_time()))
      << ")\n";
  return 0;
}

namespace {

class Progress {
 public:
  Progress(bool enabled, uint64_t total_bytes) : enabled_(enabled), total_(total_bytes) {}
  void Update(uint64_t bytes, uint64_t events, bool final = false) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!final && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_)) : 0;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const int width = 30;
    const int filled = static_cast<int>(frac * width);
    std::cerr << "\r[" << std::string(static_cast<size_t>(filled), '=')
              << std::string(static_cast<size_t>(width - filled), ' ') << "] "
              << absl::StrFormat("%3.0f%% %s events, %s events/s", frac * 100,
                                 units::Count(static_cast<double>(events)),
                                 units::Count(secs > 0 ? static_cast<double>(events) / secs : 0))
              << (final ? "\n" : "") << std::flush;
  }

 private:
  bool enabled_;
  uint64_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int RunReplay(const ClientOptions& client, const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  std::ifstream file;
  std::istream* in = &std::cin;
  uint64_t total_bytes = 0;
  if (options.path != "-") {
    file.open(options.path, std::ios::binary | std::ios::ate);
    if (!file) {
      err << "flightplan replay: " << options.path << ": cannot read\n";
      return 2;
    }
    total_bytes = static_cast<uint64_t>(file.tellg());
    file.seekg(0);
    in = &file;
  }
  auto stub = Connect(client);
  ReplayCounts counts;
  Progress progress(options.progress && isatty(STDERR_FILENO), total_bytes);
  size_t line_no = 0;
  uint64_t bytes = 0, sent = 0;
  // Events per batch: --batch, cut to the daemon's limit once a refusal names it.
  std::atomic<size_t> limit{std::max<size_t>(1, options.batch_events)};
  // The next batch from the file; false at the end. Bad lines are counted as rejected.
  auto next_batch = [&](PendingBatch& batch) {
    batch = PendingBatch{};
    std::string line;
    while (batch.events.size() < limit && std::getline(*in, line)) {
      ++line_no;
      bytes += line.size() + 1;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      v1::Event event;
      if (const absl::Status st = convert::ParseEventJson(line, event); !st.ok()) {
        counts.Reject(line_no, absl::StrCat("not a flightplan.v1.Event: ", st.message()));
        continue;
      }
      batch.events.push_back(std::move(event));
      batch.lines.push_back(line_no);
    }
    sent += batch.events.size();
    progress.Update(bytes, sent);
    return !batch.events.empty();
  };

  // Phase 1: stream batches, pipelined, until the file ends or a batch is refused (the
  // daemon then refuses the rest of the stream, to keep the events in order).
  std::mutex mu;
  std::map<uint64_t, PendingBatch> pending;  // sent, not yet acknowledged
  std::map<uint64_t, PendingBatch> refused;  // to resend in order
  std::atomic<bool> stop{false};
  grpc::ClientContext ctx;  // the stream lives as long as the replay: no deadline
  Authorize(ctx, client);
  auto stream = stub->ReportEvents(&ctx);
  std::thread reader([&] {
    v1::BatchAck ack;
    while (stream->Read(&ack)) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = pending.find(ack.sequence());
      if (it == pending.end()) continue;
      if (ack.code() == 0) {
        counts.accepted += ack.accepted();
        counts.duplicates += ack.duplicates();
      } else {
        if (ack.max_batch_events() > 0) limit = std::min<size_t>(limit, ack.max_batch_events());
        refused[ack.sequence()] = std::move(it->second);
        stop = true;
      }
      pending.erase(it);
    }
  });
  uint64_t sequence = 0;
  PendingBatch batch;
  bool more = true;
  while (!stop && (more = next_batch(batch))) {
    v1::EventBatch msg;
    msg.set_sequence(++sequence);
    for (const v1::Event& e : batch.events) *msg.add_events() = e;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending[sequence] = std::move(batch);
    }
    if (!stream->Write(msg)) break;
  }
  if (stop && more && !batch.events.empty() && pending.count(sequence) == 0) {
    // Read but not sent: goes after the refused ones.
    refused[++sequence] = std::move(batch);
  }
  stream->WritesDone();
  reader.join();
  const grpc::Status st = stream->Finish();
  for (auto& [seq, b] : pending) refused[seq] = std::move(b);  // never acknowledged
  pending.clear();
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
    progress.Update(bytes, sent, true);
    return Fail(err, "replay", st, client);
  }

  // Phase 2: one batch at a time, in order: first the refused ones, then the rest of the
  // file. A batch still refused is sent event by event to tell the good from the bad.
  size_t unary_limit = limit;
  auto send_in_order = [&](const PendingBatch& b) {
    SendInOrder(*stub, client, b, counts, unary_limit);
    limit = std::min<size_t>(limit, unary_limit);
  };
  for (const auto& [seq, b] : refused) send_in_order(b);
  while (next_batch(batch)) send_in_order(batch);
  progress.Update(bytes, sent, true);

  out << "replayed "
      << units::Counted(static_cast<double>(counts.accepted + counts.duplicates + counts.rejected), "event") << " from "
      << options.path << ": " << units::Count(static_cast<double>(counts.accepted)) << " accepted, "
      << units::Counted(static_cast<double>(counts.duplicates), "duplicate") << ", "
      << units::Count(static_cast<double>(counts.rejected)) << " rejected\n";
  for (const std::string& r : counts.rejections) out << "  rejected " << r << "\n";
  if (counts.rejected > counts.rejections.size()) {
    out << "  ... and " << counts.rejected - counts.rejections.size() << " more\n";
  }
  return counts.rejected > 0 ? 1 : 0;
}

namespace {
std::atomic<bool> g_tail_stop{false};

// The sequence length and tokens per step of the run's plan, where the user gave none. A
// plan whose phases change them gives none (say which).
void TailBasisFromPlan(const v1::PlanRevision& plan, LogOptions& lo, std::ostream& err) {
  std::set<int64_t> seq_lens, per_step;
  if (plan.report().phases().empty()) {
    seq_lens.insert(plan.plan().model().seq_len());
    per_step.insert(static_cast<int64_t>(plan.report().batch().tokens_per_step()));
  }
  bool ramp = false;
  for (const v1::PhaseReport& p : plan.report().phases()) {
    seq_lens.insert(p.seq_len());
    per_step.insert(static_cast<int64_t>(p.tokens_per_step()));
  }
  for (const v1::Phase& p : plan.plan().phases()) ramp = ramp || p.has_ramp();
  if (lo.seq_len == 0 && seq_lens.size() == 1 && *seq_lens.begin() > 0) lo.plan_seq_len = *seq_lens.begin();
  if (const v1::FleetReport& f = plan.report().fleet(); f.nodes() > 0 && f.gpus() % f.nodes() == 0) {
    lo.gpus_per_node = f.gpus() / f.nodes();
  }
  if (lo.tokens_per_step == 0 && per_step.size() == 1 && !ramp && *per_step.begin() > 0) {
    lo.plan_tokens_per_step = *per_step.begin();
  }
  if (seq_lens.size() > 1 && lo.seq_len == 0) {
    err << "flightplan tail: note: the run's plan (revision " << plan.revision()
        << ") changes the sequence length across its phases; the log or --seq-len must give it\n";
  }
}
extern "C" void TailStop(int) { g_tail_stop = true; }
}  // namespace

namespace {

// A log none of whose first kRecogniseWithin lines its format's reader recognises is not in
// that format: the tail says so and stops (a wrong --format once read a Megatron log as
// torchtitan's, sent nothing and exited 0). A NeMo job's configuration dump before its first
// step is long, hence thousands.
constexpr uint64_t kRecogniseWithin = 5000;
constexpr size_t kHeadKept = 200;  // the first lines, to say what the log looks like

const std::pair<const char*, LogFormat> kFormats[] = {{"megatron", LogFormat::kMegatron},
                                                      {"torchtitan", LogFormat::kTorchtitan},
                                                      {"deepspeed", LogFormat::kDeepSpeed},
                                                      {"nemo", LogFormat::kNemo}};

// The refusal of a log its format does not recognise: the first lines as they are, and the
// format that recognises most of them, if one does.
absl::Status NotThisFormat(const std::string& path, const std::string& format, uint64_t lines,
                           const std::vector<std::string>& head) {
  std::string guess;
  uint64_t best = 0;
  for (const auto& [name, f] : kFormats) {
    if (name == format) continue;
    LogOptions o;
    o.format = f;
    o.backfill = true;
    o.seq_len = o.tokens_per_step = 1;  // counting tokens is not the question here
    LogEvents reader(o);
    std::vector<v1::Event> ignored;
    for (const std::string& line : head) (void)reader.Feed(line, absl::UnixEpoch(), ignored);
    if (reader.recognised() > best) best = reader.recognised(), guess = name;
  }
  std::string first;
  int shown = 0;
  for (const std::string& line : head) {
    if (line.empty()) continue;
    absl::StrAppend(&first, "\n  | ", line.size() > 160 ? line.substr(0, 160) + "..." : line);
    if (++shown == 3) break;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": none of its first ", lines, " lines is a ", format,
      " line (an iteration, a save, a launch or its arguments, a crash): is it another format?",
      guess.empty() ? "" : absl::StrCat(" --format ", guess, " recognises ", best, " of its first ", head.size()),
      ". Its first lines:", first.empty() ? " (all empty)" : first));
}

}  // namespace

int RunTail(const ClientOptions& client, const TailOptions& options, std::ostream& out, std::ostream& err) {
  LogOptions lo;
  lo.run = options.run;
  if (options.format == "megatron") {
    lo.format = LogFormat::kMegatron;
  } else if (options.format == "torchtitan") {
    lo.format = LogFormat::kTorchtitan;
  } else if (options.format == "deepspeed") {
    lo.format = LogFormat::kDeepSpeed;
  } else if (options.format == "nemo") {
    lo.format = LogFormat::kNemo;
  } else {
    err << "flightplan tail: --format " << options.format << ": megatron, torchtitan, deepspeed or nemo\n";
    return 2;
  }
  lo.seq_len = options.seq_len;
  lo.tokens_per_step = options.tokens_per_step;
  lo.backfill = options.from_start;
  // The launch followed live, named as `flightplan slurm` names it (inside a Slurm job, from
  // its environment), so that the two reports of it are one attempt.
  lo.launch = options.launch;
  if (const char* job = std::getenv("SLURM_JOB_ID"); lo.launch.empty() && job && *job) {
    const char* restarts = std::getenv("SLURM_RESTART_COUNT");
    lo.launch = absl::StrCat("slurm:", job, ".", restarts && *restarts ? restarts : "0");
  }
  // The nodes of the launches followed live: given, or the job's own inside a Slurm job.
  {
    std::string nodes = options.nodes;
    if (const char* list = std::getenv("SLURM_JOB_NODELIST"); nodes.empty() && list && *list) nodes = list;
    absl::StatusOr<std::vector<std::string>> hosts = text::ExpandHostlist(nodes);
    if (!hosts.ok()) {
      err << "flightplan tail: --nodes '" << nodes << "': " << hosts.status().message() << "\n";
      return 2;
    }
    lo.nodes = *std::move(hosts);
  }
  bool live = !options.from_start;  // the converter follows new lines (not the file's past)
  bool launch_named = false;        // the converter names only the first launch it follows live
  if (!absl::LoadTimeZone(options.timezone, &lo.timezone)) {
    err << "flightplan tail: --timezone " << options.timezone << ": unknown time zone\n";
    return 2;
  }
  if (!options.plan_path.empty()) {
    absl::StatusOr<v1::Plan> plan = LoadPlanFile(options.plan_path);
    if (!plan.ok()) {
      err << "flightplan tail: " << plan.status().message() << "\n";
      return 2;
    }
    const planner::PlanReport report = planner::ComputePlan(convert::PlanFromProto(*plan));
    if (lo.seq_len == 0) lo.seq_len = plan->model().seq_len();
    if (lo.tokens_per_step == 0) lo.tokens_per_step = static_cast<int64_t>(report.batch.tokens_per_step);
  }
  auto stub = Connect(client);
  // The run as the daemon has it: this log's launches are numbered after the run's (or as
  // the same launch, tailed again), so per-job log files continue one run.
  v1::RunInfo info;
  auto read_run = [&] { return ReadRun(*stub, client, options.run, info); };
  if (grpc::Status st = read_run(); !st.ok()) return Fail(err, "tail", st, client);
  if (lo.seq_len == 0 || lo.tokens_per_step == 0) {
    // The run's own plan, for what neither the user nor the log says.
    grpc::ClientContext ctx;
    SetDeadline(ctx, client);
    v1::GetPlanRequest request;
    request.set_run(options.run);
    v1::PlanRevision plan;
    if (grpc::Status st = stub->GetPlan(&ctx, request, &plan); !st.ok()) {
      err << "flightplan tail: cannot read the run's plan (" << CodeName(st.error_code()) << ": " << st.error_message()
          << "); the log or --seq-len/--tokens-per-step must give the batch\n";
    } else {
      TailBasisFromPlan(plan, lo, err);
    }
  }
  uint32_t launches = 0;
  bool numbering_failed = false;  // an error: the tail exits 1
  lo.number_launch = [&](absl::Time at, uint32_t local) -> uint32_t {
    ++launches;
    if (grpc::Status st = read_run(); !st.ok()) {
      err << "flightplan tail: cannot read the run's launches (" << st.error_message() << "); numbering this one "
          << local + 1 << "\n";
      numbering_failed = true;
      return local + 1;
    }
    for (const v1::Attempt& a : info.attempts()) {
      if (convert::TimeFromProto(a.started()) == at) return a.attempt();
      if (live && !launch_named && !lo.launch.empty() && a.launch() == lo.launch) {
        launch_named = true;
        return a.attempt();  // the scheduler spoke first
      }
    }
    if (live) launch_named = true;
    return std::max(info.attempt(), local) + 1;
  };
  if (!options.from_start && info.attempt() > 0) {
    // Following from the end, mid-run: the iterations ahead continue the current attempt.
    grpc::ClientContext ctx;
    SetDeadline(ctx, client);
    v1::GetStatusRequest request;
    request.set_run(options.run);
    v1::RunStatus status;
    if (stub->GetStatus(&ctx, request, &status).ok() && (status.state() == "running" || status.state() == "starting")) {
      lo.continue_attempt = info.attempt();
      lo.continue_step = status.progress().step();
    }
  }
  LogEvents converter(lo);
  ReplayCounts counts;
  size_t limit = 500;  // events per batch, cut to the daemon's limit when it names one
  std::vector<v1::Event> pending;
  std::vector<size_t> pending_lines;
  auto send = [&] {
    if (pending.empty()) return;
    PendingBatch batch{std::move(pending), std::move(pending_lines)};
    pending.clear();
    pending_lines.clear();
    SendInOrder(*stub, client, batch, counts, limit);
  };

  signal(SIGINT, TailStop);
  signal(SIGTERM, TailStop);
  std::ifstream in;
  ino_t inode = 0;
  auto open_file = [&](bool at_end) {
    in.close();
    in.clear();
    in.open(options.path, std::ios::binary);
    struct stat st {};
    if (!in || stat(options.path.c_str(), &st) != 0) return false;
    inode = st.st_ino;
    if (at_end) in.seekg(0, std::ios::end);
    return true;
  };
  if (!open_file(!options.from_start)) {
    err << "flightplan tail: " << options.path << ": cannot read\n";
    return 2;
  }
  if (!options.exit_at_eof) {
    // Said once the file is open: what is written from now on is read (a script may wait
    // for this line before it writes).
    err << "flightplan tail: following " << options.path
        << (options.from_start ? " from its start" : " from its end (new lines only)") << "; Ctrl-C to stop\n";
  }
  std::string partial;
  auto last_send = std::chrono::steady_clock::now();
  std::optional<absl::Status> fatal;  // tokens cannot be counted: stop, nothing was sent
  size_t unused_said = 0;
  auto take = [&](std::vector<v1::Event>& events) {
    for (v1::Event& e : events) {
      pending.push_back(std::move(e));
      pending_lines.push_back(converter.lines());
    }
  };
  // What the converter noticed, and the lines it could not use (the first few verbatim).
  auto say = [&] {
    for (const std::string& n : converter.TakeNotices()) err << "flightplan tail: note: " << n << "\n";
    for (; unused_said < converter.unused_lines().size(); ++unused_said) {
      const UnusedLine& u = converter.unused_lines()[unused_said];
      err << "flightplan tail: line " << u.line << " not used (" << u.why << "): " << u.text << "\n";
    }
  };
  std::vector<std::string> head;  // the log's first lines (kHeadKept)
  // One whole line: its events join the pending batch.
  auto feed = [&](const std::string& whole) {
    if (fatal) return;
    if (head.size() < kHeadKept) head.push_back(whole);
    std::vector<v1::Event> events;
    const absl::Status st = converter.Feed(whole, absl::Now(), events);
    say();
    if (st.ok() && converter.recognised() == 0 && converter.lines() >= kRecogniseWithin) {
      fatal = NotThisFormat(options.path, options.format, converter.lines(), head);
    } else if (!st.ok()) {
      fatal = st;
    }
    if (fatal) {
      g_tail_stop = true;
      return;
    }
    take(events);
  };
  while (!g_tail_stop) {
    std::string line;
    bool got = false;
    while (!fatal && std::getline(in, line)) {
      if (in.eof()) {  // no newline yet: keep it for later
        partial += line;
        break;
      }
      got = true;
      feed(partial + line);
      partial.clear();
      if (pending.size() >= limit) send();
    }
    in.clear();
    const auto now = std::chrono::steady_clock::now();
    if (now - last_send > std::chrono::seconds(1) || options.exit_at_eof) {
      send();
      last_send = now;
    }
    if (got) continue;
    if (options.exit_at_eof) break;
    {
      std::vector<v1::Event> caught;
      if (options.from_start) {
        converter.CaughtUp(caught);  // the backfill has caught up: what comes next is live
        live = true;
      }
      converter.Idle(absl::Now(), caught);  // a death the log told of, once it has settled
      say();
      take(caught);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // Rotation (a new file under the name) or truncation: start over on the new content.
    struct stat st {};
    if (stat(options.path.c_str(), &st) == 0) {
      const auto pos = in.tellg();
      if (st.st_ino != inode || (pos >= 0 && st.st_size < pos)) {
        // Finish the old file first: lines written just before the rotation.
        while (std::getline(in, line)) {
          if (in.eof()) break;
          feed(partial + line);
          partial.clear();
        }
        partial.clear();
        open_file(false);
      }
    }
  }
  if (!partial.empty()) feed(partial);
  // The whole log read (or the tail stopped) without one line of its format.
  if (!fatal && converter.lines() > 0 && converter.recognised() == 0) {
    fatal = NotThisFormat(options.path, options.format, converter.lines(), head);
  }
  if (fatal) {
    err << "flightplan tail: " << fatal->message() << "\nflightplan tail: nothing was sent\n";
    return 2;
  }
  std::vector<v1::Event> rest;
  converter.Finish(rest);
  say();
  take(rest);
  send();
  out << "tail: " << units::Counted(static_cast<double>(converter.lines()), "line") << " of " << options.path << ", "
      << (launches == 1 ? std::string("1 launch") : units::Count(launches) + " launches") << " (the run's attempt "
      << converter.attempt() << "): " << units::Counted(static_cast<double>(counts.accepted), "event") << " accepted, "
      << units::Counted(static_cast<double>(counts.duplicates), "duplicate") << ", "
      << units::Count(static_cast<double>(counts.rejected)) << " rejected\n";
  if (converter.unused() > 0) {
    out << "  " << units::Counted(static_cast<double>(converter.unused()), "line")
        << " recognised but not used (the first " << converter.unused_lines().size() << " above on stderr)\n";
  }
  for (const std::string& r : counts.rejections) out << "  rejected event from " << r << "\n";
  return counts.rejected > 0 || converter.unused() > 0 || numbering_failed ? 1 : 0;
}

int RunReport(const ClientOptions& client, const ReportOptions& o, std::ostream& out, std::ostream& err) {
  v1::Event e;
  e.set_run(o.run);
  e.set_id(o.id);
  e.set_attempt(o.attempt);
  absl::Time time = absl::Now();
  if (!o.time.empty()) {
    absl::StatusOr<absl::Time> t = ParseTimestamp(o.time);
    if (!t.ok()) {
      err << "flightplan report: --time: " << t.status().message() << "\n";
      return 2;
    }
    time = *t;
  }
  *e.mutable_time() = convert::TimeToProto(time);
  int kinds = 0;
  if (o.step || o.tokens) {
    if (!o.step || !o.tokens) {
      err << "flightplan report: --step and --tokens go together\n";
      return 2;
    }
    e.mutable_steps()->set_step(*o.step);
    e.mutable_steps()->set_tokens(*o.tokens);
    ++kinds;
  }
  if (o.checkpoint) {
    e.mutable_checkpoint_saved()->set_step(*o.checkpoint);
    e.mutable_checkpoint_saved()->set_blocking_seconds(o.blocking_seconds);
    ++kinds;
  }
  if (!o.interruption.empty()) {
    e.mutable_interruption()->set_cause(o.interruption);
    e.mutable_interruption()->set_planned(o.planned);
    e.mutable_interruption()->set_detail(o.detail);
    ++kinds;
  }
  if (o.started) {
    e.mutable_job_started()->set_attempt(*o.started);
    e.mutable_job_started()->set_restored_step(o.restored_step);
    e.mutable_job_started()->set_gpus(o.gpus);
    ++kinds;
  }
  if (o.finished) {
    e.mutable_run_finished();
    ++kinds;
  }
  if (!o.span_start.empty()) {
    e.mutable_span_started()->set_kind(o.span_start);
    e.mutable_span_started()->set_expected_seconds(o.expected_seconds);
    ++kinds;
  }
  if (!o.span_end.empty()) {
    e.mutable_span_ended()->set_kind(o.span_end);
    ++kinds;
  }
  if (kinds != 1) {
    err << "flightplan report: give exactly one of --step/--tokens, --checkpoint, "
           "--interruption, --started, --finished, --span-start, --span-end\n";
    return 2;
  }
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::EventBatch batch;
  *batch.add_events() = e;
  v1::BatchAck ack;
  grpc::Status st = stub->ReportBatch(&ctx, batch, &ack);
  if (!st.ok()) return Fail(err, "report", st, client);
  out << (ack.accepted() ? "accepted" : "duplicate: already recorded, ignored") << "\n";
  return 0;
}

namespace {

// `status --html`: the page flightpland serves at /runs/NAME, from the same two calls (the
// status and the forecast history), written to a file ("-": stdout).
int WriteRunPage(v1::Tracker::Stub& stub, const ClientOptions& client, const v1::RunStatus& status,
                 const std::string& path, std::ostream& out, std::ostream& err) {
  exporters::RunPageInput in;
  in.status = status;
  in.generator = "flightplan status --html";
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx, client);
    v1::GetHistoryRequest request;
    request.set_run(status.run());
    if (grpc::Status st = stub.GetHistory(&ctx, request, &in.history); !st.ok()) return Fail(err, "status", st, client);
  }
  const std::string html = exporters::RunPageHtml(in);
  if (path == "-") {
    out << html;
    return 0;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << html;
  file.close();
  if (!file) {
    err << "flightplan status: --html " << path << ": cannot write\n";
    return 2;
  }
  out << "wrote the page of run " << status.run() << " to " << path << " (" << in.history.points_size()
      << " forecast points)\n";
  return 0;
}

}  // namespace

int RunStatus(const ClientOptions& client, const StatusOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(client);
  v1::GetStatusRequest request;
  request.set_run(options.run);
  // Only a given end is set: an absent one is the run's first event, or its now.
  for (const auto& [text, flag, is_from] :
       {std::tuple{&options.from, "--from", true}, std::tuple{&options.to, "--to", false}}) {
    if (text->empty()) continue;
    absl::StatusOr<absl::Time> t = ParseTimestamp(*text);
    if (!t.ok()) {
      err << "flightplan status: " << flag << " '" << *text << "': " << t.status().message() << "\n";
      return 2;
    }
    *(is_from ? request.mutable_from() : request.mutable_to()) = convert::TimeToProto(*t);
  }
  if (!options.from.empty() && !options.to.empty() &&
      !(convert::TimeFromProto(request.to()) > convert::TimeFromProto(request.from()))) {
    err << "flightplan status: --to " << options.to << " is not after --from " << options.from << "\n";
    return 2;
  }
  v1::RunStatus status;
  // A stale forecast is on its way (the daemon hurries a run read while stale): wait for
  // it, bounded, then print what there is; the text and JSON say when it is stale.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options.wait_seconds * 1000));
  while (true) {
    grpc::ClientContext ctx;
    SetDeadline(ctx, client);
    grpc::Status st = stub->GetStatus(&ctx, request, &status);
    if (!st.ok()) return Fail(err, "status", st, client);
    const auto now = std::chrono::steady_clock::now();
    if (!status.forecast().forecast_stale() || now >= deadline) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(100), deadline - now));
  }
  if (!options.html_path.empty()) return WriteRunPage(*stub, client, status, options.html_path, out, err);
  out << (options.json ? Json(status) : FormatRunStatus(status));
  return 0;
}

int RunHistory(const ClientOptions& client, const std::string& run, bool json, std::ostream& out, std::ostream& err) {
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  // 20,000 points are about 2 MB: above gRPC's default 4 MB only with many large moves.
  v1::GetHistoryRequest request;
  request.set_run(run);
  v1::ForecastHistory history;
  grpc::Status st = stub->GetHistory(&ctx, request, &history);
  if (!st.ok()) return Fail(err, "history", st, client);
  out << (json ? Json(history) : FormatHistory(history));
  return 0;
}

int RunList(const ClientOptions& client, std::ostream& out, std::ostream& err) {
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::ListRunsResponse response;
  grpc::Status st = stub->ListRuns(&ctx, v1::ListRunsRequest(), &response);
  if (!st.ok()) return Fail(err, "runs", st, client);
  out << FormatRunList(response);
  return 0;
}

int RunPlans(const ClientOptions& client, const std::string& run, bool json, std::ostream& out, std::ostream& err) {
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::GetRunRequest request;
  request.set_run(run);
  v1::RunInfo info;
  grpc::Status st = stub->GetRun(&ctx, request, &info);
  if (!st.ok()) return Fail(err, "plans", st, client);
  if (json) {
    out << Json(info);
    return 0;
  }
  out << absl::StrFormat("%-8s  %-20s  %6s  %10s  %12s  %14s  %s\n", "revision", "took effect", "GPUs", "tokens",
                         "tokens/s", "planned finish", "name");
  for (const v1::PlanRevision& p : info.plans()) {
    const v1::PlanReport& r = p.report();
    out << absl::StrFormat("%-8d  %-20s  %6s  %10s  %12s  %14s  %s\n", p.revision(),
                           units::Date(convert::TimeFromProto(p.has_effective() ? p.effective() : p.created())),
                           units::Count(static_cast<double>(p.plan().fleet().gpus())),
                           units::Sci(static_cast<double>(p.plan().data().tokens())),
                           units::Sci(r.compute().tokens_per_second()),
                           units::DateOnly(convert::TimeFromProto(r.schedule().finish_time())), p.plan().name());
  }
  out << units::Counted(info.plans_size(), "revision") << "; the forecast uses the latest for the work ahead\n";
  return 0;
}

int RunWhatIf(const ClientOptions& client, const WhatIfOptions& o, std::ostream& out, std::ostream& err) {
  v1::WhatIfRequest request;
  request.set_run(o.run);
  std::vector<v1::WhatIfVariant> variants;
  v1::WhatIfVariant all;
  for (const std::string& g : o.gpus) {
    v1::WhatIfVariant v;
    const bool relative = !g.empty() && (g[0] == '+' || g[0] == '-');
    int64_t n = 0;
    if (!absl::SimpleAtoi(relative && g[0] == '+' ? g.substr(1) : g, &n) || (!relative && n <= 0)) {
      err << "flightplan whatif: --gpus '" << g << "' is not a GPU count (8192) or a change (+512, -256)\n";
      return 2;
    }
    if (relative) {
      v.set_add_gpus(n);
      all.set_add_gpus(n);
    } else {
      v.set_gpus(static_cast<uint32_t>(n));
      all.set_gpus(static_cast<uint32_t>(n));
    }
    variants.push_back(v);
  }
  for (const std::string& d : o.checkpoint_intervals) {
    absl::Duration duration;
    double seconds = 0;
    if (absl::SimpleAtod(d, &seconds)) {
    } else if (absl::ParseDuration(d, &duration)) {
      seconds = absl::ToDoubleSeconds(duration);
    } else {
      err << "flightplan whatif: --checkpoint-interval '" << d << "' is not a duration (300, 300s, 5m)\n";
      return 2;
    }
    if (!(seconds > 0)) {
      err << "flightplan whatif: --checkpoint-interval " << d << " must be above 0\n";
      return 2;
    }
    v1::WhatIfVariant v;
    v.set_checkpoint_interval_seconds(seconds);
    all.set_checkpoint_interval_seconds(seconds);
    variants.push_back(v);
  }
  if (o.async_checkpoint) {
    v1::WhatIfVariant v;
    v.set_async_checkpoint(true);
    all.set_async_checkpoint(true);
    variants.push_back(v);
  }
  // One variant per value given, and the same change in the combined one.
  auto each = [&](const std::vector<double>& values, void (v1::WhatIfVariant::*set)(double)) {
    for (double x : values) {
      v1::WhatIfVariant v;
      (v.*set)(x);
      (all.*set)(x);
      variants.push_back(v);
    }
  };
  if (o.combined && !o.node_mtbf_hours.empty() && !o.node_mtbf_factor.empty()) {
    err << "flightplan whatif: --combined with both --node-mtbf-hours and --node-mtbf-factor: the combined "
           "variant can take one of them (the MTBF ahead, or a factor on the run's)\n";
    return 2;
  }
  each(o.node_mtbf_hours, &v1::WhatIfVariant::set_node_mtbf_hours);
  each(o.node_mtbf_factor, &v1::WhatIfVariant::set_node_mtbf_factor);
  each(o.restart_seconds, &v1::WhatIfVariant::set_restart_seconds);
  each(o.mfu, &v1::WhatIfVariant::set_mfu);
  if (!o.exclude_nodes.empty()) {
    absl::StatusOr<std::vector<std::string>> hosts = text::ExpandHostlist(o.exclude_nodes);
    if (!hosts.ok() || hosts->empty()) {
      err << "flightplan whatif: --exclude-nodes '" << o.exclude_nodes
          << "': " << (hosts.ok() ? "names no node" : hosts.status().message()) << "\n";
      return 2;
    }
    for (const std::string& h : *hosts) request.add_exclude_nodes(h);
  }
  if (variants.empty() && o.deadline.empty() && o.exclude_nodes.empty()) {
    err << "flightplan whatif: give at least one change (--gpus, --checkpoint-interval, --async-checkpoint, "
           "--node-mtbf-hours, --node-mtbf-factor, --restart-seconds, --mfu, --exclude-nodes) or a --deadline\n";
    return 2;
  }
  if (o.combined && variants.size() > 1) {
    all.set_name("all of them");
    variants.push_back(all);
  }
  for (v1::WhatIfVariant& v : variants) *request.add_variants() = std::move(v);
  if (!o.deadline.empty()) {
    absl::StatusOr<absl::Time> t = ParseTimestamp(o.deadline);
    if (!t.ok()) {
      err << "flightplan whatif: --deadline: " << t.status().message() << "\n";
      return 2;
    }
    *request.mutable_deadline() = convert::TimeToProto(*t);
  }
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::WhatIfResponse response;
  grpc::Status st = stub->WhatIf(&ctx, request, &response);
  if (!st.ok()) return Fail(err, "whatif", st, client);
  // 1: a variant the planner refuses; 3: no fleet meets --deadline (as flightplan plan's).
  bool broken = false;
  for (const v1::WhatIfOutcome& w : response.outcomes()) broken |= w.broken();
  const bool no_fleet = response.has_deadline_fleet() && !response.deadline_fleet().met();
  out << (o.json ? Json(response) : FormatWhatIf(response));
  return broken ? 1 : no_fleet ? 3 : 0;
}

int RunRetract(const ClientOptions& client, const RetractOptions& o, std::ostream& out, std::ostream& err) {
  if (o.ids.empty() && o.after.empty()) {
    err << "flightplan retract: say what to retract: --id ID (repeatable) and/or --after TIME\n";
    return 2;
  }
  v1::RetractRequest request;
  request.set_run(o.run);
  for (const std::string& id : o.ids) request.add_ids(id);
  if (!o.after.empty()) {
    absl::StatusOr<absl::Time> after = ParseTimestamp(o.after);
    if (!after.ok()) {
      err << "flightplan retract: --after '" << o.after << "': " << after.status().message() << "\n";
      return 2;
    }
    *request.mutable_after() = convert::TimeToProto(*after);
  }
  request.set_reason(o.reason);
  request.set_dry_run(o.dry_run);
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::RetractResponse response;
  grpc::Status st = stub->RetractEvents(&ctx, request, &response);
  if (!st.ok()) return Fail(err, "retract", st, client);
  if (o.json) {
    out << Json(response);
    return 0;
  }
  constexpr int kShown = 20;
  for (int i = 0; i < response.events_size() && i < kShown; ++i) {
    const v1::RetractedEvent& e = response.events(i);
    absl::StatusOr<forecast::Event> event = convert::EventFromProto(e.event());
    out << "  " << e.key() << "  " << (event.ok() ? forecast::Describe(*event) : e.event().ShortDebugString()) << "\n";
  }
  if (response.events_size() > kShown) out << "  ... and " << response.events_size() - kShown << " more\n";
  if (o.dry_run) {
    out << "would retract " << units::Counted(response.events_size(), "event") << " of run " << o.run
        << "; the rest folds (nothing changed: drop --dry-run to retract)\n";
  } else {
    out << "retracted " << units::Counted(response.events_size(), "event") << " of run " << o.run << " (retraction "
        << response.retraction_id() << ", kept in the database's retracted log)"
        << "; the run was folded again from the rest\n";
  }
  return 0;
}

}  // namespace flightplan::cli
