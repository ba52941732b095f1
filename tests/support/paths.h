// Paths tests use: the repository root and ../shared beside it.
#pragma once

#include <string>

namespace keel::test {

std::string source_dir();  // repository root
std::string shared_dir();  // <root>/../shared
// Path of a reference set file, e.g. reference_path("llama", "model.gguf").
std::string reference_path(const std::string& set, const std::string& file);
// A fresh temporary directory for this test process (removed at exit).
std::string temp_dir();

}  // namespace keel::test
