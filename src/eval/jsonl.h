#pragma once
// Reading the JSONL data files of `eval needle` and `eval math` (one JSON object per line,
// blank lines skipped), with errors that name the file, the line and the field.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace triattn::eval {

struct JsonlRecord {
  int64_t line = 0;  // 1-based line in the file
  nlohmann::json value;
};

// Error "FILE:LINE: ..." for a line that is not a JSON object; "FILE: no records" for an
// empty file.
std::vector<JsonlRecord> read_jsonl(const std::string& path);

// The string field `key` of a record, or Error "FILE:LINE: field 'key' ...". Numbers are
// accepted and printed as they are written (an integer answer 42 becomes "42").
std::string string_field(const std::string& path, const JsonlRecord& r, const std::string& key);

}  // namespace triattn::eval
