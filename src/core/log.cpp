#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace keel {
namespace {

LogLevel level_from_env() {
  const char* v = std::getenv("KEEL_LOG");
  if (!v) return LogLevel::kInfo;
  if (!std::strcmp(v, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(v, "warn")) return LogLevel::kWarn;
  if (!std::strcmp(v, "error")) return LogLevel::kError;
  if (!std::strcmp(v, "off")) return LogLevel::kOff;
  return LogLevel::kInfo;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void set_log_level(LogLevel level) { level_storage().store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(level_storage().load()); }

void log_message(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < level_storage().load()) return;
  static const char* names[] = {"debug", "info", "warn", "error"};
  std::lock_guard<std::mutex> lock(log_mutex());
  std::fprintf(stderr, "keel %s: %s\n", names[static_cast<int>(level)], message.c_str());
}

}  // namespace keel
