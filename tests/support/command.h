// Runs a shell command for tests of the `keel` binary, capturing exit code and output.
#pragma once

#include <string>

namespace keel::test {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that killed it, if any
  std::string out;
  std::string err;
};

// `command` goes through /bin/sh; stdout and stderr are captured to temporary files.
CommandResult run_command(const std::string& command);

}  // namespace keel::test
