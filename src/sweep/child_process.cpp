#include "sweep/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace keel::sweep {
namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Reads what is available from fd into out; closes fd at EOF.
void drain(int& fd, std::string& out) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    out.append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close_fd(fd);
  }
}

[[noreturn]] void exec_child(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  ::setpgid(0, 0);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  const std::string msg = "exec " + argv[0] + ": " + std::strerror(errno) + "\n";
  (void)!::write(STDERR_FILENO, msg.data(), msg.size());
  ::_exit(127);
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(sig);
  }
}

ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty()) throw Error(ErrorCode::kInvalidArgument, "run_child: empty argv");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw Error(ErrorCode::kIo, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw Error(ErrorCode::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw Error(ErrorCode::kIo, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) exec_child(argv, out_pipe[1], err_pipe[1]);
  ::setpgid(pid, pid);  // also in the child: whichever runs first, no race on killpg
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int out_fd = out_pipe[0], err_fd = err_pipe[0];

  ChildResult r;
  const auto deadline = start + options.timeout;
  while (out_fd >= 0 || err_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const int ready = ::poll(fds, n, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < n && ready > 0; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i].fd == out_fd) {
        drain(out_fd, r.out);
      } else {
        drain(err_fd, r.err);
        if (r.err.size() > 2 * options.max_err_bytes) r.err.erase(0, r.err.size() - options.max_err_bytes);
      }
    }
  }
  close_fd(out_fd);
  close_fd(err_fd);

  // A child may close its output and still hang: reaping honours the deadline too.
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t done = ::wait4(pid, &status, r.timed_out ? 0 : WNOHANG, &usage);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done == 0 && Clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    } else if (done == 0) {
      ::usleep(10000);
    }
  }
  // Anything the child left in its group (it should have none) goes too.
  ::kill(-pid, SIGKILL);
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (r.err.size() > options.max_err_bytes) r.err.erase(0, r.err.size() - options.max_err_bytes);
  return r;
}

}  // namespace keel::sweep
