// The real TinyStories-656K Q8_0 GGUF, dequantized in place by ops, must reproduce the F32
// safetensors weights of the same model (SOURCE.md: the two agree to ~0.4%). This pins the
// Q8_0 block layout to what llama.cpp actually writes. The test links only the ops library,
// so it reads both files with the minimal parsers below (just enough for this check).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

const std::string kDir = std::string(TRIATTN_SHARED_DIR) + "/models/tinystories-656k/";

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

struct Tensor {
  DType type;
  std::vector<int64_t> shape;  // outermost first
  const uint8_t* data;
};

// GGUF v3: header, metadata (skipped), tensor infos, aligned data section.
class MiniGguf {
 public:
  explicit MiniGguf(std::vector<uint8_t> bytes) : b_(std::move(bytes)) {
    if (b_.size() < 24 || std::memcmp(b_.data(), "GGUF", 4) != 0)
      throw std::runtime_error("not GGUF");
    pos_ = 8;
    const uint64_t n_tensors = u64(), n_kv = u64();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = str();
      const uint32_t type = u32();
      if (key == "general.alignment" && type == 4)
        alignment = u32();
      else
        skip_value(type);
    }
    std::vector<std::pair<std::string, std::pair<Tensor, uint64_t>>> infos;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      const std::string name = str();
      const uint32_t n_dims = u32();
      std::vector<int64_t> shape(n_dims);
      for (uint32_t d = 0; d < n_dims; ++d) shape[n_dims - 1 - d] = static_cast<int64_t>(u64());
      const auto type = dtype_from_ggml(u32());
      if (!type) throw std::runtime_error("unknown tensor type in " + name);
      infos.push_back({name, {Tensor{*type, shape, nullptr}, u64()}});
    }
    const size_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (auto& [name, info] : infos) {
      info.first.data = b_.data() + data_start + info.second;
      tensors[name] = info.first;
    }
  }
  std::map<std::string, Tensor> tensors;

 private:
  template <class T>
  T get() {
    if (pos_ + sizeof(T) > b_.size()) throw std::runtime_error("truncated GGUF");
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  std::string str() {
    const uint64_t n = u64();
    if (pos_ + n > b_.size()) throw std::runtime_error("truncated GGUF string");
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t type) {
    static const size_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      str();
    } else if (type == 9) {
      const uint32_t et = u32();
      const uint64_t n = u64();
      for (uint64_t i = 0; i < n; ++i) skip_value(et);
    } else if (type < 13) {
      pos_ += kSizes[type];
    } else {
      throw std::runtime_error("bad GGUF value type");
    }
  }
  std::vector<uint8_t> b_;
  size_t pos_ = 0;
};

// safetensors: u64 header length, JSON header, raw data (only F32 here).
std::map<std::string, Tensor> parse_safetensors(const std::vector<uint8_t>& b) {
  uint64_t n;
  std::memcpy(&n, b.data(), 8);
  const auto header = nlohmann::json::parse(b.begin() + 8, b.begin() + 8 + static_cast<int64_t>(n));
  std::map<std::string, Tensor> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(info["dtype"], "F32") << name;
    const size_t begin = info["data_offsets"][0];
    out[name] =
        Tensor{DType::F32, info["shape"].get<std::vector<int64_t>>(), b.data() + 8 + n + begin};
  }
  return out;
}

// GGUF stores attn_q/attn_k rows interleaved per head (convert_hf_to_gguf's permute for
// pair-wise RoPE): GGUF row h*hd + 2i + j holds HF row h*hd + j*hd/2 + i.
int64_t hf_row(int64_t gguf_row, int64_t head_dim, bool permuted) {
  if (!permuted) return gguf_row;
  const int64_t h = gguf_row / head_dim, w = gguf_row % head_dim;
  return h * head_dim + (w % 2) * (head_dim / 2) + w / 2;
}

