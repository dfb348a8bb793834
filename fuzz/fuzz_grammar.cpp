// Constrained decoding's inputs: a GBNF grammar (the `grammar` field) and a JSON schema
// (response_format json_schema), each compiled and then walked by the recognizer and the
// vocabulary mask for a few steps over a small synthetic vocabulary (every byte, some
// multi-byte pieces, an end-of-generation token), as the engine would.
// Input: GBNF text | JSON schema. Either may be garbage: a named Error is the expected end.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/json_depth.h"

using namespace triattn;

namespace {

std::shared_ptr<const grammar::VocabTrie> small_vocab() {
  static const auto v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s : {"{\"", "\":", "\",", "\"}", "true", "null", "12", "ab", " \"", "\xC3\xA9", "\xE6\x97", "-0."})
      bytes.push_back(s);
    bytes.push_back("");  // end of generation
    const int32_t eog = static_cast<int32_t>(bytes.size() - 1);
    return std::make_shared<const grammar::VocabTrie>(std::move(bytes), std::vector<int32_t>{eog});
  }();
  return v;
}

// A few steps of generation: always the allowed token with the lowest id past a moving
// start, so different inputs take different paths.
void walk(grammar::Grammar g, size_t salt) {
  auto masker = std::make_shared<grammar::TokenMasker>(std::make_shared<const grammar::Grammar>(std::move(g)), small_vocab());
  grammar::Constraint c(masker);
  const size_t n = small_vocab()->vocab_size();
  for (int step = 0; step < 24 && !c.finished(); ++step) {
    const grammar::TokenBits& m = c.allowed();
    int32_t pick = -1;
    for (size_t k = 0; k < n && pick < 0; ++k) {
      const size_t id = (salt + static_cast<size_t>(step) * 7 + k) % n;
      if (grammar::test_bit(m, id)) pick = static_cast<int32_t>(id);
    }
    if (pick < 0) break;
    if (!c.accept(pick)) std::abort();  // the mask allowed it: the grammar must take it
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split(data, size, 2);
  fuzz::expect_named_errors([&] {
    grammar::Grammar g = grammar::parse_gbnf(parts[0]);
    grammar::check_spellable(g, *small_vocab());
    walk(std::move(g), parts[0].size());
  });
  if (server::json_too_deep(std::string(parts[1]), 64)) return 0;  // the server refuses these first
  const auto schema = nlohmann::ordered_json::parse(parts[1], nullptr, false);
  if (schema.is_discarded()) return 0;
  fuzz::expect_named_errors([&] {
    grammar::Grammar g = grammar::parse_gbnf(grammar::json_schema_to_gbnf(schema));
    walk(std::move(g), parts[1].size());
  });
  return 0;
}
