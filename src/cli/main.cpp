// keel — the command-line entry point. Sub-commands register themselves (command.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"

namespace keel::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace keel::cli

int main(int argc, char** argv) {
  using keel::cli::command_registry;
  CLI::App app{"keel — an LLM inference server for GGUF models on the CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "keel 0.1.0");

  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, keel::cli::CommandRunner> runners;
  std::map<CLI::App*, std::string> names;
  for (auto& cmd : commands) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.description);
    try {
      runners[sub] = cmd.setup(*sub);
    } catch (const CLI::Error& e) {
      // A command with a broken option table must not take the whole binary down.
      std::fprintf(stderr, "keel: command '%s' disabled: %s\n", cmd.name.c_str(), e.what());
      app.remove_subcommand(sub);
      continue;
    }
    names[sub] = cmd.name;
  }

  // llama.cpp spells some long options with one dash (-ctk f16, -fa on, -np 4); CLI11
  // only accepts one-character names after a single dash. Commands register the long
  // form (--ctk) and a single-dash word of 2+ letters is read as that long form.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) {
    if (a.size() >= 3 && a[0] == '-' && a[1] != '-' &&
        std::all_of(a.begin() + 1, a.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
      a = "-" + a;
    }
    arg_ptrs.push_back(a.data());
  }

  try {
    app.parse(argc, arg_ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  for (CLI::App* sub : app.get_subcommands()) {
    try {
      return runners.at(sub)();
    } catch (const keel::Error& e) {
      std::fprintf(stderr, "keel %s: error: %s\n", names[sub].c_str(), e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "keel %s: error: %s\n", names[sub].c_str(), e.what());
      return 1;
    }
  }
  return 2;
}
