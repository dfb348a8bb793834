#include "eval/jsonl.h"

#include <sstream>

#include "core/error.h"
#include "core/read_file.h"

namespace triattn::eval {

std::vector<JsonlRecord> read_jsonl(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<JsonlRecord> out;
  std::istringstream in(text);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail(path, ":", n, ": not valid JSON (", e.what(), ")");
    }
    if (!v.is_object()) fail(path, ":", n, ": expected a JSON object per line, got ", v.type_name());
    out.push_back({n, std::move(v)});
  }
  if (out.empty()) fail(path, ": no records (expected one JSON object per line)");
  return out;
}

std::string string_field(const std::string& path, const JsonlRecord& r, const std::string& key) {
  const auto it = r.value.find(key);
  if (it == r.value.end()) fail(path, ":", r.line, ": field '", key, "' is missing");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  fail(path, ":", r.line, ": field '", key, "' must be a string, got ", it->type_name());
}

}  // namespace triattn::eval
