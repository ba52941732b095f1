// StopMatcher — finds stop strings in a response's text as it streams, across token
// boundaries, and never lets any part of a stop string out.
//
// Contract:
//  - push() takes the next piece of decoded text (valid UTF-8) and returns what may be
//    emitted now: everything except a tail that could still be the start of a stop string
//    (held back until the next piece decides). When a stop string completes, `stopped` is
//    set and `emit` is the text before its first occurrence; the matcher then stays
//    stopped and returns nothing more.
//  - flush() returns the held-back tail at the end of a response that did not stop.
//  - matched() is the stop string that stopped it (the earliest occurrence; at a tie, the
//    first listed); empty while not stopped.
//  - Cuts fall on UTF-8 character boundaries when the stop strings are valid UTF-8 (a
//    held tail always begins where a stop string begins).
//  - Not thread-safe; one per response.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keel::engine {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;
    bool stopped = false;
  };
  Result push(std::string_view text);
  std::string flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }
  size_t held_bytes() const { return pending_.size(); }

 private:
  size_t held_tail_length() const;

  std::vector<std::string> stops_;
  std::string pending_;  // text not yet emitted: shorter than the longest stop string
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace keel::engine
