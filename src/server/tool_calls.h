// Function calling on the HTTP side: what a chat request's `tools` / `tool_choice` ask of
// the prompt and of the sampler, and reading the calls back out of one choice's output.
//
// Contract:
//  - plan_tool_calls() decides, for a parsed request and the model's call syntax, the text
//    appended after the generation prompt and the JSON constraint: with tool_choice
//    "required" or a named function the reply is forced to be one call — the call's
//    opening is part of the prompt, the name is one of the allowed ones (a prelude of the
//    JSON constraint, or in the prompt when only one is allowed) and the arguments one JSON
//    object. "auto" leaves the model free and parses what it writes; "none" (or no tools)
//    turns all of it off. Throws ApiError 400 when tools are asked of a format without a
//    call syntax (harmony).
//  - A ToolCallReader follows one choice: push() returns the content that can be streamed
//    now (text that might open a call is held back until it is clear), finish() the whole
//    reply split into content and calls, each call with a fresh id "call_…" (only the
//    first when the request set parallel_tool_calls false). An inactive
//    reader passes everything through as content.
//  - Not thread-safe: one reader per choice, on its response's thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tools.h"
#include "server/openai_request.h"

namespace keel::server {

struct ToolCallPlan {
  bool active = false;           // the reply is parsed for calls
  chat::ToolSyntax syntax = chat::ToolSyntax::kNone;
  std::string forced_prefix;     // appended to the prompt; the reply continues it
  bool forced = false;           // one call is required (json constraint set on the request)
  bool parallel = true;          // false (parallel_tool_calls): only the first call counts
  std::vector<std::string> json_preludes;  // the allowed names + call_name_end(syntax), when several
  std::string forced_name;                 // the one allowed function (its name is in the prompt)
};

// A streamed piece of a forced call: the first carries id and name, every one the
// arguments text written since the last.
struct CallDelta {
  bool first = false;
  std::string id;
  std::string name;
  std::string arguments;
};

// Fills the plan and sets request->generation's JSON constraint and the prompt suffix.
ToolCallPlan plan_tool_calls(CompletionRequest* request, chat::ToolSyntax syntax);

class ToolCallReader {
 public:
  explicit ToolCallReader(ToolCallPlan plan = {});

  bool active() const { return plan_.active; }
  std::string push(std::string_view text);
  // A forced call streams as it is written: once its function is known, each call
  // returns the new part (nothing when there is none). Auto-mode calls come from finish().
  std::optional<CallDelta> take_call_delta();
  // The reply so far as content + calls; in a stream, content already returned by push()
  // is not repeated in `content`. A forced call's arguments are the text the model wrote
  // (from its '{'), so whole and streamed responses carry the same string.
  chat::ParsedReply finish();
  // The call finish() returns went out already through take_call_delta().
  bool call_streamed() const { return call_started_; }

 private:
  // Forced calls: the function and where its arguments start in generated_, once known.
  bool locate_forced_call();

  ToolCallPlan plan_;
  std::string generated_;
  size_t emitted_ = 0;
  std::string name_;
  size_t args_from_ = std::string::npos;
  bool call_started_ = false;
  std::string call_id_;
};

// "call_" and 24 random alphanumerics.
std::string make_call_id();

}  // namespace keel::server
