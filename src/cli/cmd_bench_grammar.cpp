// triattn bench-grammar: the cost of constrained decoding's per-token mask on a real
// vocabulary. Valid instances of a JSON schema are tokenized and replayed token by token:
// before each token the mask is computed (as the sampler would ask for it) and the token
// must be in it. Prints the vocabulary, the one-off costs and the mean mask time per token.
#include <chrono>
#include <cstdio>
#include <random>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/read_file.h"
#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace triattn::cli {

namespace {

using ojson = nlohmann::ordered_json;

double bench_grammar_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A nested schema with enums, arrays, patterns, formats and bounds (the default).
const char* kSchema = R"({"type": "object", "properties": {
  "id": {"type": "string", "format": "uuid"},
  "name": {"type": "string", "minLength": 1, "maxLength": 40},
  "status": {"enum": ["active", "inactive", "pending"]},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string", "pattern": "^[a-z0-9._]+@[a-z0-9]+\\.[a-z]{2,4}$"},
  "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}, "maxItems": 8},
  "address": {"type": "object", "properties": {
    "street": {"type": "string"}, "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^\\d{5}$"}},
    "required": ["street", "city", "zip"]},
  "orders": {"type": "array", "items": {"type": "object", "properties": {
    "sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
    "qty": {"type": "integer", "minimum": 1, "maximum": 99},
    "price": {"type": "number", "minimum": 0}},
    "required": ["sku", "qty", "price"]}},
  "created": {"type": "string", "format": "date-time"}},
  "required": ["id", "name", "status", "age", "tags", "address", "orders", "created"]})";

// Instances of the default schema, varied by the seed.
ojson instance(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + static_cast<long>(rng() % xs.size())));
  };
  ojson o;
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(rng()),
                static_cast<unsigned>(rng() & 0xFFFFu), static_cast<unsigned>(rng() & 0xFFFFu),
                static_cast<unsigned>(rng() & 0xFFFFu), static_cast<unsigned long long>(rng()) * 4099ULL % 0xFFFFFFFFFFFFULL);
  o["id"] = uuid;
  o["name"] = pick({"Ada Lovelace", "Zoë Ångström", "李小龙", "Jean-Luc Picard", "O'Brien \"Chief\""});
  o["status"] = pick({"active", "inactive", "pending"});
  o["age"] = rng() % 151;
  o["email"] = pick({"ada@example.com", "zoe.a@mail.org", "x_1@host.io"});
  ojson tags = ojson::array();
  for (unsigned i = 0, n = rng() % 5; i < n; ++i) tags.push_back(pick({"vip", "new-user", "beta", "eu-west-1", "x"}));
  o["tags"] = tags;
  o["address"] = {{"street", pick({"12 Rue de la Paix", "221B Baker Street", "1600 Amphitheatre Pkwy"})},
                  {"city", pick({"Paris", "London", "Mountain View", "東京"})},
                  {"zip", std::to_string(10000 + rng() % 90000)}};
  ojson orders = ojson::array();
  for (unsigned i = 0, n = 1 + rng() % 3; i < n; ++i)
    orders.push_back({{"sku", pick({"ABC-", "XYZ-", "QRS-"}) + std::to_string(1000 + rng() % 9000)},
                      {"qty", 1 + rng() % 99},
                      {"price", static_cast<double>(rng() % 100000) / 100.0}});
  o["orders"] = orders;
  o["created"] = "2025-0" + std::to_string(1 + rng() % 9) + "-1" + std::to_string(rng() % 10) + "T12:34:56Z";
  return o;
}

}  // namespace

