// llama2.c checkpoints (legacy version 0 and the "ak42" versions 1 and 2) and tokNNN.bin
// vocabularies. Every size is added up from the header and compared with the file size
// before a single tensor is handed out, so a corrupted header fails with an Error.
#include "formats/llama2c.h"

#include <cstring>

#include "core/error.h"
#include "formats/byte_cursor.h"

namespace triattn {

namespace {

constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": export versions 1 and 2
constexpr uint64_t kVersionedHeaderBytes = 256;
constexpr uint64_t kLegacyHeaderBytes = 7 * 4;

void check_header(const Llama2cHeader& h, const std::string& path) {
  const auto positive = [&](int32_t v, const char* name) {
    if (v <= 0) fail(path, ": llama2.c header ", name, " = ", v, " (must be positive)");
  };
  positive(h.dim, "dim");
  positive(h.hidden_dim, "hidden_dim");
  positive(h.n_layers, "n_layers");
  positive(h.n_heads, "n_heads");
  positive(h.n_kv_heads, "n_kv_heads");
  positive(h.seq_len, "seq_len");
  if (h.version == 0) {
    if (h.vocab_size == 0 || h.vocab_size == INT32_MIN) fail(path, ": llama2.c header vocab_size = ", h.vocab_size);
  } else {
    positive(h.vocab_size, "vocab_size");  // the classifier flag is its own byte here
  }
  if (h.version == 2) positive(h.group_size, "group_size");
  if (h.dim % h.n_heads != 0) fail(path, ": llama2.c header n_heads ", h.n_heads, " does not divide dim ", h.dim);
  if (h.n_heads % h.n_kv_heads != 0)
    fail(path, ": llama2.c header n_kv_heads ", h.n_kv_heads, " does not divide n_heads ", h.n_heads);
  if ((h.dim / h.n_heads) % 2 != 0) fail(path, ": llama2.c head size ", h.dim / h.n_heads, " is odd");
}

// The header of any version; `data_start` gets the offset of the first weight.
Llama2cHeader read_header(const MappedFile& file, const std::string& path, uint64_t& data_start) {
  Llama2cHeader h;
  ByteCursor in(file.data(), file.size(), path);
  uint32_t magic = 0;
  if (file.size() >= 4) std::memcpy(&magic, file.data(), 4);
  const bool versioned = magic == kVersionedMagic;
  if (versioned) {
    in.skip(4, "magic");
    h.version = in.read<int32_t>("llama2.c version");
    if (h.version != 1 && h.version != 2)
      fail(path, ": llama2.c export version ", h.version, " is not supported (supported: 1 = fp32, ",
           "2 = int8 groups as in *_q80.bin, and the legacy headerless fp32 format)");
  }
  int32_t* fields[] = {&h.dim, &h.hidden_dim, &h.n_layers, &h.n_heads, &h.n_kv_heads, &h.vocab_size, &h.seq_len};
  for (int32_t* f : fields) *f = in.read<int32_t>("llama2.c header");
  if (versioned) {
    const uint8_t shared = in.read<uint8_t>("shared_classifier");
    if (shared > 1) fail(path, ": llama2.c header shared_classifier byte is ", int{shared}, ", not 0 or 1");
    h.shared_classifier = shared == 1;
    if (h.version == 2) h.group_size = in.read<int32_t>("group_size");
    in.need(kVersionedHeaderBytes - in.pos(), "llama2.c header padding");
    data_start = kVersionedHeaderBytes;
  } else {
    data_start = kLegacyHeaderBytes;
  }
  check_header(h, path);
  if (!versioned) {
    h.shared_classifier = h.vocab_size > 0;
    if (h.vocab_size < 0) h.vocab_size = -h.vocab_size;
  }
  return h;
}

// `count` consecutive tensors of one shape in the file (count is 1 or n_layers), and where
// they go: one tensor of the checkpoint, one field of every layer, or nowhere (unused).
struct Run {
  const char* name;
  int64_t count;
  std::vector<int64_t> shape;
  bool quantized;
  Llama2cTensor* single = nullptr;
  Llama2cTensor Llama2cLayer::*per_layer = nullptr;
};

// The runs of one version, in file order. Only pointers to members are taken here: nothing
// is sized by the header until the file size has been checked against it.
std::vector<Run> file_order(const Llama2cHeader& h, Llama2cCheckpoint& ck) {
  const int64_t D = h.dim, H = h.hidden_dim, L = h.n_layers, V = h.vocab_size;
  const int64_t KV = D / h.n_heads * h.n_kv_heads, half_head = D / h.n_heads / 2;
  using Lay = Llama2cLayer;
  const bool q = h.version == 2;
  std::vector<Run> matrices = {
      {"tok_embeddings", 1, {V, D}, q, &ck.tok_embeddings},
      {"wq", L, {D, D}, q, nullptr, &Lay::wq},
      {"wk", L, {KV, D}, q, nullptr, &Lay::wk},
      {"wv", L, {KV, D}, q, nullptr, &Lay::wv},
      {"wo", L, {D, D}, q, nullptr, &Lay::wo},
      {"w1", L, {H, D}, q, nullptr, &Lay::w1},
      {"w2", L, {D, H}, q, nullptr, &Lay::w2},
      {"w3", L, {H, D}, q, nullptr, &Lay::w3},
  };
  const Run wcls{"wcls", 1, {V, D}, q, &ck.wcls};
  std::vector<Run> runs;
  if (h.version == 0) {
    // Kind by kind, norms between the matrices, then the legacy RoPE tables.
    runs = {matrices[0],
            {"rms_att", L, {D}, false, nullptr, &Lay::rms_att},
            matrices[1], matrices[2], matrices[3], matrices[4],
            {"rms_ffn", L, {D}, false, nullptr, &Lay::rms_ffn},
            matrices[5], matrices[6], matrices[7],
            {"rms_final", 1, {D}, false, &ck.rms_final},
            {"freq_cis_real", 1, {h.seq_len, half_head}, false},
            {"freq_cis_imag", 1, {h.seq_len, half_head}, false}};
  } else {
    runs = {{"rms_att", L, {D}, false, nullptr, &Lay::rms_att},
            {"rms_ffn", L, {D}, false, nullptr, &Lay::rms_ffn},
            {"rms_final", 1, {D}, false, &ck.rms_final}};
    runs.insert(runs.end(), matrices.begin(), matrices.end());
  }
  if (!h.shared_classifier) runs.push_back(wcls);
  return runs;
}

// Bytes of one tensor of the run: fp32 values, or int8 values plus an fp32 scale per group.
uint64_t tensor_bytes(const Run& r, int64_t group_size, const std::string& what) {
  uint64_t numel = 1;
  for (int64_t d : r.shape) numel = checked_mul(numel, static_cast<uint64_t>(d), what);
  if (!r.quantized) return checked_mul(numel, 4, what);
  if (numel % static_cast<uint64_t>(group_size) != 0)
    fail(what, ": tensor ", r.name, " has ", numel, " values, not a whole number of groups of ", group_size,
         " (group_size in the header)");
  return checked_add(numel, checked_mul(numel / static_cast<uint64_t>(group_size), 4, what), what);
}

}  // namespace

int64_t Llama2cTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t Llama2cTensor::nbytes() const {
  const auto n = static_cast<size_t>(numel());
  return quantized() ? n + n / static_cast<size_t>(group_size) * 4 : n * 4;
}

TensorView Llama2cTensor::f32_view() const {
  if (quantized()) fail("internal: llama2.c int8 tensor used as fp32 without dequantizing");
  return TensorView{DType::F32, shape, data};
}

void Llama2cTensor::dequantize(float* out) const {
  const int64_t n = numel();
  if (!quantized()) {
    std::memcpy(out, data, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const auto* q = reinterpret_cast<const int8_t*>(data);
  for (int64_t g = 0; g < n / group_size; ++g) {
    float scale;
    std::memcpy(&scale, scales + g * 4, 4);
    for (int64_t i = g * group_size; i < (g + 1) * group_size; ++i) out[i] = static_cast<float>(q[i]) * scale;
  }
}

std::shared_ptr<Llama2cCheckpoint> Llama2cCheckpoint::open(const std::string& path) {
  std::shared_ptr<Llama2cCheckpoint> ck(new Llama2cCheckpoint());
  ck->file_ = MappedFile(path);
  uint64_t data_start = 0;
  const Llama2cHeader& h = ck->header_ = read_header(ck->file_, path, data_start);
  const uint64_t file_size = ck->file_.size();

  // All products in 64 bits from 31-bit factors, checked; the total must be the file size.
  const std::vector<Run> runs = file_order(h, *ck);
  const std::string what = path + ": llama2.c weights";
  uint64_t need = data_start;
  for (const Run& r : runs) {
    const uint64_t run_bytes = checked_mul(static_cast<uint64_t>(r.count), tensor_bytes(r, h.group_size, what), what);
    need = checked_add(need, run_bytes, what);
  }
  if (need != file_size)
    fail(path, ": llama2.c header (version ", h.version, ", dim ", h.dim, ", hidden ", h.hidden_dim, ", layers ",
         h.n_layers, ", vocab ", h.vocab_size, h.shared_classifier ? ", shared classifier" : ", own classifier",
         h.version == 2 ? ", group_size " + std::to_string(h.group_size) : std::string(), ") implies ", need,
         " bytes but the file has ", file_size);

  ck->layers.resize(static_cast<size_t>(h.n_layers));
  const uint8_t* p = ck->file_.data() + data_start;
  for (const Run& r : runs) {
    for (int64_t i = 0; i < r.count; ++i) {
      Llama2cTensor t;
      t.shape = r.shape;
      t.data = p;
      if (r.quantized) {
        t.group_size = h.group_size;
        t.scales = p + t.numel();
      }
      p += t.nbytes();
      if (r.single) *r.single = t;
      if (r.per_layer) ck->layers[static_cast<size_t>(i)].*r.per_layer = std::move(t);
    }
  }
  if (h.shared_classifier) ck->wcls = ck->tok_embeddings;
  return ck;
}

Llama2cVocab Llama2cVocab::open(const std::string& path) {
  MappedFile file(path);
  ByteCursor in(file.data(), file.size(), path);
  Llama2cVocab v;
  v.max_token_length = in.read<int32_t>("max_token_length");
  if (v.max_token_length <= 0) fail(path, ": max_token_length ", v.max_token_length, " is not positive");
  // The vocabulary size is not stored: records run to the end of the file, and a partial
  // record at the end means the file is truncated or not a tokenizer.
  while (in.remaining() > 0) {
    const float score = in.read<float>("token score");
    const int32_t len = in.read<int32_t>("token length");
    if (len < 0 || static_cast<uint64_t>(len) > in.remaining())
      fail(path, ": token ", v.pieces.size(), " length ", len, " runs past the end of the file");
    v.pieces.push_back(in.read_bytes(static_cast<uint64_t>(len), "token bytes"));
    v.scores.push_back(score);
  }
  if (v.pieces.empty()) fail(path, ": no tokens");
  return v;
}

}  // namespace triattn
