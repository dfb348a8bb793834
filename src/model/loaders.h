#pragma once
// One loader per file format; each fills config, weights and tokenizer of a Model.
#include <string>

#include "model/model.h"

namespace triattn {

void load_gguf_model(Model& m, const std::string& path);
void load_hf_model(Model& m, const std::string& dir);
void load_llama2c_model(Model& m, const std::string& path);

}  // namespace triattn
