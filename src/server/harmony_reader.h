// HarmonyReader — splits an OpenAI harmony (gpt-oss) reply into reasoning and content as it
// streams. The engine renders the reply's control tokens as text for it
// (Request::render_special_tokens), so a reply reads
//   <|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…
// (the prompt ended with "<|start|>assistant"; <|return|> / <|call|> end the generation and
// never reach the text). The analysis channel's text is the reasoning (reasoning_content,
// as llama-server and vLLM name it); final and commentary text is the content; markers and
// message headers (role, channel, recipient, constraint) are dropped.
//
// A reply that does not follow the format (no <|message|> within kMaxHeaderBytes of header
// text) is content from there on, so nothing a model writes is lost.
//
// Contract: one reader per choice; push() returns what can be attributed so far (text that
// may be the start of a marker waits); finish() returns the rest. Concatenating every
// push() and finish() result gives the same parts however the text was split. Inactive
// (the default), push() passes everything through as content.
#pragma once

#include <string>
#include <string_view>

namespace keel::server {

class HarmonyReader {
 public:
  static constexpr size_t kMaxHeaderBytes = 256;

  explicit HarmonyReader(bool active = false) : active_(active) {}
  bool active() const { return active_; }

  struct Parts {
    std::string content, reasoning;
  };
  Parts push(std::string_view text);
  Parts finish();

 private:
  enum class State { kHeader, kBody };
  void emit(Parts& out, std::string_view text) const;
  void open_body_from_header();  // header_ holds the header; its channel picks the body's part
  void give_up_long_header(Parts& out);

  bool active_;
  State state_ = State::kHeader;
  bool reasoning_ = false;  // the open message is on the analysis channel
  std::string pending_;     // text not yet read (it may end inside a marker)
  std::string header_;      // the open header, markers included
};

}  // namespace keel::server
