// Fault injection — named points inside the engine step (and, where their owners call
// fault_point(), inside forward and attention) that throw keel::Error on demand, so tests
// prove that a failure anywhere in a step fails only the requests involved.
//
// Contract:
//  - Off by default: fault_point() is then one relaxed atomic load.
//  - Configured from the environment (KEEL_FAULT="step:0.01,seed=1": every point fires
//    with probability 0.01; "attention:0.05" fires only at points whose name starts with
//    "attention") or from a test via fault_configure(). Draws come from one seeded
//    splitmix64 stream, so a single-threaded run is reproducible.
//  - Thread-safe: points may be hit from kernel worker threads.
//  - A fired point throws keel::Error(kInternal, "injected fault at <name>").
#pragma once

#include <cstdint>
#include <string>

namespace keel {

struct FaultConfig {
  std::string site = "step";  // "step" = every point, else a prefix of point names
  double probability = 0.0;   // per call of a matching point; 0 = off
  uint64_t seed = 1;
};

// Parses "site:p[,seed=N]". Throws keel::Error(kInvalidArgument) naming the text.
FaultConfig parse_fault_config(const std::string& text);
void fault_configure(const FaultConfig& config);
// Reads KEEL_FAULT if set (a no-op otherwise).
void fault_configure_from_env();
void fault_disable();
int64_t faults_injected();  // total fired since start

void fault_point(const char* name);

}  // namespace keel
