// The JSON Schema compiler over a corpus of schemas, one or more per supported keyword, each
// with valid instances (the grammar must match them) and invalid ones (it must not); and
// every unsupported keyword refused by name.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/read_file.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace triattn::grammar::test {
namespace {

using ojson = nlohmann::ordered_json;

TEST(JsonSchema, CorpusValidAcceptedInvalidRejected) {
  const ojson corpus = ojson::parse(read_file(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/json_schema_corpus.json"));
  ASSERT_GT(corpus.size(), 30u);
  for (const ojson& c : corpus) {
    const std::string kw = c["keyword"];
    Grammar g;
    ASSERT_NO_THROW(g = parse_gbnf(json_schema_to_gbnf(c["schema"]))) << kw;
    for (const ojson& v : c["valid"]) {
      EXPECT_TRUE(matches(g, v.dump())) << kw << ": valid " << v.dump();
      EXPECT_TRUE(matches(g, " " + v.dump() + "\n")) << kw << ": valid with whitespace around";
    }
    for (const ojson& v : c["invalid"]) EXPECT_FALSE(matches(g, v.dump())) << kw << ": invalid " << v.dump();
  }
}

TEST(JsonSchema, WhitespaceInsideObjectsAndArrays) {
  const Grammar g = parse_gbnf(json_schema_to_gbnf(ojson::parse(
      R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]})")));
  EXPECT_TRUE(matches(g, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"));
  EXPECT_TRUE(matches(g, "{ \"a\" : [ 1 , 2 ] }"));
}

TEST(JsonSchema, JsonObjectIsAnyObject) {
  const Grammar g = parse_gbnf(json_object_gbnf());
  EXPECT_TRUE(matches(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, R"({"a": })"));
  EXPECT_FALSE(matches(g, R"({a: 1})"));
}

std::string refusal(const std::string& schema) {
  try {
    json_schema_to_gbnf(ojson::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, RefusesWhatItDoesNotSupportByName) {
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {"a": {"type": "string", "contentEncoding": "base64"}}})"),
            "JSON schema at #/properties/a: the keyword 'contentEncoding' is not supported");
  for (const char* kw : {"allOf", "not", "if", "patternProperties", "uniqueItems", "multipleOf", "minProperties",
                         "dependentRequired", "contains"})
    EXPECT_NE(refusal(std::string(R"({")") + kw + R"(": 1})").find(std::string("'") + kw + "' is not supported"),
              std::string::npos)
        << kw;
  EXPECT_NE(refusal(R"({"type": "string", "format": "email"})").find("'format' 'email' is not supported"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "number", "minimum": 3.5, "exclusiveMaximum": 3.5})").find("no number lies between"),
            std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "(?=a)"})j").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "(a)\\1"})j").find("back-reference"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "http://example.com/s.json"})").find("only references inside the schema"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("no integer lies between"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})").find("'required' names 'b'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": true})")
                .find("'additionalProperties' other than false alongside 'properties'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "text"})").find("'type' 'text' is not a JSON Schema type"), std::string::npos);
  EXPECT_NE(refusal("false").find("matches nothing"), std::string::npos);
}

TEST(JsonSchema, AnnotationsHaveNoEffect) {
  const Grammar g = parse_gbnf(json_schema_to_gbnf(ojson::parse(
      R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
          "type": "integer", "default": 3, "examples": [1], "$comment": "c"})")));
  EXPECT_TRUE(matches(g, "12"));
  EXPECT_FALSE(matches(g, "\"12\""));
}

}  // namespace
}  // namespace triattn::grammar::test
