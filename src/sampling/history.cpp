#include "sampling/history.h"

namespace keel::sampling {

TokenHistory::TokenHistory(int32_t window) : window_(window) {}

void TokenHistory::push(int32_t token) {
  if (window_ == 0) return;
  tokens_.push_back(token);
  ++counts_[token];
  if (window_ > 0 && static_cast<int64_t>(tokens_.size()) > window_) {
    const int32_t oldest = tokens_.front();
    tokens_.pop_front();
    auto it = counts_.find(oldest);
    if (--it->second == 0) counts_.erase(it);
  }
}

void TokenHistory::clear() {
  tokens_.clear();
  counts_.clear();
}

}  // namespace keel::sampling
