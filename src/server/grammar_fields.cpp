#include "server/grammar_fields.h"

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;

[[noreturn]] void refuse_grammar_field(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field);
}

// The schema of response_format.json_schema, in the order the client wrote it.
nlohmann::ordered_json ordered_schema(const json& schema, const std::string* raw_body) {
  if (raw_body) {
    try {
      const auto whole = nlohmann::ordered_json::parse(*raw_body);
      return whole.at("response_format").at("json_schema").at("schema");
    } catch (const nlohmann::ordered_json::exception&) {
    }
  }
  return nlohmann::ordered_json::parse(schema.dump());
}

}  // namespace

std::shared_ptr<grammar::TokenMasker> GrammarCache::find(const std::string& gbnf) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (it->first == gbnf) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().second;
    }
  return nullptr;
}

void GrammarCache::put(const std::string& gbnf, std::shared_ptr<grammar::TokenMasker> m) {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.emplace_front(gbnf, std::move(m));
  if (lru_.size() > kEntries) lru_.pop_back();
}

std::shared_ptr<grammar::TokenMasker> grammar_of_request(const json& body, const std::string* raw_body,
                                                         std::shared_ptr<const grammar::VocabTrie> vocab,
                                                         GrammarCache* cache) {
  std::string gbnf, field;
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
    const json& rf = *it;
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
      refuse_grammar_field("response_format", "must be an object with a 'type': \"text\", \"json_object\" or \"json_schema\"");
    const std::string type = rf["type"].get<std::string>();
    field = "response_format";
    if (type == "json_object") {
      gbnf = grammar::json_object_gbnf();
    } else if (type == "json_schema") {
      const json* js = rf.contains("json_schema") ? &rf["json_schema"] : nullptr;
      if (!js || !js->is_object()) refuse_grammar_field("response_format.json_schema", "must be an object {name, schema, strict}");
      for (auto k = js->begin(); k != js->end(); ++k)
        if (k.key() != "name" && k.key() != "schema" && k.key() != "strict" && k.key() != "description")
          refuse_grammar_field("response_format.json_schema." + k.key(), "is not supported (name, description, schema and strict are)");
      if (js->contains("strict") && !(*js)["strict"].is_boolean() && !(*js)["strict"].is_null())
        refuse_grammar_field("response_format.json_schema.strict", "must be true or false");
      field = "response_format.json_schema.schema";
      const json schema = js->contains("schema") ? (*js)["schema"] : json::object();
      try {
        gbnf = grammar::json_schema_to_gbnf(ordered_schema(schema, raw_body));
      } catch (const Error& e) {
        refuse_grammar_field(field, std::string("is not supported: ") + e.what());
      }
    } else if (type != "text") {
      refuse_grammar_field("response_format.type", "'" + type + "' is not supported (text, json_object and json_schema are)");
    }
  }
  if (auto it = body.find("grammar"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) refuse_grammar_field("grammar", "must be a string (a GBNF grammar)");
    if (!gbnf.empty()) refuse_grammar_field("grammar", "cannot be combined with a JSON response_format (send one of them)");
    gbnf = it->get<std::string>();
    field = "grammar";
    if (gbnf.empty()) return nullptr;
  }
  if (gbnf.empty()) return nullptr;
  return compile_grammar(gbnf, field, std::move(vocab), cache);
}

std::shared_ptr<grammar::TokenMasker> compile_grammar(const std::string& gbnf, const std::string& field,
                                                      std::shared_ptr<const grammar::VocabTrie> vocab,
                                                      GrammarCache* cache) {
  if (cache)
    if (auto m = cache->find(gbnf)) return m;
  std::shared_ptr<grammar::Grammar> g;
  try {
    g = std::make_shared<grammar::Grammar>(grammar::parse_gbnf(gbnf));
  } catch (const Error& e) {
    refuse_grammar_field(field, std::string("is not a valid grammar: ") + e.what());
  }
  try {
    grammar::check_spellable(*g, *vocab);
  } catch (const Error& e) {
    refuse_grammar_field(field, std::string("cannot be generated with this model: ") + e.what());
  }
  auto m = std::make_shared<grammar::TokenMasker>(std::move(g), std::move(vocab));
  if (cache) cache->put(gbnf, m);
  return m;
}

}  // namespace triattn::server
