#pragma once
// The file checks `triattn calibrate` makes before it loads anything, so that a mistake
// costs nothing: no output may overwrite one of the run's inputs (the model file, any file of
// an HF model directory, the llama2.c tokenizer beside a checkpoint, the calibration text)
// or another output, and every output must be writable now, not after the whole run.
#include <string>

namespace triattn {

struct CalibratePaths {
  std::string model;        // -m: file or directory
  std::string input;        // --input ("-" = stdin)
  std::string output;       // -o
  std::string dump_tokens;  // --dump-tokens ("" = none)
};

// Throws Error naming the flag, both paths and the fix.
void check_calibrate_paths(const CalibratePaths& p);

}  // namespace triattn
