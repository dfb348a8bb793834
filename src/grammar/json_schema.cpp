#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "grammar/schema_parts.h"

namespace triattn::grammar {

namespace {

using json = nlohmann::ordered_json;

// The rules every schema grammar shares: whitespace, strings, numbers, any value. A char is
// one code point (minLength counts them): a surrogate pair escape is one, a lone surrogate none.
const char* kCommonRules = R"(ws ::= (" " | "\n" [ \t]{0,20})?
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2}))
string ::= "\"" char* "\""
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"
array ::= "[" ws (value (ws "," ws value)*)? ws "]"
)";

// Keywords that only annotate: read, no effect on what validates.
const std::set<std::string> kAnnotations = {"$schema", "$id", "$comment", "title", "description", "default",
                                            "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
const std::set<std::string> kHandled = {"type", "properties", "required", "additionalProperties", "enum", "const",
                                        "anyOf", "oneOf", "$ref", "items", "prefixItems", "minItems", "maxItems",
                                        "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
                                        "exclusiveMinimum", "exclusiveMaximum"};

std::string rule_name(const std::string& path) {
  std::string s;
  for (char c : path) s += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  while (s.find("--") != std::string::npos) s.replace(s.find("--"), 2, "-");
  while (!s.empty() && s.back() == '-') s.pop_back();
  while (!s.empty() && s.front() == '-') s.erase(0, 1);
  return "s-" + (s.empty() ? std::string("root") : s);
}

// A name as a JSON pointer token, so that a schema's path names it alone ("a/b" is "a~1b").
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// JSON equality: objects whatever their members' order, numbers by value (1 == 1.0).
bool same_value(const json& a, const json& b) {
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !same_value(it.value(), b[it.key()])) return false;
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

bool has_type(const json& v, const std::string& t) {
  if (t == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return (t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) || (t == "string" && v.is_string()) ||
         (t == "number" && v.is_number()) || (t == "array" && v.is_array()) || (t == "object" && v.is_object());
}

class Compiler {
 public:
  Compiler(const json& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

  std::string run() {
    const SchemaRules r = own_rules();
    return "root ::= ws " + r.top + " ws\n" + kCommonRules + r.rules;
  }

  SchemaRules own_rules() {
    SchemaRules r;
    r.top = schema_rule(root_, "#");
    for (const auto& [name, body] : rules_) r.rules += name + " ::= " + body + "\n";
    return r;
  }

 private:
  [[noreturn]] void bad(const std::string& path, const std::string& what) const {
    fail("JSON schema at ", path, ": ", what);
  }

  // A rule for the schema at `path` (compiled once per path: $ref cycles end here).
  std::string schema_rule(const json& s, const std::string& path) {
    auto it = names_.find(path);
    if (it != names_.end()) return it->second;
    std::string name = prefix_ + rule_name(path);
    while (rules_.count(name)) name += "x";
    names_[path] = name;
    rules_[name] = "";  // reserved while compiling (recursion)
    rules_[name] = expr(s, path);
    return name;
  }

  const json& resolve(const std::string& ref, const std::string& path) const {
    if (ref.empty() || ref[0] != '#') bad(path, "$ref '" + ref + "' is not supported (only references inside the schema, '#...')");
    try {
      return root_.at(json::json_pointer(ref.substr(1)));
    } catch (const json::exception&) {
      bad(path, "$ref '" + ref + "' points to nothing in the schema");
    }
  }

  // Whether a schema on the way from the root to `path` (a JSON pointer into it) has an
  // `$id`: "#..." references there are relative to that schema, not to the root.
  bool nested_id(const std::string& path) const {
    try {
      for (json::json_pointer p(path.substr(1)); !p.empty(); p = p.parent_pointer()) {
        const json& node = root_.at(p);
        if (node.is_object() && node.contains("$id")) return true;
      }
    } catch (const json::exception&) {
      // Every path is a pointer into the root by construction: nothing to check otherwise.
    }
    return false;
  }

  static std::optional<Bound> bound(const json& s, const char* incl, const char* excl, bool integer, bool lower,
                                    const std::string& path, const Compiler& c) {
    std::optional<Bound> out;
    auto take = [&](const char* key, bool exclusive) {
      if (!s.contains(key)) return;
      const json& v = s[key];
      if (v.is_boolean()) c.bad(path, std::string("'") + key + "' as a boolean (draft 4) is not supported");
      if (!v.is_number()) c.bad(path, std::string("'") + key + "' must be a number");
      const double d = v.get<double>();
      if (!std::isfinite(d) || std::fabs(d) > 1e18) c.bad(path, std::string("'") + key + "' is out of range");
      Bound b;
      if (std::floor(d) == d) {
        b = {static_cast<int64_t>(d), exclusive};
      } else {  // an integer above 2.5 is one >= 3
        b = {static_cast<int64_t>(lower ? std::ceil(d) : std::floor(d)), false};
      }
      // The tighter of minimum and exclusiveMinimum (or maximum ones).
      if (!out) {
        out = b;
      } else {
        const int64_t a = out->value, bv = b.value;
        if (lower ? (bv > a || (bv == a && b.exclusive)) : (bv < a || (bv == a && b.exclusive))) out = b;
      }
    };
    take(incl, false);
    take(excl, true);
    return out;
  }

  // The tighter of a number's inclusive and exclusive bound on one side.
  static std::optional<RealBound> real_bound(const json& s, const char* incl, const char* excl, bool lower,
                                             const std::string& path, const Compiler& c) {
    std::optional<RealBound> out;
    for (const char* key : {incl, excl}) {
      if (!s.contains(key)) continue;
      const json& v = s[key];
      if (v.is_boolean()) c.bad(path, std::string("'") + key + "' as a boolean (draft 4) is not supported");
      if (!v.is_number()) c.bad(path, std::string("'") + key + "' must be a number");
      const RealBound b{v.get<double>(), key == excl};
      if (!std::isfinite(b.value) || std::fabs(b.value) > 1e18) c.bad(path, std::string("'") + key + "' is out of range");
      if (!out || (lower ? (b.value > out->value || (b.value == out->value && b.exclusive))
                         : (b.value < out->value || (b.value == out->value && b.exclusive))))
        out = b;
    }
    return out;
  }

  // A JSON value as GBNF, with the white space `ws` allows between its tokens.
  std::string literal(const json& v) {
    std::string s;
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it)
        s += (s.empty() ? "" : " ws \",\" ws ") + gbnf_literal(json(it.key()).dump()) + " ws \":\" ws " +
             literal(it.value());
      return "\"{\" ws " + (s.empty() ? "" : s + " ws ") + "\"}\"";
    }
    if (v.is_array()) {
      for (const json& x : v) s += (s.empty() ? "" : " ws \",\" ws ") + literal(x);
      return "\"[\" ws " + (s.empty() ? "" : s + " ws ") + "\"]\"";
    }
    return gbnf_literal(v.dump());
  }

  std::vector<std::string> types_of(const json& s, const std::string& path) const {
    std::vector<std::string> types;
    const json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const json& x : t) {
        if (!x.is_string()) bad(path, "'type' must be a string or a list of strings");
        types.push_back(x.get<std::string>());
      }
    } else {
      bad(path, "'type' must be a string or a non-empty list of strings");
    }
    for (const std::string& x : types)
      if (!std::set<std::string>{"null", "boolean", "string", "number", "integer", "array", "object"}.count(x))
        bad(path, "'type' '" + x + "' is not a JSON Schema type");
    return types;
  }

  // enum / const: the values that are in both (when both are given) and of the `type`; any
  // other keyword beside them is refused rather than dropped.
  std::string literals(const json& s, const std::string& path) {
    const char* kw = s.contains("const") ? "const" : "enum";
    for (auto it = s.begin(); it != s.end(); ++it)
      if (kHandled.count(it.key()) && it.key() != "enum" && it.key() != "const" && it.key() != "type")
        bad(path, "'" + it.key() + "' alongside '" + kw + "' is not supported");
    if (s.contains("enum") && (!s["enum"].is_array() || s["enum"].empty()))
      bad(path, "'enum' must be a non-empty list");
    const std::vector<std::string> types = s.contains("type") ? types_of(s, path) : std::vector<std::string>{};
    const json candidates = s.contains("const") ? json::array({s["const"]}) : s["enum"];
    std::vector<json> values;
    for (const json& v : candidates) {
      const bool in_enum = !s.contains("enum") || std::any_of(s["enum"].begin(), s["enum"].end(),
                                                              [&](const json& e) { return same_value(e, v); });
      const bool typed = types.empty() || std::any_of(types.begin(), types.end(),
                                                      [&](const std::string& t) { return has_type(v, t); });
      if (in_enum && typed) values.push_back(v);
    }
    if (values.empty()) bad(path, std::string("no value of '") + kw + "' fits the rest of the schema: it matches nothing");
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) out += (i ? " | " : "") + literal(values[i]);
    return out;
  }

  std::string expr(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) bad(path, "the schema 'false' matches nothing");
      return "value";
    }
    if (!s.is_object()) bad(path, "a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kAnnotations.count(it.key()) && !kHandled.count(it.key()))
        bad(path, "the keyword '" + it.key() + "' is not supported");
    if (s.contains("$ref")) {
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != "$ref" && kHandled.count(it.key())) bad(path, "'" + it.key() + "' alongside '$ref' is not supported");
      if (!s["$ref"].is_string()) bad(path, "'$ref' must be a string");
      const std::string ref = s["$ref"].get<std::string>();
      if (nested_id(path))
        bad(path, "'$ref' inside a schema with its own '$id' (a new base for references) is not supported");
      return schema_rule(resolve(ref, path), ref);
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != k && kHandled.count(it.key()))
          bad(path, "'" + it.key() + "' alongside '" + k + "' is not supported (move it into each branch)");
      const json& list = s[k];
      if (!list.is_array() || list.empty()) bad(path, std::string("'") + k + "' must be a non-empty list of schemas");
      std::string out;
      for (size_t i = 0; i < list.size(); ++i)
        out += (i ? " | " : "") + schema_rule(list[i], path + "/" + k + "/" + std::to_string(i));
      return out;
    }
    if (s.contains("const") || s.contains("enum")) return literals(s, path);
    std::vector<std::string> types;
    if (s.contains("type")) {
      types = types_of(s, path);
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      types = {"object"};
    } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) {
      types = {"array"};
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format")) {
      types = {"string"};
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
               s.contains("exclusiveMaximum")) {
      types = {"number"};
    } else {
      return "value";
    }
    std::string out;
    for (size_t i = 0; i < types.size(); ++i) out += (i ? " | " : "") + typed(s, types[i], path);
    return out;
  }

  std::string typed(const json& s, const std::string& t, const std::string& path) {
    if (t == "null") return "null";
    if (t == "boolean") return "boolean";
    if (t == "string") return string_expr(s, path);
    if (t == "integer" || t == "number") {
      const bool integer = t == "integer";
      try {
        if (integer) {
          auto lo = bound(s, "minimum", "exclusiveMinimum", true, true, path, *this);
          auto hi = bound(s, "maximum", "exclusiveMaximum", true, false, path, *this);
          return lo || hi ? "(" + integer_range_gbnf(lo, hi) + ")" : "integer";
        }
        auto lo = real_bound(s, "minimum", "exclusiveMinimum", true, path, *this);
        auto hi = real_bound(s, "maximum", "exclusiveMaximum", false, path, *this);
        return lo || hi ? "(" + number_range_gbnf(lo, hi) + ")" : "number";
      } catch (const Error& e) {
        bad(path, e.what());
      }
    }
    if (t == "array") return array_expr(s, path);
    if (t == "object") return object_expr(s, path);
    bad(path, "'type' '" + t + "' is not a JSON Schema type");
  }

  static int64_t count(const json& s, const char* key, int64_t fallback, const std::string& path, const Compiler& c) {
    if (!s.contains(key)) return fallback;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) c.bad(path, std::string("'") + key + "' must be a whole number >= 0");
    if (v.get<int64_t>() > 10000) c.bad(path, std::string("'") + key + "' above 10000 is not supported");
    return v.get<int64_t>();
  }

  std::string string_expr(const json& s, const std::string& path) {
    const int64_t lo = count(s, "minLength", 0, path, *this), hi = count(s, "maxLength", -1, path, *this);
    if (hi >= 0 && hi < lo) bad(path, "'maxLength' is below 'minLength'");
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
      if (lengths) bad(path, "'minLength' / 'maxLength' alongside 'pattern' is not supported (put the length in the pattern)");
      if (s.contains("format")) bad(path, "'format' alongside 'pattern' is not supported");
      if (!s["pattern"].is_string()) bad(path, "'pattern' must be a string");
      try {
        return "\"\\\"\" " + regex_to_gbnf(s["pattern"].get<std::string>(), "char") + " \"\\\"\"";
      } catch (const Error& e) {
        bad(path, e.what());
      }
    }
    if (s.contains("format")) {
      if (lengths) bad(path, "'minLength' / 'maxLength' alongside 'format' is not supported");
      if (!s["format"].is_string()) bad(path, "'format' must be a string");
      const std::string f = s["format"].get<std::string>();
      // The day exists in its month; February 29 only in a leap year (divisible by 4, and by
      // 400 when by 100).
      const std::string month_day = std::string(R"g(("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))g") +
                                    R"g( | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30"))g" +
                                    R"g( | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]))g";
      const std::string leap_year =
          R"g([0-9]{2} ("0" [48] | [2468] [048] | [13579] [26]) | ([02468] [048] | [13579] [26]) "00")g";
      const std::string date = "([0-9]{4} \"-\" (" + month_day + ") | (" + leap_year + ") \"-02-29\")";
      const std::string time =
          R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";
      std::string body;
      if (f == "date") body = date;
      else if (f == "time") body = time;
      else if (f == "date-time") body = date + " \"T\" " + time;
      else if (f == "uuid")
        body = R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})";
      else bad(path, "'format' '" + f + "' is not supported (date, time, date-time and uuid are)");
      return "\"\\\"\" " + body + " \"\\\"\"";
    }
    if (!lengths) return "string";
    std::string rep = "char{" + std::to_string(lo) + (hi < 0 ? "," : "," + std::to_string(hi)) + "}";
    return "\"\\\"\" " + rep + " \"\\\"\"";
  }

  std::string array_expr(const json& s, const std::string& path) {
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      const json& p = s["prefixItems"];
      if (!p.is_array()) bad(path, "'prefixItems' must be a list of schemas");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(schema_rule(p[i], path + "/prefixItems/" + std::to_string(i)));
    }
    std::string item = "value";
    bool more = true;  // items after the prefix
    if (s.contains("items")) {
      const json& it = s["items"];
      if (it.is_array()) bad(path, "'items' as a list (draft 2019) is not supported; use 'prefixItems'");
      if (it.is_boolean() && !it.get<bool>()) more = false;
      else item = schema_rule(it, path + "/items");
    }
    const int64_t lo = count(s, "minItems", 0, path, *this);
    int64_t hi = count(s, "maxItems", -1, path, *this);
    if (!more) hi = hi < 0 ? static_cast<int64_t>(prefix.size()) : std::min<int64_t>(hi, static_cast<int64_t>(prefix.size()));
    if (hi >= 0 && hi < lo) bad(path, "'maxItems' (or the items allowed) is below 'minItems'");
    // Element i (0-based) is prefix[i] or item; elements up to lo are required, the rest
    // optional, nested so that each may stop the list; past the prefix an unbounded tail is
    // a repetition.
    auto elem = [&](int64_t i) { return i < static_cast<int64_t>(prefix.size()) ? prefix[static_cast<size_t>(i)] : item; };
    std::function<std::string(int64_t)> from = [&](int64_t i) -> std::string {
      if (hi >= 0 && i >= hi) return "";
      const std::string sep = i == 0 ? "" : "ws \",\" ws ";
      if (hi < 0 && i >= static_cast<int64_t>(prefix.size()) && i >= lo) {
        if (i == 0) return "(" + item + " (ws \",\" ws " + item + ")*)?";
        return "(ws \",\" ws " + item + ")*";
      }
      const std::string here = sep + elem(i) + " " + from(i + 1);
      return i < lo ? here : "(" + here + ")?";
    };
    return "\"[\" ws " + from(0) + " ws \"]\"";
  }

  std::string object_expr(const json& s, const std::string& path) {
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value rule
    std::vector<std::string> keys;
    std::set<std::string> names;
    if (s.contains("properties")) {
      const json& p = s["properties"];
      if (!p.is_object()) bad(path, "'properties' must be an object");
      for (auto it = p.begin(); it != p.end(); ++it) {
        props.push_back(
            {literal(json(it.key())), schema_rule(it.value(), path + "/properties/" + pointer_token(it.key()))});
        names.insert(it.key());
        keys.push_back(it.key());
      }
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) bad(path, "'required' must be a list of names");
      for (const json& n : r) {
        if (!n.is_string()) bad(path, "'required' must be a list of names");
        if (!names.count(n.get<std::string>()))
          bad(path, "'required' names '" + n.get<std::string>() + "', which 'properties' does not define (not supported)");
        required.insert(n.get<std::string>());
      }
    }
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      const bool none = a.is_boolean() && !a.get<bool>();
      if (!none) {
        if (!props.empty())
          bad(path, "'additionalProperties' other than false alongside 'properties' is not supported");
        const std::string v = a.is_boolean() ? "value" : schema_rule(a, path + "/additionalProperties");
        return "\"{\" ws (string ws \":\" ws " + v + " (ws \",\" ws string ws \":\" ws " + v + ")*)? ws \"}\"";
      }
    } else if (props.empty()) {
      return "object";
    }
    // Properties in the listed order, each optional one skippable: body(i) before anything
    // is written, after(i) once something is (so it starts with a comma).
    if (props.empty()) return "\"{\" ws \"}\"";
    std::vector<bool> req;
    for (const std::string& k : keys) req.push_back(required.count(k) > 0);
    const size_t n = props.size();
    auto kv = [&](size_t i) { return props[i].first + " ws \":\" ws " + props[i].second; };
    std::vector<std::string> after(n + 1), body(n + 1);
    std::string base = prefix_ + rule_name(path) + "-o";
    while (rules_.count(base + "-body0")) base += "x";
    for (size_t k = n + 1; k-- > 0;) {
      if (k == n) {
        after[k] = body[k] = "\"\"";
        continue;
      }
      const std::string a = base + "-after" + std::to_string(k), b = base + "-body" + std::to_string(k);
      const std::string next_after = k + 1 == n ? "" : " " + base + "-after" + std::to_string(k + 1);
      const std::string next_body = k + 1 == n ? "\"\"" : base + "-body" + std::to_string(k + 1);
      std::string ra = "ws \",\" ws " + kv(k) + next_after;
      std::string rb = kv(k) + next_after;
      if (!req[k]) {
        ra += " | " + (k + 1 == n ? std::string("\"\"") : base + "-after" + std::to_string(k + 1));
        rb += " | " + next_body;
      }
      rules_[a] = ra;
      rules_[b] = rb;
    }
    return "\"{\" ws " + base + "-body0 ws \"}\"";
  }

  const json& root_;
  const std::string prefix_;  // of every rule this schema adds
  std::map<std::string, std::string> names_;  // schema path -> rule
  std::map<std::string, std::string> rules_;  // rule -> body
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) { return Compiler(schema, "").run(); }

SchemaRules json_schema_rules(const nlohmann::ordered_json& schema, const std::string& prefix) {
  return Compiler(schema, prefix).own_rules();
}

std::string json_common_gbnf() { return kCommonRules; }

std::string json_object_gbnf() { return std::string("root ::= ws object ws\n") + kCommonRules; }

}  // namespace triattn::grammar
