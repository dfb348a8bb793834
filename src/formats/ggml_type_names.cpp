#include "formats/ggml_type_names.h"

#include <string_view>

#include "core/dtype.h"

namespace triattn {

namespace {

// ggml's enum ggml_type (ggml.h), by id. Ids 4-5, 31-33 and 36-38 were types that ggml has
// since removed; they stay unnamed.
constexpr std::string_view kNames[] = {
    "f32",     "f16",    "q4_0",    "q4_1",  "",       "",      "q5_0",   "q5_1",  "q8_0",   "q8_1",
    "q2_k",    "q3_k",   "q4_k",    "q5_k",  "q6_k",   "q8_k",  "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
    "iq4_nl",  "iq3_s",  "iq2_s",   "iq4_xs", "i8",    "i16",   "i32",    "i64",   "f64",    "iq1_m",
    "bf16",    "",       "",        "",      "tq1_0",  "tq2_0", "",       "",      "",       "mxfp4",
    "nvfp4",   "q1_0",
};
constexpr uint32_t kCount = sizeof(kNames) / sizeof(kNames[0]);

}  // namespace

std::string ggml_type_label(uint32_t ggml_type) {
  const std::string_view name = ggml_type < kCount ? kNames[ggml_type] : std::string_view();
  return (name.empty() ? std::string("unknown") : std::string(name)) + " (" + std::to_string(ggml_type) + ")";
}

std::string supported_ggml_types() {
  std::string out;
  // Derived from the dtype table, so the list cannot drift from what the reader accepts.
  for (uint32_t id = 0; id < kCount; ++id)
    if (dtype_from_ggml(id)) out += (out.empty() ? "" : ", ") + std::string(kNames[id]);
  return out;
}

}  // namespace triattn
