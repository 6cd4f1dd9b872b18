#include "cli/slurm_follow.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "convert/plan_convert.h"
#include "forecast/event.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "text/hostlist.h"

namespace flightplan::cli {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::StatusOr<Struct> ParseJson(absl::string_view json, absl::string_view what) {
  Struct root;
  const auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &root);
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(what, " is not JSON: ", st.message().as_string()));
  return root;
}

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}
std::string String(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v && v->kind_case() == Value::kStringValue ? v->string_value() : "";
}
std::optional<double> Number(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  if (v && v->kind_case() == Value::kNumberValue) return v->number_value();
  return std::nullopt;
}
// A Unix time; Slurm prints 0 for none, and a time far ahead for "not yet" (a pending
// job's end_time is its start_time plus its limit, or about 2163 when unlimited).
std::optional<absl::Time> Time(const Struct& s, const std::string& key) {
  const std::optional<double> n = Number(s, key);
  if (!n || *n <= 0) return std::nullopt;
  return absl::FromUnixSeconds(static_cast<int64_t>(*n));
}

absl::StatusOr<std::vector<const Struct*>> List(const Struct& root, const std::string& key, absl::string_view what) {
  const Value* v = Field(root, key);
  if (!v || v->kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has no \"", key, "\" list"));
  }
  std::vector<const Struct*> out;
  for (const Value& e : v->list_value().values()) {
    if (e.kind_case() == Value::kStructValue) out.push_back(&e.struct_value());
  }
  return out;
}

bool Ended(const std::string& state) {
  return state != "PENDING" && state != "RUNNING" && state != "SUSPENDED" && state != "CONFIGURING" &&
         state != "COMPLETING" && state != "REQUEUED" && state != "RESIZING" && state != "REQUEUE_HOLD" &&
         state != "REQUEUE_FED";
}

bool NodeFailed(const SlurmNode& n) {
  const std::string s = absl::AsciiStrToLower(n.state);
  return s.find("down") != std::string::npos || s.find("drain") != std::string::npos ||
         s.find("fail") != std::string::npos;
}

// The node list as Slurm prints it, one name per node in Slurm's order (the ranks' order):
// "gpu-[01-04],login" expanded as Slurm expands it (text/hostlist). A list Slurm itself
// would refuse is kept as its comma-separated parts, a range whole, matched by its prefix.
std::vector<std::string> Nodes(const std::string& list) {
  if (absl::StatusOr<std::vector<std::string>> hosts = text::ExpandHostlist(list); hosts.ok()) return *hosts;
  std::vector<std::string> out;
  for (absl::string_view n : absl::StrSplit(list, ',', absl::SkipEmpty())) out.emplace_back(n);
  return out;
}

bool Holds(const std::vector<std::string>& held, const std::string& node) {
  for (const std::string& h : held) {
    if (h == node) return true;
    const size_t bracket = h.find('[');
    if (bracket != std::string::npos && node.compare(0, bracket, h, 0, bracket) == 0) return true;
  }
  return false;
}

// Slurm's local time (%Y-%m-%dT%H:%M:%S) in slurmctld's zone; "Unknown", "None" and the
// like are none.
std::optional<absl::Time> LocalTime(absl::string_view text, absl::TimeZone zone) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime("%Y-%m-%dT%H:%M:%S", text, zone, &t, &err)) return t;
  return std::nullopt;
}

// A node the run held that failed when it ended, and its reason: accounting's event whose
// span covers the end (it lasts after the node is back), else the node's reason while sinfo
// still shows one. Slurm's times are whole seconds, and the node is marked down in the
// second the job is ended, or a few before: a margin of kEventMargin either side.
constexpr absl::Duration kEventMargin = absl::Seconds(5);
struct FailedNode {
  std::string node, reason;
};
std::optional<FailedNode> FindFailedNode(const std::vector<std::string>& held, std::optional<absl::Time> end,
                                         const std::vector<SlurmNode>& nodes,
                                         const std::vector<SlurmNodeEvent>& events) {
  if (end) {
    for (const SlurmNodeEvent& e : events) {
      if (!Holds(held, e.node) || e.reason.empty() || *e.start > *end + kEventMargin) continue;
      if (e.end && *e.end < *end - kEventMargin) continue;
      return FailedNode{e.node, e.reason};
    }
  }
  for (const SlurmNode& n : nodes) {
    if (Holds(held, n.name) && !n.reason.empty()) return FailedNode{n.name, n.reason};
  }
  return std::nullopt;
}

