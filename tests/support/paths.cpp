#include "support/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace keel::test {

std::string source_dir() {
  const char* v = std::getenv("KEEL_SOURCE_DIR");
  if (v && *v) return v;
  return std::filesystem::current_path().string();
}

std::string shared_dir() { return source_dir() + "/../shared"; }

std::string reference_path(const std::string& set, const std::string& file) {
  if (set == "stories260K" && file == "model.gguf") return shared_dir() + "/models/stories260K.gguf";
  return shared_dir() + "/reference/" + set + "/" + file;
}

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "keel-test-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    path = p ? p : std::filesystem::temp_directory_path().string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_dir() {
  static TempDir dir;
  return dir.path;
}

}  // namespace keel::test
