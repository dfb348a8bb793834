#include "calib/calibrate_paths.h"

#include <filesystem>
#include <vector>

#include "calib/atomic_write.h"
#include "core/error.h"

namespace triattn {

namespace fs = std::filesystem;

namespace {

struct Named {
  fs::path path;
  std::string what;
};

// The same file: by inode when both exist (hard links, symlinks, "./x" vs "x"), else by the
// normalised absolute path.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

// Every file the model load may read: the model itself; for a directory every regular file
// in it (config, weights, shards, tokenizer); for a file the tokenizers llama2.c looks up
// beside a checkpoint (model/loader_llama2c.cpp: tokNNN.bin, tokenizer.bin).
std::vector<Named> model_files(const std::string& model) {
  std::vector<Named> out = {{model, "the model " + model}};
  std::error_code ec;
  const fs::path m(model);
  if (fs::is_directory(m, ec)) {
    for (const auto& e : fs::directory_iterator(m, ec))
      if (e.is_regular_file(ec)) out.push_back({e.path(), "a file of the model directory " + model});
  } else if (fs::is_regular_file(m, ec)) {
    const fs::path dir = m.has_parent_path() ? m.parent_path() : fs::path(".");
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file(ec) && name.ends_with(".bin") && (name.starts_with("tok") || name == "tokenizer.bin") &&
          !same_file(e.path(), m))
        out.push_back({e.path(), "the tokenizer beside the model " + model});
    }
  }
  return out;
}

}  // namespace

void check_calibrate_paths(const CalibratePaths& p) {
  std::vector<Named> inputs = model_files(p.model);
  if (!p.input.empty() && p.input != "-") inputs.push_back({p.input, "the calibration input"});
  std::vector<std::pair<std::string, std::string>> outputs = {{p.output, "-o/--output"}};
  if (!p.dump_tokens.empty()) outputs.push_back({p.dump_tokens, "--dump-tokens"});

  for (const auto& [out, flag] : outputs)
    for (const Named& in : inputs)
      if (same_file(out, in.path))
        fail(flag, " ", out, " would overwrite ", in.what, (in.path.string() == out ? "" : " (" + in.path.string() + ")"),
             "; write the output somewhere else");
  if (outputs.size() == 2 && same_file(outputs[0].first, outputs[1].first))
    fail("-o/--output and --dump-tokens name the same file ", p.output, "; give the token list another name");
  check_output_writable(p.output, "stats file");
  if (!p.dump_tokens.empty()) check_output_writable(p.dump_tokens, "token list");
}

}  // namespace triattn