// A NODE_FAIL record's cause, with the failed node (Interruption.nodes) and its reason in
// the detail.
void NameFailedNode(SlurmCause& cause, const SlurmRunRecord& rec, const std::vector<std::string>& held,
                    const std::vector<SlurmNode>& nodes, const std::vector<SlurmNodeEvent>& events) {
  if (rec.state != "NODE_FAIL") return;
  if (std::optional<FailedNode> failed = FindFailedNode(held, rec.end, nodes, events)) {
    absl::StrAppend(&cause.detail, ", node ", failed->node, ": ", failed->reason);
    cause.nodes = {failed->node};
  }
}

std::string Clip(std::string s, size_t n) {
  if (s.size() > n) s.resize(n);
  return s;
}

}  // namespace

absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(absl::string_view json) {
  absl::StatusOr<Struct> root = ParseJson(json, "squeue --json's output");
  if (!root.ok()) return root.status();
  absl::StatusOr<std::vector<const Struct*>> jobs = List(*root, "jobs", "squeue --json's output");
  if (!jobs.ok()) return jobs.status();
  std::vector<SlurmJob> out;
  for (const Struct* j : *jobs) {
    SlurmJob job;
    const std::optional<double> id = Number(*j, "job_id");
    if (!id) return absl::InvalidArgumentError("squeue --json: a job without job_id");
    job.job_id = static_cast<int64_t>(*id);
    job.name = String(*j, "name");
    job.state = String(*j, "job_state");
    job.reason = String(*j, "state_reason");
    job.restarts = static_cast<uint32_t>(Number(*j, "restart_cnt").value_or(0));
    job.submit = Time(*j, "submit_time");
    job.start = Time(*j, "start_time");
    job.end = Time(*j, "end_time");
    job.nodes = String(*j, "nodes");
    job.exit_status = static_cast<int32_t>(Number(*j, "exit_code").value_or(0));
    const Value* requeue = Field(*j, "requeue");
    job.requeue = requeue && requeue->kind_case() == Value::kBoolValue && requeue->bool_value();
    job.array_job_id = static_cast<int64_t>(Number(*j, "array_job_id").value_or(0));
    if (const std::optional<double> task = Number(*j, "array_task_id")) job.array_task_id = static_cast<int64_t>(*task);
    out.push_back(std::move(job));
  }
  return out;
}

std::vector<SlurmJob> FollowedJobs(std::vector<SlurmJob> jobs, std::optional<int64_t> job_id, const std::string& name) {
  std::vector<SlurmJob> out;
  for (SlurmJob& j : jobs) {
    const bool of_id = job_id && (j.job_id == *job_id || j.array_job_id == *job_id);
    if (of_id || (!name.empty() && j.name == name)) out.push_back(std::move(j));
  }
  return out;
}

absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(absl::string_view json) {
  absl::StatusOr<Struct> root = ParseJson(json, "sinfo --json's output");
  if (!root.ok()) return root.status();
  absl::StatusOr<std::vector<const Struct*>> nodes = List(*root, "nodes", "sinfo --json's output");
  if (!nodes.ok()) return nodes.status();
  std::vector<SlurmNode> out;
  for (const Struct* n : *nodes) {
    SlurmNode node;
    node.name = String(*n, "name");
    node.state = String(*n, "state");
    node.reason = String(*n, "reason");
    node.reason_changed_at = Time(*n, "reason_changed_at");
    out.push_back(std::move(node));
  }
  return out;
}

std::optional<SlurmRunRecord> ParseJobCompLine(absl::string_view line, absl::TimeZone zone) {
  SlurmRunRecord r;
  bool has_id = false;
  for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    auto time = [&] { return LocalTime(value, zone); };
    if (key == "JobId") {
      has_id = absl::SimpleAtoi(value, &r.job_id);
    } else if (key == "JobState") {
      r.state = std::string(value);
    } else if (key == "StartTime") {
      r.start = time();
    } else if (key == "EndTime") {
      r.end = time();
    } else if (key == "NodeList") {
      r.nodes = std::string(value);
    } else if (key == "ExitCode") {
      r.exit_code = std::string(value);
    }
  }
  if (!has_id || r.state.empty()) return std::nullopt;
  return r;
}

