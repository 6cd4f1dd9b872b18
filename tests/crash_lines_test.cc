// Crash lines to causes: each line below is verbatim from a real log quoted in the upstream
// issue named beside it (or built from the format string in the source named), so the
// classifier is held to what the programs print.
#include "cli/crash_lines.h"

#include <string>

#include "gtest/gtest.h"

namespace flightplan::cli {
namespace {

struct Case {
  const char* name;
  const char* line;
  const char* cause;   // "" = names no cause
  const char* detail;  // a part of the detail, or ""
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CrashLines : public ::testing::TestWithParam<Case> {};

TEST_P(CrashLines, NameTheirCause) {
  const Case& c = GetParam();
  const std::optional<Crash> crash = ClassifyCrashLine(c.line);
  if (std::string(c.cause).empty()) {
    EXPECT_FALSE(crash.has_value()) << crash->cause;
    return;
  }
  ASSERT_TRUE(crash.has_value()) << c.line;
  EXPECT_EQ(crash->cause, c.cause);
  EXPECT_NE(crash->detail.find(c.detail), std::string::npos) << crash->detail;
}

const Case kCases[] = {
    // NVIDIA/nccl#2076 (PyTorch's C10D_NCCL_CHECK message).
    {"NcclRemoteError",
     "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
     "remote process exited or there was a network error, NCCL version 2.21.5",
     "nccl", "remote process exited or there was a network error (NCCL 2.21.5)"},
    // NVIDIA/nccl#1928, with torchrun's rank prefix.
    {"NcclWithRankPrefix",
     "[rank3]: torch.distributed.DistBackendError: NCCL error in: "
     "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3763, remote process exited or there was "
     "a network error, NCCL version 2.28.8",
     "nccl", "NCCL 2.28.8"},
    // The detail line that follows (NCCLUtils getNcclErrorDetailStr).
    {"NcclCode",
     "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.", "nccl",
     "ncclRemoteError"},
    // XPixelGroup/BasicSR#737 (ProcessGroupNCCL.cpp WorkNCCL::checkTimeout).
    {"WatchdogTimeout",
     "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
     "600020 milliseconds before timing out.",
     "hang", "op=ALLREDUCE seq=808 after 600020 ms"},
    // OFA-Sys/OFA#271: the older form without the Numel fields.
    {"WatchdogTimeoutOlder",
     "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
     "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.",
     "hang", "seq=469508"},
    // The watchdog's wrapper around a timeout (torch <= 2.2) ...
    {"WrapperOfATimeout",
     "[rank17]:[E ProcessGroupNCCL.cpp:1182] [Rank 2] NCCL watchdog thread terminated with exception: [Rank 2] "
     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=9437184, "
     "NumelOut=9437184, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.",
     "hang", "op=ALLREDUCE"},
    // ... and around a CUDA error: read by what it wraps (vllm-project/vllm#4108).
    {"WrapperOfACudaError",
     "[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal "
     "memory access was encountered",
     "cuda", "an illegal memory access was encountered"},
    // huggingface/accelerate#1192 (c10/cuda/CUDAException.cpp).
    {"Ecc", "RuntimeError: CUDA error: uncorrectable ECC error encountered", "ecc", "ECC"},
    // rwth-i6/returnn#1520: "likely a hardware issue".
    {"UnknownCudaError", "RuntimeError: CUDA error: unknown error", "gpu", "unknown error"},
    // pytorch/pytorch#16417 (CUDACachingAllocator, up to about 2.0) and carolchenyx/MGFN.#35 (2.1+).
    {"CudaOomOld",
     "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB "
     "already allocated; 9.28 GiB free; 4.68 MiB cached)",
     "oom", "12.50 MiB"},
    {"CudaOomNew",
     "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of "
     "23.65 GiB of which 11.06 MiB is free.",
     "oom", "22.00 MiB"},
    // nextflow-io/nextflow#5932 (Slurm 23.02+ task_cgroup_memory.c; srun launch.c).
    {"HostOom",
     "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks have been OOM Killed.",
     "host_oom", "oom_kill"},
    {"HostOomSrun", "srun: error: sdumont6156: task 0: Out Of Memory", "host_oom", "Out Of Memory"},
    // ArjunaCluster/ArjunaUsers#52 (Slurm <= 22.05).
    {"HostOomOldSlurm",
     "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of your processes may have "
     "been killed by the cgroup out-of-memory handler.",
     "host_oom", "oom-kill"},
    // The driver's Xid lines (NVIDIA/gpu-operator#1146, leptonai/gpud, akash-network/support#244).
    {"Xid79",
     "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     "gpu", "xid=79 pci=0000:91:00"},
    {"Xid48",
     "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has "
     "been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
     "ecc", "xid=48"},
    {"Xid31",
     "[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, Ch 00000008, intr "
     "00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000.",
     "cuda", "xid=31"},
    // Slurm req.c (ZettaAI/zetta_utils#671, SystemsGenetics/GEMmaker#242, hafs-community/HAFS#101).
    {"TimeLimit", "slurmstepd: error: *** JOB 494583 ON node12 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
     "time_limit", "node=node12"},
    {"Preemption",
     "slurmstepd: error: *** JOB 32391783 ON cn119 CANCELLED AT 2021-06-18T13:05:36 DUE TO PREEMPTION ***",
     "preemption", "cn119"},
    {"Scancel", "slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***", "operator",
     "orion-01-01"},
    // torchrun (hpcaitech/ColossalAI#3514; pytorch/pytorch#150916).
    {"ElasticSigkill",
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: "
     "/data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python",
     "sigkill", "exitcode -9"},
    {"DeathSignal",
     "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting "
     "down workers",
     "sigterm", "15"},
    // Knock-on lines name no cause: torchrun killing the other ranks, the watchdog's sequel.
    {"ClosingSignalIsKnockOn",
     "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing signal SIGTERM", "", ""},
    {"ExitCodeOneIsNotACause",
     "[2023-10-13 17:40:02,544] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
     "local_rank: "
     "0 (pid: 62498) of binary: /usr/bin/python",
     "", ""},
    // Ordinary lines (Megatron's iteration line and arguments dump) name none.
    {"AnIteration",
     " [2027-01-04 00:02:00] iteration       10/     500 | consumed samples:          160 | elapsed time per iteration "
     "(ms): 10000.0 |",
     "", ""},
    {"AnArgument", "  nccl_communicator_config_path ................... None", "", ""},
};

INSTANTIATE_TEST_SUITE_P(Sources, CrashLines, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(CrashLinesRank, TheSchedulerOverTheHardwareOverMemoryOverCudaOverNcclOverAHangOverASignal) {
  auto rank = [](const char* line) { return ClassifyCrashLine(line).value().rank; };
  const int scheduler =
      rank("slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2024-04-20T09:09:37 DUE TO PREEMPTION ***");
  const int hardware =
      rank("NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
  const int memory = rank("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has");
  const int cuda = rank("RuntimeError: CUDA error: an illegal memory access was encountered");
  const int nccl =
      rank("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.");
  const int hang = rank(
      "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
      "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.");
  const int signal = rank("srun: error: c002: task 0: Killed");
  EXPECT_GT(scheduler, hardware);
  EXPECT_GT(hardware, memory);
  EXPECT_GT(memory, cuda);
  EXPECT_GT(cuda, nccl);
  EXPECT_GT(nccl, hang);
  EXPECT_GT(hang, signal);
  EXPECT_TRUE(
      ClassifyCrashLine("slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***")
          ->planned);
}

}  // namespace
}  // namespace flightplan::cli

namespace flightplan::cli {
namespace {

// The host a crash line blames (Crash::nodes), from the emitters' own formats.
struct HostCase {
  const char* name;
  const char* line;
  const char* cause;
  const char* node;  // "" = blames none
};

void PrintTo(const HostCase& c, std::ostream* os) { *os << c.name; }

class CrashLineHosts : public ::testing::TestWithParam<HostCase> {};

TEST_P(CrashLineHosts, NameTheNodeToBlame) {
  const HostCase& c = GetParam();
  const std::optional<Crash> crash = ClassifyCrashLine(c.line);
  ASSERT_TRUE(crash.has_value()) << c.line;
  EXPECT_EQ(crash->cause, c.cause);
  if (std::string(c.node).empty()) {
    EXPECT_TRUE(crash->nodes.empty()) << crash->nodes[0];
  } else {
    ASSERT_EQ(crash->nodes.size(), 1u);
    EXPECT_EQ(crash->nodes[0], c.node);
  }
}

const HostCase kHostCases[] = {
    // NVIDIA/nccl-tests#166, verbatim: the peer NCCL lost, cut to its first label as NCCL cuts
    // its own host name in the prefix.
    {"NcclPeerClosed",
     "gpu004:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
     "gpu004.ds-a4-r02.abc.com<55693>",
     "nccl", "gpu004"},
    // NCCL v2.26.2+ puts "[%F %T] " before its prefix (src/debug.cc).
    {"NcclPeerClosedWithTime",
     "[2027-01-04 00:15:30] gpu-node-103:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection "
     "closed by remote peer gpu-node-117<40123>",
     "nccl", "gpu-node-117"},
    // An Xid in the kernel log as rsyslog's traditional format writes it ("%TIMESTAMP%
    // %HOSTNAME% %syslogtag%%msg%"), the driver's line as NVIDIA/gpu-operator#1146 quotes it.
    {"XidFromSyslog",
     "Jan  4 00:15:29 gpu-node-117 kernel: [6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', "
     "name=<unknown>, GPU has fallen off the bus.",
     "gpu", "gpu-node-117"},
    // The same under RFC 3339 timestamps (rsyslog's RSYSLOG_FileFormat).
    {"XidFromSyslogRfc3339",
     "2027-01-04T00:15:29.548779+00:00 gpu-node-117.cluster.local kernel: NVRM: Xid (PCI:0000:07:00): 48, "
     "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the "
     "framebuffer at partition 6, subpartition 0.",
     "ecc", "gpu-node-117"},
    // Under MIG the instance follows the bus id: "(PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u)".
    {"XidUnderMig", "NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:00): 94, pid=1234, name=python, Contained ECC error.",
     "ecc", ""},
    // Slurm up to 20.11, src/slurmd/slurmstepd/req.c: the node with the memory error.
    {"SlurmMemoryError",
     "slurmstepd: error: *** JOB 1234 ON gpu-node-117 UNCORRECTABLE MEMORY ERROR AT 2027-01-04T00:15:29 ***", "ecc",
     "gpu-node-117"},
    // The NODE FAILURE line is printed by a node that survived: it blames none.
    {"SlurmNodeFailureBlamesNone",
     "slurmstepd: error: *** JOB 1234 ON gpu-node-103 CANCELLED AT 2027-01-04T00:15:29 DUE TO NODE FAILURE, SEE "
     "SLURMCTLD LOG FOR DETAILS ***",
     "node", ""},
    // A watchdog's rank timed out waiting for another: it is the victim, not the cause.
    {"WatchdogBlamesNone",
     "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
     "600020 milliseconds before timing out.",
     "hang", ""},
};

INSTANTIATE_TEST_SUITE_P(Sources, CrashLineHosts, ::testing::ValuesIn(kHostCases),
                         [](const ::testing::TestParamInfo<HostCase>& i) { return std::string(i.param.name); });

TEST(CrashLineRanks, TheMonitoredBarrierNamesTheRanksThatDidNotArrive) {
  // PyTorch's distributed docs quote rank 0's error; wait_all_ranks lists every late rank.
  std::optional<Crash> c = ClassifyCrashLine("RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->cause, "hang");
  EXPECT_EQ(c->ranks, std::vector<int32_t>{1});
  c = ClassifyCrashLine("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ranks, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(c->nodes.empty());  // ranks, not hosts: the caller places them
}

TEST(ShortHost, FirstLabelIpWholeNoReverseDns) {
  EXPECT_EQ(ShortHost("gpu004.ds-a4-r02.abc.com"), "gpu004");
  EXPECT_EQ(ShortHost("gpu-node-117"), "gpu-node-117");
  EXPECT_EQ(ShortHost("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(ShortHost("1.0.0.127.in-addr.arpa"), "");  // torchrun's getfqdn() of an unnamed host
  EXPECT_EQ(ShortHost("bad host"), "");
  EXPECT_EQ(ShortHost(""), "");
}

}  // namespace
}  // namespace flightplan::cli
