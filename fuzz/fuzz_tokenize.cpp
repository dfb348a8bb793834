// Encode and decode of arbitrary bytes with every real vocabulary in ../shared (SentencePiece
// from llama2.c, GGUF and tokenizer.json; byte-level BPE from GGUF, tokenizer.json, vocab.json
// + merges.txt and tiktoken). Input: byte 0 picks the tokenizer, byte 1 the flags (add_bos,
// parse_special, render_special), the rest is the text; the same bytes read as int32 ids
// (reduced into the vocabulary) are decoded whole and streamed.
#include <cstring>
#include <memory>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

using namespace triattn;

namespace {

std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<Tokenizer>> t;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string shared = TRIATTN_SHARED_DIR;
  for (const char* rel : {"/models/stories260k/tok512.bin", "/models/tinystories-656k/TinyStories-656K-Q8_0.gguf",
                          "/models/tinystories-656k", "/models/bytelm-2k", "/tokenizers/ggml-vocab-gpt-2.gguf",
                          "/tokenizers/ggml-vocab-llama-spm.gguf", "/tokenizers/ggml-vocab-phi-3.gguf",
                          "/tokenizers/ggml-vocab-deepseek-coder.gguf", "/tokenizers/ggml-vocab-deepseek-llm.gguf",
                          "/tokenizers/ggml-vocab-falcon.gguf", "/tokenizers/ggml-vocab-starcoder.gguf",
                          "/tokenizers/qwen2", "/tokenizers/llama3"}) {
    try {
      tokenizers().push_back(load_tokenizer_any(shared + rel));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_tokenize: cannot load %s%s: %s\n", shared.c_str(), rel, e.what());
      std::abort();
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Tokenizer& tok = *tokenizers()[data[0] % tokenizers().size()];
  const uint8_t flags = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  fuzz::expect_named_errors([&] {
    const std::vector<int32_t> ids = tok.encode(text, flags & 1, flags & 2);
    const int32_t n = tok.vocab_size();
    for (int32_t id : ids) {
      if (id < 0 || id >= n) {
        std::fprintf(stderr, "fuzz_tokenize: encode gave id %d outside the vocabulary of %d\n", id, n);
        std::abort();
      }
    }
    (void)tok.decode(ids, flags & 4);
    std::vector<int32_t> raw((size - 2) / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data + 2, raw.size() * 4);
    for (int32_t& id : raw) id = static_cast<int32_t>(static_cast<uint32_t>(id) % static_cast<uint32_t>(n));
    (void)tok.decode(raw, flags & 4);
    StreamDecoder sd(tok, flags & 8);
    for (int32_t id : raw) (void)sd.push(id);
    (void)sd.flush();
  });
  return 0;
}
