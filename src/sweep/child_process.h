// ChildProcess — runs one command in its own process group with a wall-clock limit and
// captures its output, so one configuration's crash, OOM kill or hang cannot stop the
// sweep that started it.
//
// Contract:
//  - run_child() fork+execs argv[0] (a path; "/proc/self/exe" re-runs this binary) with
//    the caller's environment, stdin from /dev/null, stdout and stderr captured. The
//    child leads a new process group; past `timeout` the whole group gets SIGKILL.
//  - It returns once the child is reaped (wait4), with its peak RSS from that rusage.
//    It never throws for anything the child does; it throws keel::Error(kIo) only when
//    the pipes or the fork themselves fail.
//  - Not thread-safe with other fork()ing code in the same process (inherited fds).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace keel::sweep {

struct ChildResult {
  bool timed_out = false;
  int exit_code = -1;          // when it exited
  int signal = 0;              // when a signal ended it (SIGKILL after a timeout too)
  std::string out, err;        // captured (err keeps only its last `max_err_bytes`)
  int64_t peak_rss_bytes = 0;  // ru_maxrss of the child
  double wall_seconds = 0;
};

struct ChildOptions {
  std::chrono::milliseconds timeout{600000};
  size_t max_err_bytes = 64 * 1024;
};

ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options);

// "SIGSEGV", "SIGKILL", ... or "signal N".
std::string signal_name(int signal);

}  // namespace keel::sweep
