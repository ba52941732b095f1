#include "sampling/json_constraint.h"

#include <array>
#include <limits>
#include <string>

#include "core/error.h"

namespace keel::sampling {

TokenBytes::TokenBytes(std::vector<std::string> b, std::vector<uint8_t> e) : bytes(std::move(b)), end(std::move(e)) {
  if (bytes.size() != end.size()) {
    throw Error(ErrorCode::kInvalidArgument, "json constraint: " + std::to_string(bytes.size()) + " token pieces but " +
                                                 std::to_string(end.size()) + " end flags");
  }
  // Without a '"' a token cannot leave the string, so what it does there does not depend on
  // whose string it is: probe it once, here, from any plain string state.
  JsonPrefix in_string;
  in_string.feed("{\"");
  string_safe.resize(bytes.size());
  for (size_t t = 0; t < bytes.size(); ++t) {
    JsonPrefix p = in_string;
    string_safe[t] = !end[t] && !bytes[t].empty() && bytes[t].find('"') == std::string::npos && p.feed(bytes[t]) &&
                     p.in_plain_string();
  }
}

ObjectChecker::ObjectChecker(std::shared_ptr<const JsonSchema> schema) {
  if (schema) state_.emplace<SchemaPrefix>(std::move(schema));
}

bool ObjectChecker::feed(std::string_view bytes) {
  return std::visit([&](auto& s) { return s.feed(bytes); }, state_);
}
bool ObjectChecker::feed_byte(uint8_t c) {
  return std::visit([&](auto& s) { return s.feed_byte(c); }, state_);
}
bool ObjectChecker::complete() const {
  return std::visit([](const auto& s) { return s.complete(); }, state_);
}
bool ObjectChecker::in_plain_string() const {
  return std::visit([](const auto& s) { return s.in_plain_string(); }, state_);
}

JsonConstraint::JsonConstraint(std::shared_ptr<const TokenBytes> vocab, JsonConstraintSpec spec)
    : vocab_(std::move(vocab)), spec_(std::move(spec)), in_prelude_(!spec_.preludes.empty()), state_(spec_.schema) {
  if (!vocab_) throw Error(ErrorCode::kInvalidArgument, "json constraint: no token table");
  const auto& preludes = spec_.preludes;
  if (!spec_.prelude_schemas.empty() && spec_.prelude_schemas.size() != preludes.size()) {
    throw Error(ErrorCode::kInvalidArgument, "json constraint: " + std::to_string(spec_.prelude_schemas.size()) +
                                                 " prelude schemas for " + std::to_string(preludes.size()) + " preludes");
  }
  for (size_t i = 0; i < preludes.size(); ++i) {
    if (preludes[i].empty()) throw Error(ErrorCode::kInvalidArgument, "json constraint: empty prelude");
    for (size_t j = 0; j < preludes.size(); ++j) {
      if (i != j && preludes[j].starts_with(preludes[i])) {
        throw Error(ErrorCode::kInvalidArgument, "json constraint: prelude '" + preludes[i] +
                                                     "' is a prefix of '" + preludes[j] + "'");
      }
    }
  }
}

ObjectChecker JsonConstraint::checker_after(const std::string& prelude) const {
  for (size_t i = 0; i < spec_.prelude_schemas.size(); ++i) {
    if (spec_.preludes[i] == prelude) return ObjectChecker(spec_.prelude_schemas[i] ? spec_.prelude_schemas[i] : spec_.schema);
  }
  return state_;
}

bool JsonConstraint::feed_prelude(std::string* typed, std::string_view bytes, size_t* rest) const {
  for (size_t i = 0; i < bytes.size(); ++i) {
    typed->push_back(bytes[i]);
    bool prefix = false;
    for (const std::string& p : spec_.preludes) {
      if (!p.starts_with(*typed)) continue;
      if (p.size() == typed->size()) {
        *rest = i + 1;
        return true;
      }
      prefix = true;
    }
    if (!prefix) return false;
  }
  *rest = std::string_view::npos;
  return true;
}

void JsonConstraint::mask_prelude(std::span<float> logits) const {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (size_t t = 0; t < logits.size(); ++t) {
    if (logits[t] == kMasked) continue;
    const std::string& bytes = vocab_->bytes[t];
    bool allowed = false;
    if (!vocab_->end[t] && !bytes.empty()) {
      std::string typed = typed_;
      size_t rest = 0;
      allowed = feed_prelude(&typed, bytes, &rest);
      if (allowed && rest != std::string_view::npos && rest < bytes.size()) {
        ObjectChecker probe = checker_after(typed);
        allowed = probe.feed(std::string_view(bytes).substr(rest));
      }
    }
    if (!allowed) logits[t] = kMasked;
  }
}

void JsonConstraint::mask(std::span<float> logits) const {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  if (logits.size() != vocab_->bytes.size()) {
    throw Error(ErrorCode::kInvalidArgument, "json constraint: logits row of " + std::to_string(logits.size()) +
                                                 " for a vocabulary of " + std::to_string(vocab_->bytes.size()));
  }
  if (in_prelude_) return mask_prelude(logits);
  const bool done = state_.complete(), in_string = state_.in_plain_string();
  // Which bytes may come next, and after a space (most word pieces start with one): most
  // tokens fail on their first or second byte, and those need no probe.
  std::array<bool, 256> first_ok, after_space_ok;
  ObjectChecker after_space = state_;
  const bool space_ok = after_space.feed_byte(' ');
  for (int b = 0; b < 256; ++b) {
    ObjectChecker probe = state_;
    first_ok[static_cast<size_t>(b)] = probe.feed_byte(static_cast<uint8_t>(b));
    probe = after_space;
    after_space_ok[static_cast<size_t>(b)] = space_ok && probe.feed_byte(static_cast<uint8_t>(b));
  }
  const auto cannot_start = [&](const std::string& s) {
    const auto b0 = static_cast<uint8_t>(s[0]);
    return !first_ok[b0] || (b0 == ' ' && s.size() > 1 && !after_space_ok[static_cast<uint8_t>(s[1])]);
  };
  for (size_t t = 0; t < logits.size(); ++t) {
    if (logits[t] == kMasked) continue;
    bool allowed;
    if (in_string && vocab_->string_safe[t]) {
      allowed = true;
    } else if (vocab_->end[t]) {
      allowed = done;
    } else if (done || vocab_->bytes[t].empty() || cannot_start(vocab_->bytes[t])) {
      allowed = false;
    } else {
      ObjectChecker probe = state_;
      allowed = probe.feed(vocab_->bytes[t]);
    }
    if (!allowed) logits[t] = kMasked;
  }
}

void JsonConstraint::accept(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab_->bytes.size()) {
    throw Error(ErrorCode::kInvalidArgument, "json constraint: token " + std::to_string(token) + " outside the vocabulary");
  }
  if (vocab_->end[static_cast<size_t>(token)]) return;
  // A token mask() did not allow (ignore_eos, a caller's own pick) leaves the text invalid;
  // nothing can repair it, and mask() then allows only what the broken state takes.
  std::string_view bytes = vocab_->bytes[static_cast<size_t>(token)];
  if (in_prelude_) {
    size_t rest = 0;
    if (!feed_prelude(&typed_, bytes, &rest)) {
      // Off every prelude (a token mask() did not allow): nothing continues it.
      in_prelude_ = false;
      state_ = ObjectChecker();
      state_.feed("}");
      return;
    }
    if (rest == std::string_view::npos) return;
    in_prelude_ = false;
    state_ = checker_after(typed_);
    bytes = bytes.substr(rest);
  }
  state_.feed(bytes);
}

}  // namespace keel::sampling
