#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace keel::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  // An empty stop string would match everywhere; submit() rejects them, drop defensively.
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Result StopMatcher::push(std::string_view text) {
  Result result;
  if (stopped_) return result;
  pending_.append(text);
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    // The earliest occurrence wins; at a tie, the first listed.
    const size_t at = pending_.find(stop);
    if (at < first) first = at, matched_ = stop;
  }
  if (first != std::string::npos) {
    result.emit = pending_.substr(0, first);
    result.stopped = stopped_ = true;
    pending_.clear();
    return result;
  }
  size_t keep = held_tail_length();
  result.emit = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return result;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(pending_, {});
}

// Longest suffix of pending_ that is a proper prefix of some stop string.
size_t StopMatcher::held_tail_length() const {
  size_t best = 0;
  for (const std::string& stop : stops_) {
    size_t max_len = std::min(pending_.size(), stop.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (std::string_view(pending_).substr(pending_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace keel::engine
