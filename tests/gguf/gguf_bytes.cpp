#include "gguf_bytes.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/paths.h"

namespace keel::test {

std::vector<std::string> shared_gguf_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(shared_dir(), ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file() && it->path().extension() == ".gguf") out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace keel::test
