// llama2.c legacy (version 0) fp32 checkpoints and tokNNN.bin vocabularies.
#include "formats/llama2c.h"

#include "core/error.h"
#include "formats/byte_cursor.h"

namespace triattn {

namespace {

constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": llama2.c export versions 1/2

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
  if (h.vocab_size == 0 || h.vocab_size == INT32_MIN) fail(path, ": llama2.c header vocab_size = ", h.vocab_size);
  if (h.dim % h.n_heads != 0) fail(path, ": llama2.c header n_heads ", h.n_heads, " does not divide dim ", h.dim);
  if (h.n_heads % h.n_kv_heads != 0)
    fail(path, ": llama2.c header n_kv_heads ", h.n_kv_heads, " does not divide n_heads ", h.n_heads);
  if ((h.dim / h.n_heads) % 2 != 0) fail(path, ": llama2.c head size ", h.dim / h.n_heads, " is odd");
}

// Hands out consecutive fp32 tensors from the mapping; sizes were checked up front.
struct FloatCursor {
  const float* p;
  TensorView take(std::vector<int64_t> shape) {
    TensorView v{DType::F32, std::move(shape), p};
    p += v.numel();
    return v;
  }
};

}  // namespace

std::shared_ptr<Llama2cCheckpoint> Llama2cCheckpoint::open(const std::string& path) {
  std::shared_ptr<Llama2cCheckpoint> ck(new Llama2cCheckpoint());
  ck->file_ = MappedFile(path);
  ByteCursor in(ck->file_.data(), ck->file_.size(), path);
  if (in.size() >= 4 && in.read<uint32_t>("magic") == kVersionedMagic)
    fail(path, ": versioned llama2.c export (magic ak42) is not supported; only the legacy fp32 format");
  in = ByteCursor(ck->file_.data(), ck->file_.size(), path);
  Llama2cHeader& h = ck->header_;
  int32_t* fields[] = {&h.dim, &h.hidden_dim, &h.n_layers, &h.n_heads, &h.n_kv_heads, &h.vocab_size, &h.seq_len};
  for (int32_t* f : fields) *f = in.read<int32_t>("llama2.c header");
  check_header(h, path);
  h.shared_classifier = h.vocab_size > 0;
  if (h.vocab_size < 0) h.vocab_size = -h.vocab_size;

  // All products in 64 bits from 31-bit factors; the sum is checked against the file size.
  const uint64_t dim = h.dim, hidden = h.hidden_dim, L = h.n_layers, vocab = h.vocab_size;
  const uint64_t kv_dim = dim / h.n_heads * h.n_kv_heads;
  const uint64_t head_size = dim / h.n_heads;
  const std::string what = path + ": llama2.c weights";
  uint64_t floats = checked_mul(vocab, dim, what);                                  // tok_embeddings
  floats = checked_add(floats, checked_mul(L, dim, what), what);                     // rms_att
  floats = checked_add(floats, checked_mul(L, checked_mul(dim, 2 * dim + 2 * kv_dim, what), what), what);  // wq wk wv wo
  floats = checked_add(floats, checked_mul(L, dim, what), what);                     // rms_ffn
  floats = checked_add(floats, checked_mul(L, checked_mul(3 * hidden, dim, what), what), what);  // w1 w2 w3
  floats = checked_add(floats, dim, what);                                           // rms_final
  floats = checked_add(floats, checked_mul(h.seq_len, head_size, what), what);        // freq_cis real+imag
  if (!h.shared_classifier) floats = checked_add(floats, checked_mul(vocab, dim, what), what);  // wcls
  const uint64_t need = checked_add(28, checked_mul(floats, 4, what), what);
  if (need != in.size())
    fail(path, ": llama2.c header (dim ", h.dim, ", hidden ", h.hidden_dim, ", layers ", h.n_layers, ", vocab ",
         h.vocab_size, ") implies ", need, " bytes but the file has ", in.size());

  FloatCursor fc{reinterpret_cast<const float*>(ck->file_.data() + 28)};
  const int64_t D = h.dim, H = h.hidden_dim, KV = static_cast<int64_t>(kv_dim);
  ck->tok_embeddings = fc.take({h.vocab_size, D});
  ck->layers.resize(L);
  // The file stores each weight kind for all layers before the next kind.
  for (auto& l : ck->layers) l.rms_att = fc.take({D});
  for (auto& l : ck->layers) l.wq = fc.take({D, D});
  for (auto& l : ck->layers) l.wk = fc.take({KV, D});
  for (auto& l : ck->layers) l.wv = fc.take({KV, D});
  for (auto& l : ck->layers) l.wo = fc.take({D, D});
  for (auto& l : ck->layers) l.rms_ffn = fc.take({D});
  for (auto& l : ck->layers) l.w1 = fc.take({H, D});
  for (auto& l : ck->layers) l.w2 = fc.take({D, H});
  for (auto& l : ck->layers) l.w3 = fc.take({H, D});
  ck->rms_final = fc.take({D});
  fc.take({h.seq_len, static_cast<int64_t>(head_size / 2)});  // freq_cis_real (unused)
  fc.take({h.seq_len, static_cast<int64_t>(head_size / 2)});  // freq_cis_imag (unused)
  ck->wcls = h.shared_classifier ? ck->tok_embeddings : fc.take({h.vocab_size, D});
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
