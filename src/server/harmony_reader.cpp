#include "server/harmony_reader.h"

#include <algorithm>
#include <array>

namespace keel::server {
namespace {

constexpr std::string_view kChannel = "<|channel|>", kMessage = "<|message|>", kStart = "<|start|>",
                           kEnd = "<|end|>", kReturn = "<|return|>", kCall = "<|call|>",
                           kConstrain = "<|constrain|>";
constexpr std::array<std::string_view, 7> kMarkers = {kChannel, kMessage, kStart, kEnd, kReturn, kCall, kConstrain};

// The first marker in `s`: its position and which (npos when none).
std::pair<size_t, std::string_view> first_marker(std::string_view s) {
  size_t best = std::string_view::npos;
  std::string_view which;
  for (std::string_view m : kMarkers) {
    const size_t at = s.find(m);
    if (at < best) best = at, which = m;
  }
  return {best, which};
}

// How many trailing bytes of `s` could be the start of a marker (held back until the next push).
size_t partial_marker_tail(std::string_view s) {
  const size_t lt = s.rfind('<');
  if (lt == std::string_view::npos) return 0;
  const std::string_view tail = s.substr(lt);
  for (std::string_view m : kMarkers) {
    if (tail.size() < m.size() && m.substr(0, tail.size()) == tail) return tail.size();
  }
  return 0;
}

// The header's text without its markers.
std::string header_text(std::string_view h) {
  std::string out;
  for (;;) {
    const auto [at, m] = first_marker(h);
    if (at == std::string_view::npos) break;
    out.append(h.substr(0, at));
    h.remove_prefix(at + m.size());
  }
  out.append(h);
  return out;
}

}  // namespace

void HarmonyReader::emit(Parts& out, std::string_view text) const {
  (reasoning_ ? out.reasoning : out.content).append(text);
}

void HarmonyReader::open_body_from_header() {
  // "<|channel|>analysis", "…<|channel|>commentary to=functions.f <|constrain|>json": the
  // channel's name runs to a space or the next marker.
  const size_t at = header_.rfind(kChannel);
  std::string_view name;
  if (at != std::string::npos) {
    name = std::string_view(header_).substr(at + kChannel.size());
    name = name.substr(0, std::min(name.find(' '), name.find('<')));
  }
  reasoning_ = name == "analysis";
  header_.clear();
  state_ = State::kBody;
}

void HarmonyReader::give_up_long_header(Parts& out) {
  if (state_ != State::kHeader || header_.size() <= kMaxHeaderBytes) return;
  // Not harmony after all: what was taken for a header is content, and so is the rest.
  reasoning_ = false;
  out.content += header_text(header_);
  header_.clear();
  state_ = State::kBody;
}

HarmonyReader::Parts HarmonyReader::push(std::string_view text) {
  Parts out;
  if (!active_) {
    out.content.assign(text);
    return out;
  }
  pending_.append(text);
  std::string_view rest(pending_);
  for (;;) {
    const auto [at, marker] = first_marker(rest);
    const size_t plain = at == std::string_view::npos ? rest.size() - partial_marker_tail(rest) : at;
    if (state_ == State::kBody) {
      emit(out, rest.substr(0, plain));
    } else {
      header_.append(rest.substr(0, plain));
    }
    if (at == std::string_view::npos) {
      rest.remove_prefix(plain);
      break;
    }
    rest.remove_prefix(at + marker.size());
    if (marker == kEnd || marker == kReturn || marker == kCall) {
      state_ = State::kHeader;  // the message is over; a header may follow
      header_.clear();
    } else if (state_ == State::kBody) {
      if (marker == kStart || marker == kChannel) {  // a new header without <|end|>
        state_ = State::kHeader;
        header_.assign(marker);
      }
      // <|message|> or <|constrain|> inside a body: dropped
    } else if (marker == kMessage) {
      open_body_from_header();
    } else {
      header_.append(marker);
    }
    give_up_long_header(out);
  }
  give_up_long_header(out);
  pending_.erase(0, pending_.size() - rest.size());
  return out;
}

HarmonyReader::Parts HarmonyReader::finish() {
  Parts out;
  if (!active_) return out;
  if (state_ == State::kBody) {
    emit(out, pending_);
  } else if (first_marker(header_).first == std::string_view::npos) {
    // A reply that never wrote a marker is plain content (a model ignoring the format).
    out.content = header_ + pending_;
  }
  pending_.clear();
  header_.clear();
  state_ = State::kHeader;
  return out;
}

}  // namespace keel::server