absl::StatusOr<std::vector<SlurmRunRecord>> ParseSacct(absl::string_view text, absl::TimeZone zone) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return absl::InvalidArgumentError("sacct printed nothing, not even its header");
  std::map<std::string, size_t> column;
  {
    size_t i = 0;
    for (absl::string_view name : absl::StrSplit(lines[0], '|')) column[std::string(name)] = i++;
  }
  for (const char* need : {"JobIDRaw", "State"}) {
    if (!column.count(need)) {
      return absl::InvalidArgumentError(absl::StrCat("sacct's header '", lines[0], "' has no ", need, " column"));
    }
  }
  std::vector<SlurmRunRecord> rows;
  for (size_t l = 1; l < lines.size(); ++l) {
    const std::vector<absl::string_view> f = absl::StrSplit(lines[l], '|');
    auto get = [&](const char* name) -> absl::string_view {
      auto it = column.find(name);
      return it == column.end() || it->second >= f.size() ? absl::string_view() : f[it->second];
    };
    SlurmRunRecord r;
    if (!absl::SimpleAtoi(get("JobIDRaw"), &r.job_id)) continue;  // a step's row ("12.batch")
    // "CANCELLED by 0": the state is its first word.
    const absl::string_view state = get("State");
    r.state = std::string(state.substr(0, state.find(' ')));
    if (r.state.empty() || (!Ended(r.state) && r.state != "REQUEUED")) continue;  // not ended yet
    r.submit = LocalTime(get("Submit"), zone);
    r.start = LocalTime(get("Start"), zone);
    r.end = LocalTime(get("End"), zone);
    const absl::string_view nodes = get("NodeList");
    if (nodes != "None assigned" && nodes != "(null)") r.nodes = std::string(nodes);
    r.exit_code = std::string(get("ExitCode"));
    rows.push_back(std::move(r));
  }
  // Each job's runs in the order they were queued (a requeue's run is queued when it is).
  std::stable_sort(rows.begin(), rows.end(), [](const SlurmRunRecord& a, const SlurmRunRecord& b) {
    if (a.job_id != b.job_id) return a.job_id < b.job_id;
    return a.submit.value_or(absl::InfinitePast()) < b.submit.value_or(absl::InfinitePast());
  });
  return rows;
}

std::vector<SlurmNodeEvent> ParseNodeEvents(absl::string_view text, absl::TimeZone zone) {
  std::vector<SlurmNodeEvent> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, '|');
    if (f.size() < 5 || f[0].empty()) continue;  // the cluster's own events have no node
    SlurmNodeEvent e;
    e.node = std::string(f[0]);
    e.start = LocalTime(f[1], zone);
    e.end = LocalTime(f[2], zone);
    e.state = std::string(f[3]);
    e.reason = std::string(f[4]);
    if (e.start) out.push_back(std::move(e));
  }
  return out;
}

int32_t ExitStatusOf(absl::string_view exit_code) {
  const std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(exit_code, absl::MaxSplits(':', 1));
  int code = 0, signal = 0;
  if (!absl::SimpleAtoi(p.first, &code) || (!p.second.empty() && !absl::SimpleAtoi(p.second, &signal))) return 0;
  return static_cast<int32_t>(((code & 0xff) << 8) | (signal & 0x7f));
}

namespace {

// A cause without nodes (the caller adds the failed node where Slurm names one).
SlurmCause Ended(std::string cause, bool planned, std::string detail) {
  return SlurmCause{std::move(cause), planned, std::move(detail), {}};
}

}  // namespace

SlurmCause CauseOfEndState(const std::string& state, int32_t exit_status, const std::string& nodes, bool resubmits) {
  const std::string on = nodes.empty() ? "" : absl::StrCat(" on ", nodes);
  if (state == "NODE_FAIL") return Ended("node", false, absl::StrCat("Slurm: NODE_FAIL", on));
  if (state == "PREEMPTED") return Ended("preemption", false, absl::StrCat("Slurm: PREEMPTED", on));
  if (state == "TIMEOUT") {
    return Ended("time_limit", resubmits,
                 absl::StrCat("Slurm: TIMEOUT", on, resubmits ? " (the job comes back by itself)" : ""));
  }
  if (state == "OUT_OF_MEMORY") return Ended("oom", false, absl::StrCat("Slurm: OUT_OF_MEMORY", on));
  if (state == "CANCELLED") return Ended("operator", true, absl::StrCat("Slurm: CANCELLED by a user", on));
  if (state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD") {
    return Ended("operator", true, absl::StrCat("Slurm: requeued", on));
  }
  if (state == "BOOT_FAIL") return Ended("node", false, absl::StrCat("Slurm: BOOT_FAIL", on));
  if (state == "DEADLINE") return Ended("time_limit", false, absl::StrCat("Slurm: DEADLINE", on));
  if (state == "COMPLETED") return Ended("job_completed", true, absl::StrCat("Slurm: COMPLETED", on, ", exit code 0"));
  // FAILED and anything else: the exit status says how (wait(2): code << 8 | signal).
  const int code = (exit_status >> 8) & 0xff, signal = exit_status & 0x7f;
  if (signal != 0)
    return Ended(absl::StrCat("signal_", signal), false, absl::StrCat("Slurm: ", state, on, ", signal ", signal));
  return Ended(absl::StrCat("exit_code_", code), false, absl::StrCat("Slurm: ", state, on, ", exit code ", code));
}

