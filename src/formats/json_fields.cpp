#include "formats/json_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace triattn {

namespace {

// The offending value as the file spells it, cut short so a huge array cannot flood a message.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  constexpr size_t kMax = 60;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// The value as a whole number, if it is one (integers of either sign, or integral floats
// within int64); nullopt for fractions, strings, booleans, ...
std::optional<int64_t> whole_number(const nlohmann::json& v, bool& too_large) {
  too_large = false;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      too_large = true;
      return std::nullopt;
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return std::nullopt;
    if (std::fabs(d) >= 9.2e18) {
      too_large = d > 0;
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& obj, std::string file, std::string key_prefix)
    : obj_(&obj), file_(std::move(file)), prefix_(std::move(key_prefix)) {
  if (!obj.is_object()) {
    if (prefix_.empty()) fail(file_, ": must hold a JSON object, got ", shown(obj));
    fail(file_, ": '", prefix_.substr(0, prefix_.size() - 1), "' must be an object, got ", shown(obj));
  }
}

std::string JsonFields::quoted(const std::string& key) const { return "'" + prefix_ + key + "'"; }

const nlohmann::json* JsonFields::find(const std::string& key) const {
  auto it = obj_->find(key);
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::has(const std::string& key) const { return find(key) != nullptr; }

void JsonFields::wrong(const std::string& key, const nlohmann::json& v, const std::string& expected) const {
  fail(file_, ": ", quoted(key), " must be ", expected, ", got ", shown(v));
}

int64_t JsonFields::positive_int(const std::string& key, int64_t max) const {
  const nlohmann::json* v = find(key);
  if (!v) fail(file_, ": ", quoted(key), " is missing");
  bool too_large = false;
  const std::optional<int64_t> n = whole_number(*v, too_large);
  if (too_large || (n && *n > max)) wrong(key, *v, "a positive integer no larger than " + std::to_string(max));
  if (!n || *n <= 0) wrong(key, *v, "a positive integer");
  return *n;
}

int64_t JsonFields::positive_int_or(const std::string& key, int64_t max, int64_t fallback) const {
  return has(key) ? positive_int(key, max) : fallback;
}

float JsonFields::positive_float_or(const std::string& key, float fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_number()) wrong(key, *v, "a positive number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d <= 0) wrong(key, *v, "a positive number");
  if (d > std::numeric_limits<float>::max()) wrong(key, *v, "a positive number that fits in a float");
  return static_cast<float>(d);
}

bool JsonFields::bool_or(const std::string& key, bool fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong(key, *v, "true or false");
  return v->get<bool>();
}

std::string JsonFields::text(const std::string& key) const {
  const nlohmann::json* v = find(key);
  if (!v) fail(file_, ": ", quoted(key), " is missing");
  if (!v->is_string()) wrong(key, *v, "a string");
  return v->get<std::string>();
}

std::string JsonFields::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

std::optional<JsonFields> JsonFields::object_or_none(const std::string& key) const {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  return JsonFields(*v, file_, prefix_ + key + ".");
}

}  // namespace triattn
