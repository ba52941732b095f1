#include "sampling/json_schema.h"

#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace keel::sampling {

using nlohmann::ordered_json;

class SchemaCompiler {
 public:
  static constexpr size_t kMaxNodes = 4096;

  explicit SchemaCompiler(const ordered_json& doc) : doc_(doc) {}

  std::shared_ptr<const JsonSchema> run() {
    auto schema = std::make_shared<JsonSchema>();
    out_ = schema.get();
    const int32_t root = alloc();
    build(root, doc_, "#");
    // The root is an object: a root allowing anything ({} / true) allows any object.
    if (node(root).kind == SchemaNode::Kind::kAny) node(root).kind = SchemaNode::Kind::kAnyObject;
    if (!object_only(root, 0)) refuse("#", "the root must be an object schema (\"type\": \"object\")");
    return schema;
  }

 private:
  [[noreturn]] static void refuse(const std::string& path, const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, "json_schema " + path + ": " + why);
  }

  SchemaNode& node(int32_t i) { return out_->nodes_[static_cast<size_t>(i)]; }

  int32_t alloc() {
    if (out_->nodes_.size() >= kMaxNodes) refuse("#", "more than 4096 schema nodes");
    out_->nodes_.emplace_back();
    return static_cast<int32_t>(out_->nodes_.size() - 1);
  }

  int32_t compile(const ordered_json& s, const std::string& path) {
    const int32_t i = alloc();
    build(i, s, path);
    return i;
  }

  bool object_only(int32_t i, int depth) const {
    const SchemaNode& n = out_->nodes_[static_cast<size_t>(i)];
    if (n.kind == SchemaNode::Kind::kObject || n.kind == SchemaNode::Kind::kAnyObject) return true;
    if (n.kind != SchemaNode::Kind::kAnyOf || depth > 16) return false;
    for (int32_t a : n.alternatives) {
      if (!object_only(a, depth + 1)) return false;
    }
    return true;
  }

  // The node a local reference names, compiled once (so recursive schemas terminate).
  int32_t resolve(const std::string& ref, const std::string& path) {
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    if (ref != "#" && !ref.starts_with("#/")) refuse(path, "only local $refs (\"#/...\") are supported, got '" + ref + "'");
    const ordered_json* target = &doc_;
    if (ref != "#") {
      try {
        target = &doc_.at(ordered_json::json_pointer(ref.substr(1)));
      } catch (const std::exception&) {
        refuse(path, "$ref '" + ref + "' names nothing in the schema");
      }
    }
    const int32_t i = alloc();
    refs_[ref] = i;
    build(i, *target, ref);
    return i;
  }

  void literals(int32_t i, std::vector<std::string> texts) {
    node(i).kind = SchemaNode::Kind::kLiterals;
    node(i).literals = std::move(texts);
  }

  void build(int32_t i, const ordered_json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(path, "the schema 'false' allows nothing");
      return;  // kAny
    }
    if (!s.is_object()) refuse(path, "a schema must be an object or a boolean");
    for (const char* k : {"allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas"}) {
      if (s.contains(k)) refuse(path, std::string("'") + k + "' is not supported");
    }
    if (auto ref = s.find("$ref"); ref != s.end()) {
      if (!ref->is_string()) refuse(path, "$ref must be a string");
      const int32_t target = resolve(ref->get<std::string>(), path);
      node(i).kind = SchemaNode::Kind::kAnyOf;
      node(i).alternatives = {target};
      return;
    }
    if (auto c = s.find("const"); c != s.end()) return literals(i, {c->dump()});
    if (auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) refuse(path + "/enum", "must be a non-empty array");
      std::vector<std::string> texts;
      for (const ordered_json& v : *e) texts.push_back(v.dump());
      return literals(i, std::move(texts));
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (auto a = s.find(k); a != s.end()) {
        if (!a->is_array() || a->empty()) refuse(path + "/" + k, "must be a non-empty array");
        std::vector<int32_t> alts;
        for (size_t j = 0; j < a->size(); ++j) alts.push_back(compile((*a)[j], path + "/" + k + "/" + std::to_string(j)));
        node(i).kind = SchemaNode::Kind::kAnyOf;
        node(i).alternatives = std::move(alts);
        return;
      }
    }
    auto type = s.find("type");
    if (type != s.end() && type->is_array()) {
      if (type->empty()) refuse(path + "/type", "must not be an empty list");
      std::vector<int32_t> alts;
      for (const ordered_json& t : *type) {
        ordered_json one = s;
        one["type"] = t;
        alts.push_back(compile(one, path));
      }
      node(i).kind = SchemaNode::Kind::kAnyOf;
      node(i).alternatives = std::move(alts);
      return;
    }
    std::string t;
    if (type != s.end()) {
      if (!type->is_string()) refuse(path + "/type", "must be a string or a list of strings");
      t = type->get<std::string>();
    } else if (s.contains("properties")) {
      t = "object";
    } else if (s.contains("items")) {
      t = "array";
    }
    if (t.empty()) return;  // kAny
    if (t == "object") return build_object(i, s, path);
    if (t == "array") return build_array(i, s, path);
    if (t == "string") {
      node(i).kind = SchemaNode::Kind::kString;
    } else if (t == "number") {
      node(i).kind = SchemaNode::Kind::kNumber;
    } else if (t == "integer") {
      node(i).kind = SchemaNode::Kind::kInteger;
    } else if (t == "boolean") {
      literals(i, {"true", "false"});
    } else if (t == "null") {
      literals(i, {"null"});
    } else {
      refuse(path + "/type", "unknown type '" + t + "'");
    }
  }

  void build_object(int32_t i, const ordered_json& s, const std::string& path) {
    auto props = s.find("properties");
    if (props == s.end() || !props->is_object() || props->empty()) {
      node(i).kind = SchemaNode::Kind::kAnyObject;
      return;
    }
    std::vector<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) refuse(path + "/required", "must be an array of property names");
      for (const ordered_json& name : *r) {
        if (!name.is_string()) refuse(path + "/required", "must be an array of property names");
        required.push_back(name.get<std::string>());
      }
    }
    std::vector<std::string> keys;
    std::vector<int32_t> values;
    std::vector<uint8_t> req;
    for (const auto& [name, sub] : props->items()) {
      keys.push_back(ordered_json(name).dump());
      values.push_back(compile(sub, path + "/properties/" + name));
      req.push_back(std::find(required.begin(), required.end(), name) != required.end() ? 1 : 0);
    }
    SchemaNode& n = node(i);
    n.kind = SchemaNode::Kind::kObject;
    n.keys = std::move(keys);
    n.values = std::move(values);
    n.required = std::move(req);
  }

  void build_array(int32_t i, const ordered_json& s, const std::string& path) {
    int32_t items;
    if (auto it = s.find("items"); it != s.end()) {
      items = compile(*it, path + "/items");
    } else {
      items = alloc();  // kAny
    }
    int64_t lo = 0, hi = -1;
    if (auto m = s.find("minItems"); m != s.end()) {
      if (!m->is_number_unsigned()) refuse(path + "/minItems", "must be a non-negative integer");
      lo = m->get<int64_t>();
    }
    if (auto m = s.find("maxItems"); m != s.end()) {
      if (!m->is_number_unsigned()) refuse(path + "/maxItems", "must be a non-negative integer");
      hi = m->get<int64_t>();
    }
    if (hi >= 0 && hi < lo) refuse(path, "maxItems is below minItems");
    SchemaNode& n = node(i);
    n.kind = SchemaNode::Kind::kArray;
    n.items = items;
    n.min_items = lo;
    n.max_items = hi;
  }

  const ordered_json& doc_;
  JsonSchema* out_ = nullptr;
  std::map<std::string, int32_t> refs_;
};

std::shared_ptr<const JsonSchema> JsonSchema::compile(std::string_view schema_json) {
  const ordered_json doc = ordered_json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw Error(ErrorCode::kInvalidArgument, "json_schema: the schema is not valid JSON");
  return SchemaCompiler(doc).run();
}

}  // namespace keel::sampling
