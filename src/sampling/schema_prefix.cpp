#include "sampling/schema_prefix.h"

#include <algorithm>

#include "core/error.h"

namespace keel::sampling {
namespace {

// Object stages: after '{' (a key or '}'), inside a key, after a key (':'), after a value
// (',' or '}'), after ',' (a key).
constexpr uint8_t kObjOpen = 0, kObjKey = 1, kObjColon = 2, kObjAfterValue = 3, kObjComma = 4;
// Array stages: after '[' (an item or ']'), after an item (',' or ']'), after ',' (an item).
constexpr uint8_t kArrOpen = 0, kArrAfterItem = 1, kArrComma = 2;

bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_number_char(uint8_t c) {
  return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

}  // namespace

// A schema number at its length bound: no more bytes.
bool SchemaPrefix::number_full(const Frame& f) {
  return f.number && f.index >= (f.integer ? kMaxIntegerBytes : kMaxNumberBytes);
}

namespace {

// Whether a required property comes in [from, size).
bool required_from(const SchemaNode& n, int64_t from) {
  for (size_t j = static_cast<size_t>(std::max<int64_t>(from, 0)); j < n.required.size(); ++j) {
    if (n.required[j]) return true;
  }
  return false;
}

}  // namespace

SchemaPrefix::SchemaPrefix(std::shared_ptr<const JsonSchema> schema) : schema_(std::move(schema)) {
  if (!schema_) throw Error(ErrorCode::kInvalidArgument, "schema prefix: no schema");
  Stack s;
  Frame root;
  root.kind = Frame::Kind::kValue;
  root.node = schema_->root();
  s.frames.push_back(std::move(root));
  stacks_.push_back(std::move(s));
}

bool SchemaPrefix::whitespace(Stack* s, uint8_t c) {
  if (c == '\n') {
    if (s->run_lf) return false;
    s->run_lf = 1;
  } else if (c == '\r') {
    if (s->run_lf || s->run_cr) return false;
    s->run_cr = 1;
  } else {
    if (s->run_cr && !s->run_lf) return false;  // \r only before \n
    if (++s->run_indent > JsonPrefix::kMaxIndent) return false;
  }
  return true;
}

bool SchemaPrefix::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!feed_byte(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool SchemaPrefix::feed_byte(uint8_t c) {
  std::vector<Stack> next;
  for (Stack& s : stacks_) step(std::move(s), c, &next);
  if (next.size() > kMaxStates) next.resize(kMaxStates);
  stacks_ = std::move(next);
  return !stacks_.empty();
}

bool SchemaPrefix::complete() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.frames.empty(); });
}

bool SchemaPrefix::in_plain_string() const {
  if (stacks_.empty()) return false;
  return std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) {
    return !s.frames.empty() && s.frames.back().kind == Frame::Kind::kLeaf && s.frames.back().leaf.in_plain_string();
  });
}

void SchemaPrefix::value_done(Stack s, std::vector<Stack>* out, const uint8_t* redo) const {
  s.frames.pop_back();  // the finished value; its container's stage was set when it began
  if (redo) {
    step(std::move(s), *redo, out);
  } else {
    out->push_back(std::move(s));
  }
}

void SchemaPrefix::begin_value(Stack s, int32_t node, uint8_t c, std::vector<Stack>* out, int64_t* budget) const {
  if (s.frames.size() >= kMaxDepth || --*budget < 0) return;
  const SchemaNode& n = schema_->node(node);
  Frame f;
  f.node = node;
  switch (n.kind) {
    case SchemaNode::Kind::kAnyOf:
      for (int32_t alt : n.alternatives) begin_value(s, alt, c, out, budget);
      return;
    case SchemaNode::Kind::kObject:
      if (c != '{') return;
      f.kind = Frame::Kind::kObject;
      f.stage = kObjOpen;
      break;
    case SchemaNode::Kind::kArray:
      if (c != '[') return;
      f.kind = Frame::Kind::kArray;
      f.stage = kArrOpen;
      break;
    case SchemaNode::Kind::kString:
      if (c != '"') return;
      f.kind = Frame::Kind::kLeaf;
      f.string = true;
      if (!f.leaf.feed_byte(c)) return;
      break;
    case SchemaNode::Kind::kNumber:
    case SchemaNode::Kind::kInteger:
      if (c != '-' && !(c >= '0' && c <= '9')) return;
      f.kind = Frame::Kind::kLeaf;
      f.integer = n.kind == SchemaNode::Kind::kInteger;
      f.number = true;
      f.index = 1;
      if (!f.leaf.feed_byte(c)) return;
      break;
    case SchemaNode::Kind::kAny:
    case SchemaNode::Kind::kAnyObject:
      f.kind = Frame::Kind::kLeaf;
      f.leaf = JsonPrefix(JsonPrefix::Options{n.kind == SchemaNode::Kind::kAnyObject});
      if (!f.leaf.feed_byte(c)) return;
      if (f.leaf.complete()) return value_done(std::move(s), out, nullptr);  // never after one byte; kept for safety
      break;
    case SchemaNode::Kind::kLiterals:
      // Typed from its first byte by the same code as every later one.
      f.kind = Frame::Kind::kLiterals;
      s.frames.push_back(std::move(f));
      return step(std::move(s), c, out);
  }
  s.frames.push_back(std::move(f));
  out->push_back(std::move(s));
}

