// keel tokenize — prints the token ids of a text under a model's vocabulary, and each
// token's piece unless --ids-only. --ids-only prints one id per line: the input format of
// `keel eval --tokens`.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;
  bool no_bos = false;
  bool parse_special = false;
  bool ids_only = false;
};

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, path + ": cannot open text file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A piece on one line: control characters and bytes that are not (yet) UTF-8 escaped,
// so the output stays one valid UTF-8 line per token.
std::string escape_piece(std::string_view piece) {
  std::string out;
  while (!piece.empty()) {
    const Utf8Decoded d = decode_utf8(piece);
    const auto b = static_cast<uint8_t>(piece[0]);
    if (!d.valid) {
      char buf[8];
      for (size_t i = 0; i < d.length; ++i) {
        std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<uint8_t>(piece[i]));
        out += buf;
      }
    } else if (b == '\n') {
      out += "\\n";
    } else if (b == '\t') {
      out += "\\t";
    } else if (b == '\r') {
      out += "\\r";
    } else if (b == '\\') {
      out += "\\\\";
    } else if (b < 0x20 || b == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", b);
      out += buf;
    } else {
      out.append(piece.data(), d.length);
    }
    piece.remove_prefix(d.length);
  }
  return out;
}

int run_tokenize(const TokenizeOptions& o) {
  const gguf::GgufFile file(o.model);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  const std::string text = o.file.empty() ? o.prompt : read_text_file(o.file);
  tokenizer::EncodeOptions eo;
  if (o.no_bos) eo.add_bos = false;
  eo.parse_special = o.parse_special;
  const auto ids = tok.encode(text, eo);
  std::string out;
  for (tokenizer::TokenId id : ids) {
    out += std::to_string(id);
    if (!o.ids_only) {
      out += "\t'" + escape_piece(tok.token_to_piece(id, /*render_special=*/true)) + "'";
    }
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fprintf(stderr, "keel tokenize: %zu tokens\n", ids.size());
  return 0;
}

CommandRegistrar reg("tokenize", "Print the token ids (and pieces) of a text", [](CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  app.add_option("-m,--model", o->model, "GGUF model or vocabulary")->required();
  auto* p = app.add_option("-p,--prompt", o->prompt, "text to tokenize");
  auto* f = app.add_option("-f,--file", o->file, "file holding the text");
  p->excludes(f);
  app.add_flag("--no-bos", o->no_bos, "do not add BOS even if the model does");
  app.add_flag("--parse-special", o->parse_special, "match control-token text such as <|im_end|>");
  app.add_flag("--ids-only", o->ids_only, "only ids, one per line");
  // Exactly one of -p/-f; an empty -p is a valid (empty) text.
  app.callback([p, f] {
    if (p->count() == 0 && f->count() == 0) {
      throw CLI::RequiredError("one of -p/--prompt or -f/--file");
    }
  });
  return [o] { return run_tokenize(*o); };
});

}  // namespace
}  // namespace keel::cli
