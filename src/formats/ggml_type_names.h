#pragma once
// Names of the GGML tensor type ids a GGUF file may carry, including the many this runtime
// cannot read, so that a refusal says which type a file holds ("q2_k (10)") and which ones
// triattn reads instead of a bare number.
#include <cstdint>
#include <string>

namespace triattn {

// "q2_k (10)"; ids ggml does not define read "unknown (77)".
std::string ggml_type_label(uint32_t ggml_type);
// The types GgufFile::open accepts, comma-separated: "f32, f16, q4_0, ...".
std::string supported_ggml_types();

}  // namespace triattn
