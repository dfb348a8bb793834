#pragma once
// The request fields that constrain decoding: `response_format` ({type: text | json_object |
// json_schema {name, schema, strict}}) and `grammar` (GBNF text, as llama-server takes it),
// compiled into what the engine masks the vocabulary with. Every refusal is an ApiError
// (400) naming the field and what in it is not supported, or what the vocabulary cannot
// spell.
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "grammar/token_mask.h"
#include "grammar/vocab_trie.h"

namespace triattn::server {

// The last few grammars compiled for this server's vocabulary, by their GBNF text: a client
// that sends the same schema again gets the masker whose caches earlier requests warmed.
// Safe from any thread; the maskers themselves are used by the inference thread only.
class GrammarCache {
 public:
  static constexpr size_t kEntries = 4;
  // The cached masker for this text, or null.
  std::shared_ptr<grammar::TokenMasker> find(const std::string& gbnf);
  void put(const std::string& gbnf, std::shared_ptr<grammar::TokenMasker> m);

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<grammar::TokenMasker>>> lru_;  // most recent first
};

// Null when the request asks for free text. raw_body: the request's text, read again in
// order so that properties are generated in the order the schema lists them (null: the
// parsed body's order).
// cache: may be null.
std::shared_ptr<grammar::TokenMasker> grammar_of_request(const nlohmann::json& body, const std::string* raw_body,
                                                         std::shared_ptr<const grammar::VocabTrie> vocab,
                                                         GrammarCache* cache = nullptr);

// A grammar's masker, from the cache or compiled (and kept there); refusals name `field`: a
// text that does not parse, a grammar this vocabulary cannot spell.
std::shared_ptr<grammar::TokenMasker> compile_grammar(const std::string& gbnf, const std::string& field,
                                                      std::shared_ptr<const grammar::VocabTrie> vocab,
                                                      GrammarCache* cache = nullptr);

}  // namespace triattn::server