std::string SlurmLaunchName(int64_t job_id, uint32_t restarts) { return absl::StrCat("slurm:", job_id, ".", restarts); }

void SlurmFollower::Start(std::vector<v1::Event>& out, const Key& key, Launch& launch, absl::Time at) {
  if (launch.started_sent) return;
  launch.start = at;
  const std::string name = SlurmLaunchName(key.first, key.second);
  for (const KnownAttempt& known : options_.known_attempts) {
    // Reported before this watcher started, by an earlier watcher: at Slurm's time, or later
    // within its second (placed after the run's latest report then).
    if (known.launch == name && known.started >= at && known.started < at + absl::Seconds(1)) {
      launch.start = known.started;
      launch.attempt = known.attempt;
      launch.started_sent = true;
      last_attempt_ = std::max(last_attempt_, known.attempt);
      return;
    }
  }
  launch.attempt = options_.number_launch ? options_.number_launch(name, at) : ++last_attempt_;
  if (options_.latest_event) {
    const std::optional<absl::Time> latest = options_.latest_event();
    if (latest && *latest > at && *latest < at + absl::Seconds(1)) at = *latest;
  }
  launch.start = at;
  v1::Event e;
  e.set_run(options_.run);
  e.set_id(absl::StrCat("slurm-", key.first, "-", key.second, "-start"));
  e.set_source(forecast::kSchedulerSource);
  *e.mutable_time() = convert::TimeToProto(at);
  e.mutable_job_started()->set_attempt(launch.attempt);
  e.mutable_job_started()->set_launch(name);
  for (const std::string& n : launch.nodes) e.mutable_job_started()->add_nodes(n);
  out.push_back(std::move(e));
  launch.started_sent = true;
}

void SlurmFollower::End(std::vector<v1::Event>& out, const Key& key, Launch& launch, absl::Time at,
                        const SlurmCause& cause) {
  if (launch.ended_sent || !launch.started_sent) return;
  v1::Event e;
  e.set_run(options_.run);
  e.set_id(absl::StrCat("slurm-", key.first, "-", key.second, "-end"));
  e.set_source(forecast::kSchedulerSource);
  *e.mutable_time() = convert::TimeToProto(std::max(at, launch.start.value_or(at)));
  e.set_attempt(launch.attempt);
  v1::Interruption* i = e.mutable_interruption();
  i->set_cause(cause.cause);
  i->set_planned(cause.planned);
  i->set_detail(Clip(cause.detail, 4096));
  for (const std::string& n : cause.nodes) i->add_nodes(n);
  out.push_back(std::move(e));
  launch.ended_sent = true;
}

