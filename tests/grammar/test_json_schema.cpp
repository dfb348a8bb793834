// The JSON Schema compiler beside its corpus (test_json_schema_corpus.cpp): white space,
// json_object, and every unsupported keyword refused by name.
#include <gtest/gtest.h>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace triattn::grammar::test {
namespace {

using ojson = nlohmann::ordered_json;

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
  for (const char* kw : {"allOf", "not", "if", "then", "else", "patternProperties", "propertyNames", "uniqueItems",
                         "multipleOf", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
                         "contains", "minContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
                         "$anchor", "contentMediaType"})
    EXPECT_NE(refusal(std::string(R"({")") + kw + R"(": 1})").find(std::string("'") + kw + "' is not supported"),
              std::string::npos)
        << kw;
  EXPECT_NE(refusal(R"({"type": "string", "format": "email"})").find("'format' 'email' is not supported"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "number", "minimum": 3.5, "exclusiveMaximum": 3.5})").find("no number lies between"),
            std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "(?=a)"})j").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "(a)\\1"})j").find("back-reference"), std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "^[]a]$"})j").find("the empty class []"), std::string::npos);
  EXPECT_NE(refusal(R"j({"type": "string", "pattern": "[^]"})j").find("the class [^]"), std::string::npos);
  for (const char* q : {"{,2}", "{2,1}", "{1,x}", "{}"})
    EXPECT_NE(refusal(std::string(R"({"type": "string", "pattern": "a)") + q + "\"}").find(std::string("the quantifier ") + q),
              std::string::npos)
        << q;
  EXPECT_NE(refusal(R"({"$ref": "http://example.com/s.json"})").find("only references inside the schema"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"$defs": {"n": {"type": "null"}}, "properties": {"a": {"$id": "http://example.com/a",
                "$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}}})")
                .find("JSON schema at #/properties/a/items: '$ref' inside a schema with its own '$id'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("no integer lies between"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})").find("'required' names 'b'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": true})")
                .find("'additionalProperties' other than false alongside 'properties'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "text"})").find("'type' 'text' is not a JSON Schema type"), std::string::npos);
  EXPECT_NE(refusal("false").find("matches nothing"), std::string::npos);
  // enum and const take `type` beside them (their values of another type drop out), nothing else.
  EXPECT_NE(refusal(R"({"enum": ["a", "bb"], "maxLength": 1})").find("'maxLength' alongside 'enum' is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"const": 3, "minimum": 4})").find("'minimum' alongside 'const' is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "string", "enum": [1, null]})").find("matches nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"const": "c", "enum": ["a", "b"]})").find("matches nothing"), std::string::npos);
}

// A property named like the path of another schema ("a/properties/b") gets its own rule:
// schema paths escape their names as JSON pointers do.
TEST(JsonSchema, PropertyNamesWithSlashesKeepTheirOwnSchema) {
  const Grammar g = parse_gbnf(json_schema_to_gbnf(ojson::parse(
      R"({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}},
          "a/properties/b": {"type": "string"}}, "additionalProperties": false})")));
  EXPECT_TRUE(matches(g, R"({"a": {"b": 1}, "a/properties/b": "x"})"));
  EXPECT_FALSE(matches(g, R"({"a/properties/b": 1})"));
}

// A string character is one code point: a surrogate pair escape is one (the corpus counts
// it under minLength / maxLength), a lone or reversed surrogate escape is none.
TEST(JsonSchema, SurrogateEscapesComeInPairs) {
  const Grammar g = parse_gbnf(json_schema_to_gbnf(ojson::parse(R"({"type": "string"})")));
  EXPECT_TRUE(matches(g, R"("\ud83d\ude00")"));
  EXPECT_TRUE(matches(g, R"("\uD7FF\uE000\uffff")"));
  EXPECT_FALSE(matches(g, R"("\ud83d")"));
  EXPECT_FALSE(matches(g, R"("\ude00\ud83d")"));
  EXPECT_FALSE(matches(g, R"("\ud83dx")"));
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
