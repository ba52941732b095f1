// Sub-command registry for the `keel` binary. Each command lives in its own file and
// registers itself with a static CommandRegistrar:
//
//   static keel::cli::CommandRegistrar reg("inspect", "Print a GGUF file's contents",
//       [](CLI::App& app) { auto opts = std::make_shared<Opts>(); app.add_option(...);
//                           return [opts] { return run_inspect(*opts); }; });
//
// setup() adds the command's options to its CLI::App and returns the function to run
// after parsing; that function returns the process exit code. A keel::Error escaping it
// prints "keel <cmd>: error: <message>" and exits 1; bad flags exit 2.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace keel::cli {

using CommandRunner = std::function<int()>;
using CommandSetup = std::function<CommandRunner(CLI::App&)>;

struct Command {
  std::string name;
  std::string description;
  CommandSetup setup;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string description, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace keel::cli
