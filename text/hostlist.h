// Slurm's hostlist syntax, the way its commands print a set of nodes: "gpu-node-[001-004,009]"
// is gpu-node-001 to -004 and gpu-node-009. Expanded as Slurm 22.05 expands it
// (src/common/hostlist.c, hostlist_create; what `scontrol show hostnames` prints):
//   - hosts are separated by commas or whitespace, except for commas inside brackets;
//   - a bracket holds numbers and ranges "lo-hi", separated by commas; a range keeps the
//     width of its first number when that number is zero-padded ("08-11": 08, 09, 10, 11),
//     else none ("9-11": 9, 10, 11);
//   - several brackets in one host multiply: "a[1-2]b[3-4]" is a1b3 a1b4 a2b3 a2b4;
//   - nothing may follow the last bracket ("node[1-3]ib" is refused);
//   - order and repeats are kept as written.
// A launch's nodes are in rank order, which for Slurm is this order (SLURM_JOB_NODELIST).
//
// Pure functions, no I/O; safe from any thread.
#ifndef FLIGHTPLAN_TEXT_HOSTLIST_H_
#define FLIGHTPLAN_TEXT_HOSTLIST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace flightplan::text {

// At most this many hosts from one expression: a typo such as "n[1-100000000]" is an
// error, not a gigabyte of names. The largest Slurm clusters have tens of thousands.
inline constexpr size_t kMaxHostlistHosts = 1 << 20;

// The hosts `expression` names, in order. An empty or blank expression is no hosts. A
// malformed one is INVALID_ARGUMENT naming the expression and what is wrong with it.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExpandHostlist(absl::string_view expression);

// The hosts as `--exclude=` takes them: "a,b,c" (Slurm's -x/--exclude accepts a plain list).
[[nodiscard]] std::string JoinHostlist(const std::vector<std::string>& hosts);

}  // namespace flightplan::text

#endif  // FLIGHTPLAN_TEXT_HOSTLIST_H_
