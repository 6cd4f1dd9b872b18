// Slurm's hostlist expressions (text/hostlist), expanded as Slurm 22.05 expands them: each
// expression is also given to Slurm's own `scontrol show hostnames` (Debian's slurm-client,
// which deploy/install-deps.sh installs; it needs only a slurm.conf to read, no controller),
// and the two lists must be equal, host by host. What Slurm refuses is refused too.
#include "text/hostlist.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace flightplan::text {
namespace {

// `scontrol show hostnames EXPR`, one host a line; ok false when scontrol refuses it.
struct Scontrol {
  bool ok = false;
  std::vector<std::string> hosts;
};

Scontrol AskSlurm(const std::string& expression) {
  // A file of this process's own: ctest runs each test as a process, two at a time, and a
  // shared path was truncated by one while the other's scontrol read it ("is empty").
  struct OwnConf {
    std::string path = ::testing::TempDir() + "/hostlist_test_slurm." + std::to_string(getpid()) + ".conf";
    OwnConf() {
      std::ofstream(path) << "ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
                             "PartitionName=p Nodes=localhost\n";
    }
    ~OwnConf() { std::remove(path.c_str()); }
  };
  static const OwnConf own;
  const std::string& conf = own.path;
  const std::string command = "SLURM_CONF='" + conf + "' scontrol show hostnames '" + expression + "' 2>&1";
  Scontrol out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  // scontrol 22.05 exits 0 even then: a refusal is its "Invalid hostlist" line.
  out.ok = pclose(pipe) == 0 && text.find("Invalid hostlist") == std::string::npos &&
           text.find("error:") == std::string::npos;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) out.hosts.emplace_back(line);
  return out;
}

bool HaveScontrol() { return std::system("command -v scontrol > /dev/null 2>&1") == 0; }

TEST(Hostlist, ExpandsAsSlurmDoes) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"gpu-node-[001-004,009]", {"gpu-node-001", "gpu-node-002", "gpu-node-003", "gpu-node-004", "gpu-node-009"}},
      {"a[1-2]b[3-4]", {"a1b3", "a1b4", "a2b3", "a2b4"}},
      {"n1,n[3-4] x[08-11]", {"n1", "n3", "n4", "x08", "x09", "x10", "x11"}},
      {"rack[1-2]-n[01-02]", {"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
      {"a[9-11]", {"a9", "a10", "a11"}},
      {"b[1-3],a", {"b1", "b2", "b3", "a"}},
      {"x[1-2,1]", {"x1", "x2", "x1"}},
      {"node7", {"node7"}},
      {"h[098-101]", {"h098", "h099", "h100", "h101"}},
  };
  const bool slurm = HaveScontrol();
  EXPECT_TRUE(slurm) << "scontrol (slurm-client) is missing: deploy/install-deps.sh installs it";
  for (const auto& [expression, want] : cases) {
    absl::StatusOr<std::vector<std::string>> got = ExpandHostlist(expression);
    ASSERT_TRUE(got.ok()) << expression << ": " << got.status();
    EXPECT_EQ(*got, want) << expression;
    if (slurm) {
      const Scontrol s = AskSlurm(expression);
      EXPECT_TRUE(s.ok) << expression;
      EXPECT_EQ(*got, s.hosts) << expression << " (scontrol show hostnames)";
    }
  }
  EXPECT_TRUE(ExpandHostlist("").value().empty());
  EXPECT_TRUE(ExpandHostlist(" , ").value().empty());
}

TEST(Hostlist, RefusesWhatSlurmRefusesAndSaysWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"node[1-3]ib", "'ib' after the last bracket"},
      {"node[3-1]", "runs backwards"},
      {"node[a-b]", "'a-b' in a bracket is not a number"},
      {"node[]", "an empty bracket"},
  };
  const bool slurm = HaveScontrol();
  // An unclosed bracket is refused here; scontrol 22.05 prints "node]" for "node[1-3" (its
  // parser reads the open bracket as part of a name), which names no node of the job.
  absl::StatusOr<std::vector<std::string>> unclosed = ExpandHostlist("node[1-3");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("unclosed '['"), std::string::npos) << unclosed.status();
  for (const auto& [expression, why] : cases) {
    absl::StatusOr<std::vector<std::string>> got = ExpandHostlist(expression);
    ASSERT_FALSE(got.ok()) << expression;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status();
    EXPECT_NE(got.status().message().find(expression), std::string::npos) << got.status();
    if (slurm) {
      EXPECT_FALSE(AskSlurm(expression).ok) << expression << ": scontrol accepts it";
    }
  }
  // A typo that would name a hundred million hosts is an error, not a gigabyte of names.
  absl::StatusOr<std::vector<std::string>> huge = ExpandHostlist("n[1-100000000]");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than"), std::string::npos) << huge.status();
  if (slurm) {
    EXPECT_FALSE(AskSlurm("n[1-100000000]").ok) << "scontrol names a hundred million hosts";
  }
}

TEST(Hostlist, JoinsForSlurmsExclude) {
  EXPECT_EQ(JoinHostlist({"gpu-node-117", "gpu-node-9"}), "gpu-node-117,gpu-node-9");
  EXPECT_EQ(JoinHostlist({}), "");
}

}  // namespace
}  // namespace flightplan::text
