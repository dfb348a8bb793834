#include "tokenizer/read_text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace triattn {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, ": read error");
  return ss.str();
}

std::optional<std::string> read_text_file_if_exists(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return read_text_file(path);
}

}  // namespace triattn