std::vector<v1::Event> SlurmFollower::Observe(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes,
                                              const std::vector<SlurmRunRecord>& records,
                                              const std::vector<SlurmNodeEvent>& node_events) {
  std::vector<v1::Event> out;
  // The completion log's records, by job in the log's order: record r is the job's run r.
  std::map<int64_t, std::vector<SlurmRunRecord>> by_job;
  for (const SlurmRunRecord& r : records) by_job[r.job_id].push_back(r);
  for (const SlurmJob& j : jobs) seen_.insert(j.job_id);

  std::set<int64_t> active;
  bool any_waiting = false;
  for (const SlurmJob& j : jobs) {
    if (!Ended(j.state)) active.insert(j.job_id);
    if (j.state == "PENDING") any_waiting = true;
  }
  for (const SlurmJob& j : jobs) {
    const std::vector<SlurmRunRecord>& log = by_job[j.job_id];
    // Runs of the job that ended before this look: restart counts below the current one.
    for (uint32_t r = 0; r < j.restarts; ++r) {
      Launch& l = launches_[{j.job_id, r}];
      if (l.ended_sent) continue;
      const SlurmRunRecord* rec = r < log.size() ? &log[r] : nullptr;
      if (!l.started_sent) {
        // Never seen running (the watcher was away): its record gives its start.
        std::optional<absl::Time> start = rec ? rec->start : std::nullopt;
        if (!start && rec) start = rec->end;
        if (!start) continue;  // nothing lasting says when; the next run's start still counts
        if (rec) l.nodes = Nodes(rec->nodes);
        Start(out, {j.job_id, r}, l, *start);
      }
      // Why it went back to the queue: its record, else the nodes it held, else an
      // operator's requeue. When: the record's end, else the job's new submit time.
      SlurmCause cause;
      std::optional<absl::Time> at;
      if (rec) {
        cause = CauseOfEndState(rec->state, ExitStatusOf(rec->exit_code), rec->nodes, true);
        at = rec->end;
      }
      if (!rec || rec->state == "PENDING") {
        // A requeue by hand or by a node's failure: the node's state tells them apart.
        for (const SlurmNode& n : nodes) {
          if (Holds(l.nodes, n.name) && NodeFailed(n)) {
            cause = {"node",
                     false,
                     absl::StrCat("Slurm: requeued, node ", n.name, " ", n.state,
                                  n.reason.empty() ? "" : absl::StrCat(": ", n.reason)),
                     {n.name}};
            break;
          }
        }
        if (cause.cause.empty()) cause = CauseOfEndState("PENDING", 0, absl::StrJoin(l.nodes, ","), true);
      }
      if (rec) NameFailedNode(cause, *rec, l.nodes, nodes, node_events);
      if (!at) at = r + 1 == j.restarts && j.submit ? j.submit : l.start;
      End(out, {j.job_id, r}, l, *at, cause);
    }
    Launch& now = launches_[{j.job_id, j.restarts}];
    // A requeue in progress: squeue (22.05) shows the new restart count while the last run
    // is still completing, with a start_time that is not the new run's (a preempted run
    // showed its preemption's second, and sacct its real start 3 s later). The new run
    // starts when squeue shows it running, or from its record.
    const bool requeue_tail = j.state == "COMPLETING" && j.restarts > 0 && !now.started_sent;
    if (!requeue_tail &&
        (j.state == "RUNNING" || j.state == "COMPLETING" || j.state == "SUSPENDED" || Ended(j.state))) {
      const bool never_ran = Ended(j.state) && j.start && j.end && *j.start > *j.end;  // cancelled while waiting
      if (j.start && !never_ran) {
        if (now.nodes.empty()) now.nodes = Nodes(j.nodes);
        Start(out, {j.job_id, j.restarts}, now, *j.start);
      }
    }
    if (Ended(j.state) && now.started_sent) {
      // Its own end state, while squeue still shows it. It comes back by itself when set to
      // requeue, or when another job of the followed name or array waits.
      const bool resubmits = any_waiting;
      End(out, {j.job_id, j.restarts}, now, j.end.value_or(now.start.value_or(absl::UnixEpoch())),
          CauseOfEndState(j.state, j.exit_status, j.nodes, resubmits));
    }
  }
  // A followed job squeue no longer shows (past MinJobAge): its last run ended; the
  // completion log says how, when it has the record.
  for (auto& [key, l] : launches_) {
    if (l.ended_sent || !l.started_sent || active.count(key.first)) continue;
    const int64_t job_id = key.first;  // (clang 14 captures no structured binding)
    const bool shown = std::any_of(jobs.begin(), jobs.end(), [&](const SlurmJob& j) { return j.job_id == job_id; });
    if (shown) continue;
    const std::vector<SlurmRunRecord>& log = by_job[key.first];
    if (key.second < log.size()) {
      const SlurmRunRecord& rec = log[key.second];
      SlurmCause cause = CauseOfEndState(rec.state, ExitStatusOf(rec.exit_code), rec.nodes, any_waiting);
      NameFailedNode(cause, rec, l.nodes, nodes, node_events);
      End(out, key, l, rec.end.value_or(*l.start), cause);
    }
  }
  active_ = std::move(active);
  std::stable_sort(out.begin(), out.end(), [](const v1::Event& a, const v1::Event& b) {
    return convert::TimeFromProto(a.time()) < convert::TimeFromProto(b.time());
  });
  return out;
}

bool SlurmFollower::Done() const {
  if (!active_.empty() || seen_.empty()) return false;
  for (const auto& [key, l] : launches_) {
    if (l.started_sent && !l.ended_sent) return false;
  }
  return true;
}

}  // namespace flightplan::cli
