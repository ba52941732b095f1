// GgufFile: lookups and typed getters over the parsed metadata and tensor infos.
#include "core/error.h"
#include "gguf/gguf.h"

namespace keel::gguf {

namespace {

// Runs a conversion, re-throwing a type error with the file and key named.
template <typename F>
auto converted(const GgufFile& f, const std::string& key, F&& convert) {
  try {
    return convert();
  } catch (const Error& e) {
    throw Error(e.code(), f.path() + ": key '" + key + "': " + e.what());
  }
}

}  // namespace

const Value* GgufFile::find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

static const Value& required(const GgufFile& f, const std::string& key) {
  const Value* v = f.find(key);
  if (!v) throw Error(ErrorCode::kNotFound, f.path() + ": missing metadata key '" + key + "'");
  return *v;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const Value& v = required(*this, key);
  return converted(*this, key, [&] { return v.as_int(); });
}

int64_t GgufFile::get_int_or(const std::string& key, int64_t dflt) const {
  const Value* v = find(key);
  return v ? converted(*this, key, [&] { return v->as_int(); }) : dflt;
}

double GgufFile::get_float(const std::string& key) const {
  const Value& v = required(*this, key);
  return converted(*this, key, [&] { return v.as_float(); });
}

double GgufFile::get_float_or(const std::string& key, double dflt) const {
  const Value* v = find(key);
  return v ? converted(*this, key, [&] { return v->as_float(); }) : dflt;
}

bool GgufFile::get_bool_or(const std::string& key, bool dflt) const {
  const Value* v = find(key);
  return v ? converted(*this, key, [&] { return v->as_bool(); }) : dflt;
}

std::string GgufFile::get_string(const std::string& key) const {
  const Value& v = required(*this, key);
  return converted(*this, key, [&] { return v.as_string(); });
}

std::string GgufFile::get_string_or(const std::string& key, const std::string& dflt) const {
  const Value* v = find(key);
  return v ? converted(*this, key, [&] { return v->as_string(); }) : dflt;
}

}  // namespace keel::gguf
