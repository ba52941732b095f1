#include "support/command.h"

#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "support/paths.h"

namespace keel::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

CommandResult run_command(const std::string& command) {
  static std::atomic<int> counter{0};
  const std::string base = temp_dir() + "/cmd" + std::to_string(counter.fetch_add(1));
  const std::string out_path = base + ".out", err_path = base + ".err";
  const int status = std::system((command + " > " + out_path + " 2> " + err_path).c_str());
  CommandResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace keel::test
