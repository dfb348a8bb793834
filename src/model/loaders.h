#pragma once
// One loader per file format; each fills config, weights and tokenizer of a Model.
#include <string>

#include "model/model_builder.h"

namespace triattn {

void load_gguf_model(ModelBuilder& m, const std::string& path);
void load_hf_model(ModelBuilder& m, const std::string& dir);
void load_llama2c_model(ModelBuilder& m, const std::string& path);

}  // namespace triattn
