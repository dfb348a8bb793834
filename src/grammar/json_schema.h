#pragma once
// JSON Schema to GBNF (then parse_gbnf), for response_format json_schema. The subset:
// type (one or a list, null included), properties / required / additionalProperties,
// enum / const (with type beside them, nothing else), anyOf / oneOf, $ref / $defs / definitions, items / prefixItems / minItems /
// maxItems, minLength / maxLength / pattern / format (date, time, date-time, uuid), and
// minimum / maximum / exclusiveMinimum / exclusiveMaximum (whole-number bounds). Annotations
// (title, description, default, examples, ...) are read and have no effect. Any other
// keyword throws Error naming it and where it is: a constraint is never silently dropped.
//
// What the grammar generates always validates, oneOf aside (generated as anyOf: no check that
// just one branch matches); a few valid instances are out of its reach: properties come in
// the order the schema lists them, properties not listed are generated only when
// additionalProperties says so, a schema without type as the type its keywords are about,
// integers as digits, numbers within the digit limits of `number`, enum / const values as
// the schema spells them, pattern characters without escapes, and whitespace is limited to
// what `ws` allows. tests/data/json_schema_corpus marks each such difference.
#include <string>

#include <nlohmann/json.hpp>

namespace triattn::grammar {

// Ordered: properties are generated in the order the schema lists them.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// A schema's own rules, each name starting with `prefix`, for a grammar that embeds several
// schemas (tool calls): `top` is the rule of the whole schema, without the white space
// around it. The rules they share (ws, string, value, ...) are json_common_gbnf(), added once.
struct SchemaRules {
  std::string top, rules;
};
SchemaRules json_schema_rules(const nlohmann::ordered_json& schema, const std::string& prefix);
std::string json_common_gbnf();
// Any JSON object (response_format json_object).
std::string json_object_gbnf();

}  // namespace triattn::grammar
