// JsonDepth — bracket depth over JSON text without parsing it: strings (and their escapes)
// are skipped, so a '}' inside "…" does not count. Used to bound nesting before a parser
// recurses (server) and to find where one object of a sequence ends (chat tool calls).
//
// Contract: push() takes the text byte by byte and returns the depth after that byte;
// closing brackets never take it below 0. A plain value; not thread-safe.
#pragma once

namespace keel {

class JsonDepth {
 public:
  int push(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '[' || c == '{') {
      ++depth_;
    } else if ((c == ']' || c == '}') && depth_ > 0) {
      --depth_;
    }
    return depth_;
  }
  int depth() const { return depth_; }

 private:
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

}  // namespace keel
