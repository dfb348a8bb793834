// GgufValue accessors and the type table shared by the GGUF reader and writer.
#include <limits>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/gguf_types.h"

namespace triattn {
namespace gguf_detail {

bool is_valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::FLOAT64); }

std::string_view type_name(GgufType t) {
  switch (t) {
    case GgufType::UINT8: return "uint8";
    case GgufType::INT8: return "int8";
    case GgufType::UINT16: return "uint16";
    case GgufType::INT16: return "int16";
    case GgufType::UINT32: return "uint32";
    case GgufType::INT32: return "int32";
    case GgufType::FLOAT32: return "float32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "string";
    case GgufType::ARRAY: return "array";
    case GgufType::UINT64: return "uint64";
    case GgufType::INT64: return "int64";
    case GgufType::FLOAT64: return "float64";
  }
  return "unknown";
}

bool is_signed_int(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}
bool is_unsigned_int(GgufType t) {
  return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 ||
         t == GgufType::UINT64;
}
bool is_float(GgufType t) { return t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }

uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    default: return 0;
  }
}

uint64_t min_encoded_size(GgufType t) {
  if (t == GgufType::STRING) return 8;      // u64 length
  if (t == GgufType::ARRAY) return 4 + 8;   // u32 element type + u64 count
  return scalar_size(t);
}

namespace {
bool int_in_range(GgufType t, int64_t v) {
  switch (t) {
    case GgufType::INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case GgufType::INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case GgufType::INT32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
  }
}
bool uint_in_range(GgufType t, uint64_t v) {
  switch (t) {
    case GgufType::UINT8: return v <= UINT8_MAX;
    case GgufType::UINT16: return v <= UINT16_MAX;
    case GgufType::UINT32: return v <= UINT32_MAX;
    default: return true;
  }
}
}  // namespace

void check_value(const GgufValue& v, const std::string& where, int depth) {
  const auto bad = [&](const char* why) {
    fail(where, ": value of type ", type_name(v.type), " ", why);
  };
  if (!is_valid_type(static_cast<uint32_t>(v.type))) fail(where, ": unknown value type ", static_cast<uint32_t>(v.type));
  if (is_signed_int(v.type)) {
    const auto* p = std::get_if<int64_t>(&v.value);
    if (!p) bad("must hold an int64");
    if (!int_in_range(v.type, *p)) bad("is out of range");
  } else if (is_unsigned_int(v.type)) {
    const auto* p = std::get_if<uint64_t>(&v.value);
    if (!p) bad("must hold a uint64");
    if (!uint_in_range(v.type, *p)) bad("is out of range");
  } else if (is_float(v.type)) {
    if (!std::holds_alternative<double>(v.value)) bad("must hold a double");
  } else if (v.type == GgufType::BOOL) {
    if (!std::holds_alternative<bool>(v.value)) bad("must hold a bool");
  } else if (v.type == GgufType::STRING) {
    if (!std::holds_alternative<std::string>(v.value)) bad("must hold a string");
  } else {  // ARRAY
    const auto* a = std::get_if<GgufArray>(&v.value);
    if (!a) bad("must hold an array");
    if (depth >= kMaxArrayDepth) bad("nests arrays too deeply");
    for (const GgufValue& item : a->items) {
      if (item.type != a->elem_type)
        fail(where, ": array of ", type_name(a->elem_type), " holds an item of type ",
             type_name(item.type));
      check_value(item, where, depth + 1);
    }
  }
}

}  // namespace gguf_detail

using namespace gguf_detail;

bool GgufValue::is_int() const { return is_signed_int(type) || is_unsigned_int(type); }

int64_t GgufValue::as_int() const {
  if (const auto* p = std::get_if<int64_t>(&value); p && is_signed_int(type)) return *p;
  if (const auto* p = std::get_if<uint64_t>(&value); p && is_unsigned_int(type)) {
    if (*p > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("GGUF value ", *p, " does not fit in int64");
    return static_cast<int64_t>(*p);
  }
  fail("GGUF value has type ", type_name(type), ", expected an integer");
}

double GgufValue::as_float() const {
  if (const auto* p = std::get_if<double>(&value); p && is_float(type)) return *p;
  if (const auto* p = std::get_if<int64_t>(&value); p && is_signed_int(type)) return static_cast<double>(*p);
  if (const auto* p = std::get_if<uint64_t>(&value); p && is_unsigned_int(type)) return static_cast<double>(*p);
  fail("GGUF value has type ", type_name(type), ", expected a number");
}

bool GgufValue::as_bool() const {
  if (const auto* p = std::get_if<bool>(&value); p && type == GgufType::BOOL) return *p;
  fail("GGUF value has type ", type_name(type), ", expected bool");
}

const std::string& GgufValue::as_string() const {
  if (const auto* p = std::get_if<std::string>(&value); p && type == GgufType::STRING) return *p;
  fail("GGUF value has type ", type_name(type), ", expected string");
}

const GgufArray& GgufValue::as_array() const {
  if (const auto* p = std::get_if<GgufArray>(&value); p && type == GgufType::ARRAY) return *p;
  fail("GGUF value has type ", type_name(type), ", expected array");
}

}  // namespace triattn

namespace triattn {

bool GgufArray::operator==(const GgufArray& o) const {
  return elem_type == o.elem_type && items == o.items;
}

bool GgufValue::operator==(const GgufValue& o) const { return type == o.type && value == o.value; }

}  // namespace triattn
