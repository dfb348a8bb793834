#pragma once
// Checked, typed reads of the fields of one JSON object from a configuration file
// (config.json and the like). The JSON library's own messages ("key 'x' not found", "type
// must be number, but is string") name neither the file nor the key; every failure here
// names both and says what was expected:
//   "<dir>/config.json: 'hidden_size' is missing"
//   "<dir>/config.json: 'hidden_size' must be a positive integer, got "abc""
// Nested objects report dotted keys ('rope_scaling.factor'). A null value counts as absent,
// as transformers writes `"rope_scaling": null` for "none".
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace triattn {

class JsonFields {
 public:
  // `obj` must outlive this; throws unless it is a JSON object.
  JsonFields(const nlohmann::json& obj, std::string file, std::string key_prefix = "");

  bool has(const std::string& key) const;  // present and not null

  // Whole numbers from 1 to `max` (64.0 is 64; 64.5, 0, -1, "64" and true are refused, never
  // truncated). The value is checked as read, before any narrowing by the caller.
  int64_t positive_int(const std::string& key, int64_t max) const;
  int64_t positive_int_or(const std::string& key, int64_t max, int64_t fallback) const;
  // Finite numbers > 0 that a float can hold.
  float positive_float_or(const std::string& key, float fallback) const;
  bool bool_or(const std::string& key, bool fallback) const;
  std::string text(const std::string& key) const;
  std::string text_or(const std::string& key, const std::string& fallback) const;
  // A nested object (its keys reported as '<key>.<field>'); nullopt when absent or null.
  std::optional<JsonFields> object_or_none(const std::string& key) const;

  const std::string& file() const { return file_; }
  // "'<prefix><key>'" as messages quote it.
  std::string quoted(const std::string& key) const;

 private:
  const nlohmann::json* find(const std::string& key) const;
  [[noreturn]] void wrong(const std::string& key, const nlohmann::json& v, const std::string& expected) const;

  const nlohmann::json* obj_;
  std::string file_;
  std::string prefix_;
};

}  // namespace triattn
