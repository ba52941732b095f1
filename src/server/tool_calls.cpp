#include "server/tool_calls.h"

#include <random>

#include "core/log.h"
#include "sampling/json_schema.h"
#include "server/api_error.h"

namespace keel::server {

namespace {

// The schema a forced call's arguments follow: the function's parameters, or any object
// when they use what the schema compiler cannot enforce (a call that parses beats a 400
// for a schema OpenAI would take without `strict`).
std::shared_ptr<const sampling::JsonSchema> arguments_schema(const chat::ToolSpec& tool) {
  try {
    return sampling::JsonSchema::compile(tool.parameters);
  } catch (const keel::Error& e) {
    log_warn("server: function '" + tool.name + "': arguments constrained to any JSON object: " + e.what());
    return nullptr;
  }
}

}  // namespace

ToolCallPlan plan_tool_calls(CompletionRequest* request, chat::ToolSyntax syntax) {
  ToolCallPlan plan;
  if (request->endpoint != Endpoint::kChat || request->tools.empty() || request->tool_choice == ToolChoice::kNone) {
    return plan;
  }
  if (syntax == chat::ToolSyntax::kNone) {
    throw bad_request("tools", "'tools' are not supported with this model's chat format (harmony)", "unsupported");
  }
  plan.active = true;
  plan.syntax = syntax;
  plan.parallel = request->parallel_tool_calls;
  if (request->tool_choice == ToolChoice::kAuto) return plan;

  // One call is required: its opening goes into the prompt, the name is constrained to
  // the allowed ones and the arguments to one JSON object; the closing is implied.
  std::vector<const chat::ToolSpec*> allowed;
  for (const chat::ToolSpec& t : request->tools) {
    if (request->tool_choice != ToolChoice::kFunction || t.name == request->tool_choice_name) allowed.push_back(&t);
  }
  plan.forced = true;
  plan.forced_prefix = chat::call_opening(syntax);
  auto& constraint = request->generation.json_constraint;
  if (allowed.size() == 1) {
    plan.forced_prefix += allowed.front()->name + chat::call_name_end(syntax);
    plan.forced_name = allowed.front()->name;
    constraint.schema = arguments_schema(*allowed.front());
  } else {
    for (const chat::ToolSpec* t : allowed) {
      plan.json_preludes.push_back(t->name + chat::call_name_end(syntax));
      constraint.prelude_schemas.push_back(arguments_schema(*t));
    }
  }
  request->assistant_prefix = plan.forced_prefix;
  request->generation.json_object = true;
  constraint.preludes = plan.json_preludes;
  return plan;
}

ToolCallReader::ToolCallReader(ToolCallPlan plan) : plan_(std::move(plan)) {}

std::string ToolCallReader::push(std::string_view text) {
  if (!plan_.active) return std::string(text);
  generated_ += text;
  if (plan_.forced) return "";
  const size_t safe = chat::content_prefix_length(plan_.syntax, generated_);
  if (safe <= emitted_) return "";
  std::string out = generated_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

bool ToolCallReader::locate_forced_call() {
  if (args_from_ != std::string::npos) return true;
  size_t name_end = 0;
  if (!plan_.forced_name.empty()) {
    name_ = plan_.forced_name;
  } else {
    const size_t suffix = chat::call_name_end(plan_.syntax).size();
    for (const std::string& prelude : plan_.json_preludes) {
      if (generated_.starts_with(prelude)) {
        name_ = prelude.substr(0, prelude.size() - suffix);
        name_end = prelude.size();
        break;
      }
    }
    if (name_.empty()) return false;
  }
  const size_t brace = generated_.find('{', name_end);  // JSON mode: only whitespace before it
  if (brace == std::string::npos) return false;
  args_from_ = brace;
  return true;
}

std::optional<CallDelta> ToolCallReader::take_call_delta() {
  if (!plan_.active || !plan_.forced || !locate_forced_call()) return std::nullopt;
  CallDelta d;
  if (!call_started_) {
    call_started_ = true;
    call_id_ = make_call_id();
    d.first = true;
    d.id = call_id_;
    d.name = name_;
    emitted_ = args_from_;
  }
  d.arguments = generated_.substr(emitted_);
  emitted_ = generated_.size();
  if (!d.first && d.arguments.empty()) return std::nullopt;
  return d;
}

chat::ParsedReply ToolCallReader::finish() {
  if (!plan_.active) return {};
  std::string text = generated_;
  if (plan_.forced) text = plan_.forced_prefix + text + chat::call_closing(plan_.syntax);
  chat::ParsedReply reply = chat::parse_tool_calls(plan_.syntax, text);
  if (plan_.forced) {
    // The arguments as written (what a stream sent, even when max_tokens cut them short:
    // OpenAI's clients then see finish_reason "length"), the id the stream gave.
    if (locate_forced_call()) {
      reply.calls = {{call_started_ ? call_id_ : make_call_id(), name_, generated_.substr(args_from_)}};
      reply.content.clear();
    } else {
      reply = {generated_, {}};  // cut before the arguments began
    }
    emitted_ = generated_.size();
    return reply;
  }
  if (reply.calls.empty()) {
    // No call after all (or a cut-off one): everything not yet streamed is content; a
    // forced call that did not complete (length) shows as the model wrote it.
    reply.content = generated_.substr(emitted_);
  } else {
    if (!plan_.parallel) reply.calls.resize(1);
    for (chat::ToolCall& c : reply.calls) c.id = make_call_id();
    // Content streamed before the call is not repeated.
    reply.content = reply.content.size() > emitted_ && reply.content.starts_with(generated_.substr(0, emitted_))
                        ? reply.content.substr(emitted_)
                        : (emitted_ == 0 ? reply.content : "");
  }
  emitted_ = generated_.size();
  return reply;
}

std::string make_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += alnum[rng() % 62];
  return id;
}

}  // namespace keel::server
