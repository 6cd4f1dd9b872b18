#include "cli/crash_lines.h"

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace flightplan::cli {
namespace {

constexpr int kScheduler = 7, kHardware = 6, kMemory = 5, kCuda = 4, kNccl = 3, kHang = 2, kSignal = 1;

Crash Make(std::string cause, std::string detail, int rank, bool planned = false) {
  if (detail.size() > 240) detail = detail.substr(0, 240) + "...";
  Crash c;
  c.cause = std::move(cause);
  c.detail = std::move(detail);
  c.rank = rank;
  c.planned = planned;
  return c;
}

// Slurm, src/slurmd/slurmstepd/req.c (22.05 to 25.05): "*** %s ON %s CANCELLED AT %s DUE TO
// TIME LIMIT ***" (and PREEMPTION, NODE FAILURE..., JOB REQUEUE; 25.05 "DUE to SIGNAL %s";
// a plain "CANCELLED AT %s ***" for scancel up to 24.11). Quoted in ZettaAI/zetta_utils#671,
// SystemsGenetics/GEMmaker#242, hafs-community/HAFS#101.
const std::regex kSlurmCancelled(
    R"(\*\*\* (?:JOB|STEP) \S+ ON (\S+) CANCELLED AT \S+(?: DUE (?:TO|to) (TIME LIMIT|PREEMPTION|NODE FAILURE|JOB REQUEUE|TASK FAILURE|SIGNAL \w+))?)");
// Up to 20.11: "*** %s ON %s UNCORRECTABLE MEMORY ERROR AT %s ***".
const std::regex kSlurmMemoryError(R"(\*\*\* (?:JOB|STEP) \S+ ON (\S+) UNCORRECTABLE MEMORY ERROR)");
// The driver's Xid (kernel log): "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>,
// GPU has fallen off the bus." (NVIDIA's Xid catalog; NVIDIA/gpu-operator#1146,
// akash-network/support#244); under MIG the instance follows the bus id,
// "(PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u)", the compute instance optional.
const std::regex kXid(R"(NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)(?: GPU-I:\d+(?: GPU-CI:\d+)?)?\): (\d+),)");
// The host of a kernel line as syslog writes it: rsyslog's traditional and RFC 3339 file
// formats, "%TIMESTAMP% %HOSTNAME% %syslogtag%%msg%" ("Dec  5 11:22:35 gpu-node-117 kernel:
// [12345.678] NVRM: Xid ..."), and journalctl's short output, the same.
const std::regex kSyslogHost(R"((?:^|\s)([A-Za-z0-9][A-Za-z0-9._-]*) kernel: (?:\[\s*[\d.]+\]\s*)?NVRM:)");
// NCCL's own prefix (src/debug.cc ncclDebugLog, v2.5.6 to v2.25.1): "%s:%d:%d [%d] %s:%d NCCL
// WARN " (host cut at its first '.', pid, tid, CUDA device, file, line); from v2.26.2 a "[%F
// %T] " time before it, and from v2.30.7 "(%s)" the function before "NCCL WARN".
const std::regex kNcclWarnHost(R"((?:^|\s)([A-Za-z0-9][A-Za-z0-9_-]*):\d+:\d+ \[\d+\] \S+:\d+ (?:\S+ )?NCCL WARN )");
// src/misc/socket.cc socketProgress (v2.16.2+): "socketProgress: Connection closed by remote
// peer %s" with the peer as host<port> (reverse-resolved since v2.12.10); quoted in
// NVIDIA/nccl-tests#166: "... NCCL WARN socketProgress: Connection closed by remote peer
// gpu004.ds-a4-r02.abc.com<55693>".
const std::regex kNcclPeerClosed(R"(Connection closed by remote peer ([A-Za-z0-9._-]+)<\d+>)");
// c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate %s" (the rest
// changed in 2.1); pytorch/pytorch#16417.
const std::regex kCudaOom(R"(CUDA out of memory\. Tried to allocate ([\d.]+ [KMGT]?i?B))");
// Slurm task_cgroup_memory.c: "Detected %lu oom_kill event in %ps" (23.02+), "oom-kill
// event(s)" (<= 22.05); srun launch.c "%s: %s %s: Out Of Memory"; Linux mm/oom_kill.c
// "Out of memory: Killed process %d (%s)".
const std::regex kHostOom(
    R"(Detected \d+ oom[-_]kill event|: tasks? [\d,\-]+: Out Of Memory|(?:Out of memory|Memory cgroup out of memory): Killed process)");
// c10/cuda/CUDAException.cpp: "CUDA error: " + cudaGetErrorString(err).
const std::regex kCudaError(R"(CUDA error: ([^\n]+?)\s*$)");
// NCCLUtils.hpp C10D_NCCL_CHECK: "NCCL error in: " file ":" line ", " ncclGetErrorString ",
// NCCL version " ver (NVIDIA/nccl#2076, vllm-project/vllm#1359).
const std::regex kNcclError(R"(NCCL error in: \S+:\d+, (.+?), NCCL version (\S+))");
const std::regex kNcclCode(
    R"(\bnccl(UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError)\b)");
// ProcessGroupNCCL.cpp WorkNCCL::checkTimeout: "Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=808, OpType=ALLREDUCE, ...) ran for 600020 milliseconds before timing out."
// (XPixelGroup/BasicSR#737, OFA-Sys/OFA#271).
const std::regex kWatchdogTimeout(
    R"(Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+).*?\) ran for (\d+) milliseconds)");
// The watchdog thread's wrapper: "[Rank N] NCCL watchdog thread terminated with exception: "
// (torch <= 2.2), "Process group watchdog thread terminated with exception: " (2.3+).
const std::regex kWatchdogWrapper(R"((?:NCCL|Process group) watchdog thread terminated with exception: (.*))");
// ProcessGroupGloo.cpp monitoredBarrier (torch 1.10+; dist.monitored_barrier, and the
// collective checks of TORCH_DISTRIBUTED_DEBUG=DETAIL): rank 0 names the ranks that did not
// arrive, "[Rank 0]: Rank %d failed to pass monitoredBarrier in %d ms", or with
// wait_all_ranks "Ranks %s failed ..." joined by ", " (quoted in PyTorch's distributed docs:
// "RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms").
const std::regex kMonitoredBarrier(R"(\bRanks? ([\d, ]+?) failed to pass monitoredBarrier in (\d+) ms)");
// torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: %s) local_rank: %s";
// agent/server/api.py: "Received %s death signal, shutting down workers"
// (hpcaitech/ColossalAI#3514, pytorch/pytorch#150916).
const std::regex kElasticExit(R"(failed \(exitcode: (-?\d+)\) local_rank:)");
const std::regex kDeathSignal(R"(Received (?:Signals\.)?(SIG\w+|\d+) death signal)");
// srun launch.c: "%s: %s %s: %s" with strsignal ("srun: error: c002: task 0: Killed").
const std::regex kSrunSignal(R"(srun: error: (\S+): tasks? [\d,\-]+: (Killed|Terminated)\b)");

// Driver Xids (NVIDIA's Xid catalog): memory errors, the GPU or its links lost, the
// program's own faults; 45 (preemptive cleanup) follows another and names nothing.
std::optional<Crash> FromXid(int code, const std::string& pci) {
  const std::string detail = absl::StrCat("xid=", code, " pci=", pci);
  switch (code) {
    case 48:
    case 63:
    case 64:
    case 92:
    case 94:
    case 95:
      return Make("ecc", detail, kHardware);
    case 13:
    case 31:
    case 43:
      return Make("cuda", detail, kCuda);
    case 45:
      return std::nullopt;
    default:
      return Make("gpu", detail, kHardware);  // 79 off the bus, 74 NVLink, 119/120 GSP, ...
  }
}

std::optional<Crash> FromCudaText(const std::string& text) {
  if (absl::StrContains(text, "ECC")) return Make("ecc", text, kHardware);
  if (absl::StrContains(text, "out of memory")) return Make("oom", text, kMemory);
  // rwth-i6/returnn#1520, THUDM/slime#1305 ("unknown error", 999), NVIDIA/nvidia-resiliency-ext#18.
  if (absl::StrContains(text, "unknown error") || absl::StrContains(text, "unspecified launch failure") ||
      absl::StrContains(text, "busy or unavailable") || absl::StrContains(text, "NVLink")) {
    return Make("gpu", text, kHardware);
  }
  return Make("cuda", text, kCuda);  // an illegal memory access, a device-side assert, ...
}

}  // namespace

std::string ShortHost(const std::string& host) {
  static const std::regex kIpv4(R"(\d{1,3}(?:\.\d{1,3}){3})");
  static const std::regex kName(R"([A-Za-z0-9._-]{1,255})");
  if (!std::regex_match(host, kName)) return "";
  if (std::regex_match(host, kIpv4)) return host;
  const std::string first = host.substr(0, host.find('.'));
  // A reverse-DNS name ("1.0.0.127.in-addr.arpa", what getfqdn() gives an unnamed host) is
  // no node's name.
  if (first.find_first_not_of("0123456789") == std::string::npos) return "";
  return first;
}

namespace {

// The classification, before the hosts are read.
std::optional<Crash> Classify(const std::string& line);

}  // namespace

std::optional<Crash> ClassifyCrashLine(const std::string& line) {
  std::optional<Crash> c = Classify(line);
  if (!c || !c->nodes.empty()) return c;
  std::smatch m;
  if (absl::StrContains(line, "NVRM:") && std::regex_search(line, m, kSyslogHost)) {
    c->nodes = {ShortHost(m[1].str())};
  } else if (absl::StrContains(line, "NCCL WARN") && std::regex_search(line, m, kNcclPeerClosed)) {
    c->nodes = {ShortHost(m[1].str())};  // the peer it lost, not the host that saw it go
  } else if (absl::StrContains(line, "NCCL WARN") && std::regex_search(line, m, kNcclWarnHost) && c->cause != "hang") {
    c->nodes = {m[1].str()};  // its own fault (a CUDA or system error on the host printing it)
  }
  if (!c->nodes.empty() && c->nodes[0].empty()) c->nodes.clear();
  return c;
}

namespace {

std::optional<Crash> Classify(const std::string& line) {
  // Cheap tests first: most lines are iterations.
  const bool slurm = absl::StrContains(line, "***");
  const bool cuda = absl::StrContains(line, "CUDA") || absl::StrContains(line, "Cuda failure");
  const bool nccl = absl::StrContains(line, "NCCL") || absl::StrContains(line, "nccl");
  const bool xid = absl::StrContains(line, "Xid") || absl::StrContains(line, "fallen off the bus");
  const bool memory = absl::StrContains(line, "oom") || absl::StrContains(line, "Out Of Memory") ||
                      absl::StrContains(line, "Out of memory") || absl::StrContains(line, "out of memory");
  const bool watchdog = absl::StrContains(line, "atchdog") || absl::StrContains(line, "Heartbeat monitor timed out") ||
                        absl::StrContains(line, "timed out in blocking wait");
  const bool signal = absl::StrContains(line, "exitcode") || absl::StrContains(line, "death signal") ||
                      absl::StrContains(line, "srun: error");
  const bool barrier = absl::StrContains(line, "monitoredBarrier");
  if (!(slurm || cuda || nccl || xid || memory || watchdog || signal || barrier)) return std::nullopt;
  // Knock-on lines: what torchrun and the watchdog do once another rank has failed.
  if (absl::StrContains(line, "closing signal") || absl::StrContains(line, "Some NCCL operations have failed") ||
      absl::StrContains(line, "ChildFailedError")) {
    return std::nullopt;
  }
  std::smatch m;
  if (slurm) {
    if (std::regex_search(line, m, kSlurmCancelled)) {
      const std::string node = m[1].str(), why = m[2].matched ? m[2].str() : "";
      const std::string detail = absl::StrCat("node=", node, why.empty() ? "" : absl::StrCat(" ", why));
      if (why == "TIME LIMIT") return Make("time_limit", detail, kScheduler, /*planned=*/true);
      if (why == "PREEMPTION" || why == "JOB REQUEUE") return Make("preemption", detail, kScheduler);
      if (why == "NODE FAILURE") return Make("node", detail, kScheduler);
      if (why == "TASK FAILURE") return std::nullopt;  // another line says what failed
      return Make("operator", detail, kScheduler);     // scancel: a plain cancel, or a signal
    }
    if (std::regex_search(line, m, kSlurmMemoryError)) {
      Crash c = Make("ecc", "node=" + m[1].str(), kHardware);
      if (const std::string node = ShortHost(m[1].str()); !node.empty()) c.nodes = {node};
      return c;
    }
  }
  if (xid) {
    if (std::regex_search(line, m, kXid)) {
      int code = 0;
      if (absl::SimpleAtoi(m[2].str(), &code)) return FromXid(code, m[1].str());
    }
    if (absl::StrContains(line, "fallen off the bus")) return Make("gpu", "xid=79", kHardware);
  }
  if (watchdog && std::regex_search(line, m, kWatchdogWrapper)) {
    // Read by what it wraps: a timeout is a hang, a CUDA error a CUDA fault.
    const std::string inner = m[1].str();
    if (std::optional<Crash> c = Classify(inner)) return c;
    return Make("nccl", inner, kNccl);
  }
  if (memory) {
    if (std::regex_search(line, m, kCudaOom)) return Make("oom", "tried to allocate " + m[1].str(), kMemory);
    if (std::regex_search(line, m, kHostOom)) return Make("host_oom", m[0].str(), kMemory);
    if (absl::StrContains(line, "Cuda failure 2 'out of memory'")) return Make("oom", "Cuda failure 2", kMemory);
  }
  if (cuda && std::regex_search(line, m, kCudaError)) return FromCudaText(m[1].str());
  if (nccl) {
    if (std::regex_search(line, m, kNcclError)) {
      return Make("nccl", absl::StrCat(m[1].str(), " (NCCL ", m[2].str(), ")"), kNccl);
    }
    if (std::regex_search(line, m, kNcclCode)) return Make("nccl", "nccl" + m[1].str(), kNccl);
    if (absl::StrContains(line, "NCCL communicator was aborted")) return Make("nccl", "communicator aborted", kNccl);
    if (std::regex_search(line, m, kNcclPeerClosed)) return Make("nccl", "connection closed by " + m[1].str(), kNccl);
    if (absl::StrContains(line, "NCCL timeout in")) return Make("hang", "nccl_timeout", kHang);
  }
  if (barrier && std::regex_search(line, m, kMonitoredBarrier)) {
    Crash c = Make("hang", absl::StrCat("rank ", m[1].str(), " failed to pass monitoredBarrier in ", m[2].str(), " ms"),
                   kHang);
    for (absl::string_view r : absl::StrSplit(m[1].str(), ", ")) {
      int32_t rank = 0;
      if (absl::SimpleAtoi(r, &rank) && rank >= 0) c.ranks.push_back(rank);
    }
    return c;
  }
  if (watchdog) {
    if (std::regex_search(line, m, kWatchdogTimeout)) {
      return Make("hang",
                  absl::StrCat("nccl_timeout op=", m[2].str(), " seq=", m[1].str(), " after ", m[3].str(), " ms"),
                  kHang);
    }
    if (absl::StrContains(line, "Heartbeat monitor timed out")) return Make("hang", "heartbeat monitor", kHang);
    if (absl::StrContains(line, "timed out in blocking wait")) return Make("hang", "blocking wait", kHang);
  }
  if (signal) {
    if (std::regex_search(line, m, kElasticExit)) {
      const std::string code = m[1].str();
      if (code == "-9") return Make("sigkill", "exitcode -9", kSignal);
      if (code == "-15") return Make("sigterm", "exitcode -15", kSignal);
      return std::nullopt;  // an abort or an exit code: earlier lines say why
    }
    if (std::regex_search(line, m, kDeathSignal)) {
      const std::string sig = m[1].str();
      if (sig == "15" || sig == "SIGTERM") return Make("sigterm", "death signal " + sig, kSignal);
      if (sig == "9" || sig == "SIGKILL") return Make("sigkill", "death signal " + sig, kSignal);
      if (sig == "1" || sig == "SIGHUP") return Make("operator", "death signal " + sig, kSignal);
      return std::nullopt;
    }
    if (std::regex_search(line, m, kSrunSignal)) {
      return Make(m[2].str() == "Killed" ? "sigkill" : "sigterm", "node=" + m[1].str(), kSignal);
    }
  }
  return std::nullopt;
}

}  // namespace

}  // namespace flightplan::cli
