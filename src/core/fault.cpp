#include "core/fault.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/error.h"

namespace keel {
namespace {

std::atomic<bool> g_enabled{false};
std::atomic<int64_t> g_fired{0};
std::mutex g_mutex;
FaultConfig g_config;   // guarded by g_mutex
uint64_t g_state = 0;   // splitmix64 state, guarded by g_mutex

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Error bad_config(const std::string& text, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument,
               "fault config '" + text + "': " + why + " (expected site:probability[,seed=N])");
}

}  // namespace

FaultConfig parse_fault_config(const std::string& text) {
  FaultConfig config;
  std::string_view rest(text);
  size_t comma = rest.find(',');
  std::string_view head = rest.substr(0, comma);
  size_t colon = head.find(':');
  if (colon == std::string_view::npos || colon == 0) throw bad_config(text, "missing site:");
  config.site = std::string(head.substr(0, colon));
  std::string prob(head.substr(colon + 1));
  char* end = nullptr;
  config.probability = std::strtod(prob.c_str(), &end);
  if (prob.empty() || *end != '\0' || !std::isfinite(config.probability) ||
      config.probability < 0 || config.probability > 1) {
    throw bad_config(text, "probability must be a number in [0, 1]");
  }
  while (comma != std::string_view::npos) {
    rest = rest.substr(comma + 1);
    comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (item.substr(0, 5) != "seed=") throw bad_config(text, "unknown item '" + std::string(item) + "'");
    std::string digits(item.substr(5));
    config.seed = std::strtoull(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0') throw bad_config(text, "seed must be an integer");
  }
  return config;
}

void fault_configure(const FaultConfig& config) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_config = config;
  g_state = config.seed;
  g_enabled.store(config.probability > 0, std::memory_order_release);
}

void fault_configure_from_env() {
  const char* env = std::getenv("KEEL_FAULT");
  if (env && *env) fault_configure(parse_fault_config(env));
}

void fault_disable() { fault_configure(FaultConfig{}); }

int64_t faults_injected() { return g_fired.load(std::memory_order_relaxed); }

void fault_point(const char* name) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  bool fire = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::string_view n(name);
    if (g_config.site != "step" && n.substr(0, g_config.site.size()) != g_config.site) return;
    // Top 53 bits → [0, 1).
    double u = static_cast<double>(splitmix64(&g_state) >> 11) * 0x1.0p-53;
    fire = u < g_config.probability;
  }
  if (!fire) return;
  g_fired.fetch_add(1, std::memory_order_relaxed);
  throw Error(ErrorCode::kInternal, std::string("injected fault at ") + name);
}

}  // namespace keel
