#pragma once
// Python json.dumps for template values: transformers' `tojson` filter is json.dumps with
// ensure_ascii=False and no HTML escaping, and the exact spacing matters because the output
// becomes prompt tokens (", " and ": " without indent; "," and ": " with one).
#include <optional>
#include <string>

#include "chat/jinja_value.h"

namespace triattn::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // nullopt: one line
  std::optional<std::string> item_sep, key_sep;  // nullopt: Python's defaults for the indent mode
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws Error for values JSON cannot hold (undefined, namespace, function), nested more
// than kMaxNesting levels, or whose text would be over kMaxStringBytes.
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

}  // namespace triattn::jinja
