#pragma once
#include <optional>
#include <string>

namespace triattn {

// The whole file as bytes; Error naming the path when it cannot be read.
std::string read_text_file(const std::string& path);
// std::nullopt when the file does not exist (other failures still throw).
std::optional<std::string> read_text_file_if_exists(const std::string& path);

}  // namespace triattn
