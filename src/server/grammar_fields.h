#pragma once
// The request fields that constrain decoding: `response_format` ({type: text | json_object |
// json_schema {name, schema, strict}}) and `grammar` (GBNF text, as llama-server takes it),
// compiled into what the engine masks the vocabulary with. Every refusal is an ApiError
// (400) naming the field and what in it is not supported, or what the vocabulary cannot
// spell.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/token_mask.h"
#include "grammar/vocab_trie.h"

namespace triattn::server {

// Null when the request asks for free text. raw_body: the request's text, read again in
// order so that properties are generated in the order the schema lists them (null: the
// parsed body's order).
std::shared_ptr<grammar::TokenMasker> grammar_of_request(const nlohmann::json& body, const std::string* raw_body,
                                                         std::shared_ptr<const grammar::VocabTrie> vocab);

}  // namespace triattn::server
