// run_child: exit codes, signals, timeouts that kill the whole process group, output.
#include <gtest/gtest.h>

#include <signal.h>

#include "sweep/child_process.h"

namespace keel::sweep {
namespace {

ChildResult sh(const std::string& script, double timeout_s = 60) {
  ChildOptions o;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  return run_child({"/bin/sh", "-c", script}, o);
}

TEST(ChildProcess, CapturesOutputAndExitCode) {
  const ChildResult r = sh("echo out; echo err >&2; exit 7");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_GT(r.peak_rss_bytes, 0);
}

TEST(ChildProcess, ReportsTheSignalThatKilledIt) {
  const ChildResult r = sh("echo before; kill -SEGV $$");
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.out, "before\n");
  EXPECT_EQ(signal_name(r.signal), "SIGSEGV");
}

TEST(ChildProcess, TimeoutKillsTheProcessGroupEvenWithOutputClosed) {
  // The grandchild holds the pipes; the child closes its own and sleeps: both must go.
  const ChildResult held = sh("sleep 300 & sleep 300", 0.5);
  EXPECT_TRUE(held.timed_out);
  EXPECT_EQ(held.signal, SIGKILL);
  const ChildResult closed = sh("exec >/dev/null 2>&1; sleep 300", 0.5);
  EXPECT_TRUE(closed.timed_out);
  EXPECT_EQ(closed.signal, SIGKILL);
}

TEST(ChildProcess, MissingExecutableIsAnExitCodeNotAThrow) {
  const ChildResult r = run_child({"/nonexistent/keel"}, {});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("/nonexistent/keel"), std::string::npos);
}

}  // namespace
}  // namespace keel::sweep
