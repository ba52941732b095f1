// GET /health, /v1/models, /props, /metrics, /slots; POST /tokenize, /detokenize.
#include "server/json_fields.h"
#include "server/server_state.h"

namespace keel::server {
namespace {

json model_json(const ModelInfo& info) {
  return {{"id", info.id},
          {"object", "model"},
          {"created", info.created},
          {"owned_by", "keel"},
          {"meta",
           {{"n_ctx", info.n_ctx}, {"n_vocab", info.n_vocab}, {"n_parallel", info.n_parallel},
            {"chat_template", info.chat_template}}}};
}

// llama-server's GET /props, the fields its clients read (its web UI: the context size,
// the model's name from model_path, modalities). model_path is the served id, not the
// file's path on this machine.
json props_json(const ModelInfo& info) {
  return {{"default_generation_settings", {{"n_ctx", info.n_ctx}}},
          {"total_slots", info.n_parallel},
          {"model_path", info.id},
          {"chat_template", info.chat_template},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"build_info", "keel"}};
}

void tokenize_route(const HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  const json body = parse_body(req.body);
  const JsonFields f(body);
  const auto content = f.string("content");
  if (!content) throw bad_request("content", "'content' is required", "missing_required_parameter");
  const bool add_special = f.boolean("add_special").value_or(false);
  const bool parse_special = f.boolean("parse_special").value_or(true);
  const bool with_pieces = f.boolean("with_pieces").value_or(false);
  const std::vector<int32_t> tokens = service->tokenize(*content, add_special, parse_special);
  json out = json::array();
  for (int32_t t : tokens) {
    if (!with_pieces) {
      out.push_back(t);
      continue;
    }
    const std::string piece = service->token_piece(t);
    json entry = {{"id", t}};
    if (!find_invalid_utf8(piece)) {
      entry["piece"] = piece;
    } else {  // a byte-fallback fragment: give the bytes, as llama.cpp does
      json bytes = json::array();
      for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
      entry["piece"] = std::move(bytes);
    }
    out.push_back(std::move(entry));
  }
  send_json(res, {{"tokens", std::move(out)}});
}

void detokenize_route(const HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  const json body = parse_body(req.body);
  const json* tokens = JsonFields(body).get("tokens");
  if (!tokens) throw bad_request("tokens", "'tokens' is required", "missing_required_parameter");
  if (!tokens->is_array()) throw bad_request("tokens", "'tokens' must be an array of token ids", "invalid_type");
  const int32_t n_vocab = service->model_info().n_vocab;
  std::vector<int32_t> ids;
  for (const json& t : *tokens) {
    const auto id = as_integer(t);
    if (!t.is_number() || !id) throw bad_request("tokens", "'tokens' must contain integers, found " + describe(t), "invalid_type");
    if (*id < 0 || *id >= n_vocab) {
      throw bad_request("tokens", "token id " + std::to_string(*id) + " is outside the vocabulary [0, " +
                                      std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  send_json(res, {{"content", sanitize_utf8(service->detokenize(ids))}});
}

}  // namespace

void add_info_routes(HttpServer::State& s) {
  // /v1/health and the models without /v1 are llama-server's spellings (its clients use them).
  for (const char* path : {"/health", "/v1/health"}) {
    s.http.Get(path, [&s](const httplib::Request&, httplib::Response& res) {
      if (s.draining.load()) return send_error(res, unavailable("shutting_down", "the server is shutting down"));
      if (!s.service()) return send_error(res, unavailable("loading", "the model is still loading"));
      send_json(res, {{"status", "ok"}});
    });
  }
  for (const char* path : {"/v1/models", "/models"}) {
    s.http.Get(path, [&s](const httplib::Request&, httplib::Response& res) {
      guarded(res, [&] {
        send_json(res, {{"object", "list"}, {"data", json::array({model_json(require_service(s)->model_info())})}});
      });
    });
  }
  for (const char* pattern : {R"(/v1/models/(.+))", R"(/models/(.+))"}) {
    s.http.Get(pattern, [&s](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const ModelInfo info = require_service(s)->model_info();
        if (req.matches[1] != info.id) throw not_found("model '" + sanitize_utf8(req.matches[1].str()) + "' does not exist");
        send_json(res, model_json(info));
      });
    });
  }
  s.http.Get("/props", [&s](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] { send_json(res, props_json(require_service(s)->model_info())); });
  });
  s.http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] {
      MetricsInput in;
      in.server = s.counters.snapshot();
      if (auto service = s.service()) {
        in.ready = !s.draining.load();
        in.engine = service->stats();
        in.step_bounds = engine::step_seconds_bounds();
        in.n_parallel = service->model_info().n_parallel;
      }
      std::string text = render_metrics(in);
      if (s.options.extra_metrics) text += s.options.extra_metrics();
      res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
    });
  });
  s.http.Get("/slots", [&s](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] {
      json out = json::array();
      for (const SlotInfo& slot : require_service(s)->slots()) {
        out.push_back({{"id", slot.id}, {"state", slot.state}, {"n_past", slot.n_past}, {"request_id", slot.request_id}});
      }
      send_json(res, out);
    });
  });
  s.http.Post("/tokenize", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { tokenize_route(s, req, res); });
  });
  s.http.Post("/detokenize", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { detokenize_route(s, req, res); });
  });
}

}  // namespace keel::server
