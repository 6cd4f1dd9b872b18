// Runs a program as a real child process and captures its exit code and output. Tests
// only; bounded by the child's own run time.
#ifndef FLIGHTPLAN_TESTS_SUBPROCESS_H_
#define FLIGHTPLAN_TESTS_SUBPROCESS_H_

#include <string>
#include <vector>

namespace flightplan::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when the child died by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] with argv, feeding `input` on standard input.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// A child running in the background, its stdout and stderr going to `log_path`.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log_path);
  ~Child();  // SIGKILLs it if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  void Signal(int sig);
  // Waits for the exit; returns the exit code, or -signal when killed by one.
  int Wait();
  // Waits up to `seconds` for `text` to appear in the log; returns the log.
  std::string WaitForLog(const std::string& text, double seconds) const;
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_path_;
};

// A fresh temporary directory, removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to path()/name and returns the full path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

}  // namespace flightplan::testing

#endif  // FLIGHTPLAN_TESTS_SUBPROCESS_H_