int cmd_bench_grammar(const std::vector<std::string>& args) {
  CLI::App app{"Measure the grammar mask per token (constrained decoding) on a vocabulary", "triattn bench-grammar"};
  std::string vocab_path = "../shared/tokenizers/qwen2", schema_path;
  int instances = 20;
  size_t vocab_size = 151936;
  unsigned seed = 1;
  app.add_option("--vocab", vocab_path, "tokenizer: any path `triattn tokenize` takes (a Qwen2/3 one has 151,936 ids)")
      ->capture_default_str();
  app.add_option("--schema", schema_path, "a JSON schema file (default: a built-in nested schema; its instances "
                                          "are then generated, otherwise --instances is ignored and none are)");
  app.add_option("--vocab-size", vocab_size, "the model's vocabulary (logits), padding the tokenizer's")
      ->capture_default_str();
  app.add_option("--instances", instances, "instances replayed, each token by token")->capture_default_str();
  app.add_option("--seed", seed, "seed of the generated instances")->capture_default_str();
  bool print_schema = false;
  app.add_flag("--print-schema", print_schema,
               "print the schema measured and exit (for timing the same schema through a server)");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (print_schema) {
    std::printf("%s\n", (schema_path.empty() ? ojson::parse(kSchema) : ojson::parse(read_file(schema_path))).dump().c_str());
    return 0;
  }

  auto t = std::chrono::steady_clock::now();
  auto tok = load_tokenizer_any(vocab_path);
  // Qwen3's model vocabulary pads the tokenizer's to 151,936 ids; padding spells nothing and
  // is never allowed, but the mask covers it as the sampler's logits do.
  auto vocab = std::make_shared<const grammar::VocabTrie>(grammar::VocabTrie::from_tokenizer(*tok, vocab_size));
  const double trie_s = bench_grammar_seconds(t);
  const ojson schema = schema_path.empty() ? ojson::parse(kSchema) : ojson::parse(read_file(schema_path));
  t = std::chrono::steady_clock::now();
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(grammar::json_schema_to_gbnf(schema)));
  grammar::check_spellable(*g, *vocab);
  const double compile_s = bench_grammar_seconds(t);
  auto masker = std::make_shared<grammar::TokenMasker>(g, vocab);

  std::mt19937 rng(seed);
  double total = 0, first_total = 0, max_mask = 0;
  int64_t tokens = 0, first_tokens = 0;
  for (int i = 0; i < (schema_path.empty() ? instances : 0); ++i) {
    const ojson inst = instance(rng);
    const std::string text = i % 2 ? inst.dump(2) : inst.dump();
    const std::vector<int32_t> ids = tok->encode(text, false);
    grammar::Constraint c(masker);
    for (int32_t id : ids) {
      const auto t0 = std::chrono::steady_clock::now();
      const grammar::TokenBits& m = c.allowed();
      const double s = bench_grammar_seconds(t0);
      if (!grammar::test_bit(m, static_cast<size_t>(id)))
        fail("bench-grammar: the mask refused token ", id, " of a valid instance: ", text);
      if (!c.accept(id)) fail("bench-grammar: the grammar refused token ", id);
      total += s;
      max_mask = std::max(max_mask, s);
      ++tokens;
      if (i == 0) {
        first_total += s;
        ++first_tokens;
      }
    }
    const auto& eog = vocab->eog();
    if (!eog.empty() && !grammar::test_bit(c.allowed(), static_cast<size_t>(eog.front())))
      fail("bench-grammar: the end was not allowed after a whole instance");
  }
  std::printf("vocabulary: %s, %d tokenizer ids, mask over %zu (trie built in %.1f ms)\n", vocab_path.c_str(),
              tok->vocab_size(), vocab->vocab_size(), trie_s * 1e3);
  std::printf("grammar: %zu rules, %zu elements (compiled in %.1f ms)\n", g->rules.size(), g->elems.size(), compile_s * 1e3);
  if (tokens == 0) return 0;
  std::printf("mask per token: mean %.3f ms over %lld tokens of %d instances; first instance (cold caches) %.3f ms, "
              "later ones %.3f ms; slowest %.3f ms\n",
              total / static_cast<double>(tokens) * 1e3, static_cast<long long>(tokens), instances,
              first_total / static_cast<double>(first_tokens) * 1e3,
              tokens > first_tokens ? (total - first_total) / static_cast<double>(tokens - first_tokens) * 1e3 : 0.0,
              max_mask * 1e3);
  return 0;
}

}  // namespace triattn::cli
