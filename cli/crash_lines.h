// What killed a training job, from the lines PyTorch, NCCL, the NVIDIA driver and Slurm print
// as it dies (`flightplan tail`). Pure: one line in, a cause out.
//
// The strings are the programs' own, found in their sources or quoted from real logs in
// upstream issues (each pattern in crash_lines.cc names where):
//   PyTorch torch/csrc/distributed/c10d/{NCCLUtils.hpp,ProcessGroupNCCL.cpp} (NCCL errors,
//   the watchdog), c10/cuda/{CUDAException.cpp,CUDACachingAllocator.cpp} (CUDA errors, out of
//   memory), torch/distributed/elastic (torchrun's exit codes and signals); NVIDIA/nccl
//   src/init.cc (the error texts); the driver's Xid lines (NVIDIA's Xid catalog); Slurm
//   src/slurmd/slurmstepd/req.c, src/plugins/task/cgroup/task_cgroup_memory.c and
//   src/srun/launch.c (cancellations, OOM kills, task signals).
#ifndef FLIGHTPLAN_CLI_CRASH_LINES_H_
#define FLIGHTPLAN_CLI_CRASH_LINES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flightplan::cli {

struct Crash {
  // An interruption cause: time_limit, preemption, node, operator (the scheduler); ecc, gpu
  // (the hardware); oom, host_oom; cuda (a CUDA fault in the program); nccl; hang (a
  // collective that timed out); sigterm, sigkill (only a signal is known).
  std::string cause;
  std::string detail;  // the line's own words: the Xid, the NCCL error, the node
  // Which of several lines of one death names it: the scheduler's word over the hardware's,
  // over memory, over CUDA, over NCCL, over a timeout, over a bare signal.
  int rank = 0;
  bool planned = false;  // the job's own time limit
  // The hosts the line blames (Interruption.nodes), as short names (ShortHost): the host of
  // an Xid in the kernel log, NCCL's reporting host or the remote peer it lost, the node of
  // Slurm's memory error. Empty when the line names none, or names only a victim (Slurm's
  // NODE FAILURE line is printed by a node that survived; a watchdog's rank timed out
  // waiting for another).
  std::vector<std::string> nodes;
  // The global ranks the line names as the cause (PyTorch's monitored barrier: the ranks
  // that did not arrive), for the caller to place on the launch's nodes.
  std::vector<int32_t> ranks;
};

// A host as Slurm names nodes: its first label ("gpu004" for "gpu004.ds-a4-r02.abc.com", as
// NCCL cuts its own host name), an IPv4 address whole; "" when it is not a node name
// (docs/contract.md §4: 1-255 of [A-Za-z0-9._-]).
std::string ShortHost(const std::string& host);

// The cause a line names, if it names one. Knock-on lines (torchrun's "Sending process N
// closing signal SIGTERM", "Some NCCL operations have failed or timed out", ChildFailedError)
// name none; a wrapper (the watchdog "terminated with exception: ...") is read by what it
// wraps.
std::optional<Crash> ClassifyCrashLine(const std::string& line);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_CRASH_LINES_H_