TEST(RealGguf, Q8_0DequantizesToTheSafetensorsWeights) {
  std::vector<uint8_t> gbytes = read_all(kDir + "TinyStories-656K-Q8_0.gguf");
  const std::vector<uint8_t> sbytes = read_all(kDir + "model.safetensors");
  if (gbytes.empty() || sbytes.empty()) GTEST_SKIP() << "model files not found under " << kDir;
  const MiniGguf gguf(std::move(gbytes));
  const auto st = parse_safetensors(sbytes);

  struct Pair {
    std::string gguf, hf;
    bool permuted;
  };
  std::vector<Pair> pairs = {{"token_embd.weight", "lm_head.weight", false}};  // tied
  for (int l = 0; l < 2; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".",
                      h = "model.layers." + std::to_string(l) + ".";
    pairs.push_back({g + "ffn_up.weight", h + "mlp.up_proj.weight", false});
    pairs.push_back({g + "ffn_gate.weight", h + "mlp.gate_proj.weight", false});
    pairs.push_back({g + "ffn_down.weight", h + "mlp.down_proj.weight", false});
    pairs.push_back({g + "attn_v.weight", h + "self_attn.v_proj.weight", false});
    pairs.push_back({g + "attn_output.weight", h + "self_attn.o_proj.weight", false});
    pairs.push_back({g + "attn_q.weight", h + "self_attn.q_proj.weight", true});
    pairs.push_back({g + "attn_k.weight", h + "self_attn.k_proj.weight", true});
  }
  const int64_t head_dim = 16;
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.gguf);
    ASSERT_TRUE(gguf.tensors.count(p.gguf));
    ASSERT_TRUE(st.count(p.hf)) << p.hf;
    const Tensor& q = gguf.tensors.at(p.gguf);
    const Tensor& f = st.at(p.hf);
    ASSERT_EQ(q.type, DType::Q8_0);
    ASSERT_EQ(q.shape, f.shape);
    const int64_t rows = q.shape[0], cols = q.shape[1];
    const auto* ref_w = reinterpret_cast<const float*>(f.data);
    std::vector<float> row(static_cast<size_t>(cols));
    double max_rel = 0;
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(DType::Q8_0, q.data + r * row_bytes(DType::Q8_0, cols), row.data(), cols);
      const float* want = ref_w + hf_row(r, head_dim, p.permuted) * cols;
      for (int64_t b = 0; b < cols; b += 32) {
        float amax = 0;
        for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(want[i]));
        for (int64_t i = b; i < b + 32; ++i) {
          // Q8_0's own bound: half a step (amax/127) plus the f16 rounding of the scale.
          ASSERT_LE(std::fabs(row[i] - want[i]), 0.57f * amax / 127.0f + 1e-7f)
              << "row " << r << " col " << i;
          max_rel = std::max(max_rel, std::fabs(row[i] - want[i]) / static_cast<double>(amax));
        }
      }
    }
    EXPECT_LT(max_rel, 0.0045);  // SOURCE.md's ~0.4% relative
  }

  // And the whole matmul path on the real tensor, on every ISA, against F32 weights.
  const Tensor& q = gguf.tensors.at("blk.0.ffn_up.weight");
  const Tensor& f = st.at("model.layers.0.mlp.up_proj.weight");
  const int64_t rows = q.shape[0], cols = q.shape[1], n_tokens = 5;
  const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), 17);
  std::vector<float> want(static_cast<size_t>(rows * n_tokens));
  ref::matmul(TensorView{DType::F32, f.shape, f.data}, x.data(), n_tokens, want.data());
  ThreadPool pool(2);
  for (Isa isa : supported_isas()) {
    testing::IsaGuard guard(isa);
    std::vector<float> y(want.size());
    matmul(TensorView{q.type, q.shape, q.data}, x.data(), n_tokens, y.data(), &pool);
    double err = 0, mag = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      err += std::pow(y[i] - static_cast<double>(want[i]), 2);
      mag += std::pow(static_cast<double>(want[i]), 2);
    }
    EXPECT_LT(std::sqrt(err / mag), 0.01) << isa_name(isa);  // weights + activations at 8 bits
  }
}

}  // namespace
}  // namespace triattn::ops