void SchemaPrefix::step(Stack s, uint8_t c, std::vector<Stack>* out) const {
  const bool ws = is_ws(c);
  if (!ws) s.run_lf = s.run_cr = s.run_indent = 0;
  if (s.frames.empty()) {  // after the root value: only whitespace
    if (ws && whitespace(&s, c)) out->push_back(std::move(s));
    return;
  }
  Frame& f = s.frames.back();
  const SchemaNode& n = schema_->node(f.node);
  // Structural positions take a bounded whitespace run.
  const bool structural = f.kind == Frame::Kind::kValue || (f.kind == Frame::Kind::kObject && f.stage != kObjKey) ||
                          f.kind == Frame::Kind::kArray;
  if (structural && ws) {
    if (whitespace(&s, c)) out->push_back(std::move(s));
    return;
  }
  switch (f.kind) {
    case Frame::Kind::kValue: {
      const int32_t node = f.node;
      s.frames.pop_back();
      int64_t budget = kMaxVisits;
      return begin_value(std::move(s), node, c, out, &budget);
    }
    case Frame::Kind::kLeaf: {
      JsonPrefix could_end = f.leaf;
      if (could_end.feed_byte(' ') && could_end.complete()) {
        // A number that may end here: c continues it, or follows it.
        JsonPrefix q = f.leaf;
        const bool fraction = c == '.' || c == 'e' || c == 'E';
        if (is_number_char(c) && !(f.integer && fraction) && !number_full(f) && q.feed_byte(c)) {
          f.leaf = q;
          ++f.index;
          out->push_back(std::move(s));
          return;
        }
        return value_done(std::move(s), out, &c);
      }
      // (A number that cannot end yet — after '-', '.', 'e' — may pass the bound by the
      // digit it needs: refusing it would leave nothing to write.)
      if (f.integer && (c == '.' || c == 'e' || c == 'E')) return;
      JsonPrefix q = f.leaf;
      if (!q.feed_byte(c)) return;
      if (f.number) ++f.index;
      if (q.complete()) return value_done(std::move(s), out, nullptr);
      f.leaf = q;
      out->push_back(std::move(s));
      return;
    }
    case Frame::Kind::kLiterals: {
      const std::string next = f.typed + static_cast<char>(c);
      const bool extends =
          std::any_of(n.literals.begin(), n.literals.end(), [&](const std::string& l) { return l.starts_with(next); });
      if (!extends) {
        // The literal typed so far may have been whole (1 of [1, 10]): c follows it.
        if (std::find(n.literals.begin(), n.literals.end(), f.typed) != n.literals.end()) {
          return value_done(std::move(s), out, &c);
        }
        return;
      }
      f.typed = next;
      const bool exact = std::find(n.literals.begin(), n.literals.end(), f.typed) != n.literals.end();
      const bool longer = std::any_of(n.literals.begin(), n.literals.end(), [&](const std::string& l) {
        return l.size() > f.typed.size() && l.starts_with(f.typed);
      });
      if (exact && !longer) return value_done(std::move(s), out, nullptr);
      out->push_back(std::move(s));
      return;
    }
    case Frame::Kind::kObject:
      switch (f.stage) {
        case kObjOpen:
        case kObjComma:
          if (c == '}' && f.stage == kObjOpen && !required_from(n, f.index)) return value_done(std::move(s), out, nullptr);
          if (c != '"') return;
          f.typed = "\"";
          f.stage = kObjKey;
          out->push_back(std::move(s));
          return;
        case kObjKey: {
          f.typed.push_back(static_cast<char>(c));
          // Keys from the next property up to the next required one (optional ones may be skipped).
          bool prefix = false;
          for (size_t j = static_cast<size_t>(f.index); j < n.keys.size(); ++j) {
            if (n.keys[j] == f.typed) {
              f.index = static_cast<int64_t>(j);
              f.stage = kObjColon;
              out->push_back(std::move(s));
              return;
            }
            prefix = prefix || n.keys[j].starts_with(f.typed);
            if (n.required[j]) break;
          }
          if (prefix) out->push_back(std::move(s));
          return;
        }
        case kObjColon: {
          if (c != ':') return;
          f.stage = kObjAfterValue;
          Frame value;
          value.kind = Frame::Kind::kValue;
          value.node = n.values[static_cast<size_t>(f.index)];
          s.frames.push_back(std::move(value));
          out->push_back(std::move(s));
          return;
        }
        case kObjAfterValue:
          if (c == '}' && !required_from(n, f.index + 1)) return value_done(std::move(s), out, nullptr);
          if (c != ',' || f.index + 1 >= static_cast<int64_t>(n.keys.size())) return;
          f.index += 1;
          f.stage = kObjComma;
          out->push_back(std::move(s));
          return;
      }
      return;
    case Frame::Kind::kArray:
      if (f.stage == kArrAfterItem) {
        if (c == ']' && f.index >= n.min_items) return value_done(std::move(s), out, nullptr);
        if (c != ',' || (n.max_items >= 0 && f.index >= n.max_items)) return;
        f.stage = kArrComma;
        out->push_back(std::move(s));
        return;
      }
      if (c == ']' && f.stage == kArrOpen && n.min_items == 0) return value_done(std::move(s), out, nullptr);
      if (n.max_items >= 0 && f.index >= n.max_items) return;
      f.index += 1;
      f.stage = kArrAfterItem;
      int64_t budget = kMaxVisits;
      return begin_value(std::move(s), n.items, c, out, &budget);
  }
}

}  // namespace keel::sampling
