#include "chat/tool_call_grammar.h"

#include <algorithm>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "grammar/schema_parts.h"

namespace triattn {

namespace {

using ojson = nlohmann::ordered_json;
using grammar::gbnf_literal;

// Text that never holds "</": thinking and free-text values, closed by a tag after them.
constexpr const char* kFreeText = "free-text ::= ([^<] | \"<\"+ [^/<])*\n";

// A function's parameters: absent or {} means an object of anything.
ojson parameters_schema(const ToolSpec& t) {
  if (t.parameters.is_null() || (t.parameters.is_object() && t.parameters.empty())) return ojson{{"type", "object"}};
  return t.parameters;
}

class Builder {
 public:
  Builder(ToolSyntax syntax, const std::vector<ToolSpec>& tools) : syntax_(syntax), tools_(tools) {}

  std::string run(const ToolGrammarOptions& opt) {
    if (tools_.empty()) fail("no functions to call");
    std::string call, sep, head, tail;
    bool parallel = opt.parallel;
    switch (syntax_) {
      case ToolSyntax::Hermes:
        call = lit("<tool_call>\n{\"name\": ") + " fn " + lit("}\n</tool_call>");
        fn_alternatives([&](const ToolSpec& t, size_t i) {
          return lit(ojson(t.name).dump() + ", \"arguments\": ") + " " + args_rule(t, i);
        });
        sep = lit("\n");
        break;
      case ToolSyntax::Llama3:
        call = lit("{\"name\": ") + " fn " + lit("}");
        fn_alternatives([&](const ToolSpec& t, size_t i) {
          return lit(ojson(t.name).dump() + ", \"parameters\": ") + " " + args_rule(t, i);
        });
        sep = lit("; ");
        break;
      case ToolSyntax::Mistral:
        head = lit("[TOOL_CALLS][");
        call = lit("{\"name\": ") + " fn " + lit("}");
        fn_alternatives([&](const ToolSpec& t, size_t i) {
          return lit(ojson(t.name).dump() + ", \"arguments\": ") + " " + args_rule(t, i);
        });
        sep = lit(", ");
        tail = lit("]");
        break;
      case ToolSyntax::DeepSeekR1:
        head = lit("<｜tool▁calls▁begin｜>");
        call = lit("<｜tool▁call▁begin｜>function<｜tool▁sep｜>") + " fn " + lit("\n```<｜tool▁call▁end｜>");
        fn_alternatives([&](const ToolSpec& t, size_t i) { return lit(t.name + "\n```json\n") + " " + args_rule(t, i); });
        sep = lit("\n");
        tail = lit("<｜tool▁calls▁end｜>");
        break;
      case ToolSyntax::QwenXml:
        call = lit("<tool_call>\n<function=") + " fn " + lit("</function>\n</tool_call>");
        fn_alternatives([&](const ToolSpec& t, size_t i) { return lit(t.name + ">\n") + " " + xml_parameters(t, i); });
        sep = lit("\n");
        break;
      case ToolSyntax::Harmony:
        // An analysis message may come first; the call's message ends the turn (<|call|> is an
        // end-of-generation token, allowed once the arguments are complete).
        head = "(" + lit("<|channel|>analysis<|message|>") + " harmony-text " + lit("<|end|><|start|>assistant") + ")?";
        call = lit("<|channel|>commentary to=functions.") + " fn";
        fn_alternatives([&](const ToolSpec& t, size_t i) {
          return lit(t.name + " <|constrain|>json<|message|>") + " " + args_rule(t, i);
        });
        rules_ += "harmony-text ::= ([^<] | \"<\"+ [^|<])*\n";
        parallel = false;
        break;
      case ToolSyntax::None:
        fail("the chat template shows no tool-call syntax");
    }
    std::string think;
    if (syntax_ != ToolSyntax::Harmony && opt.reasoning != ToolGrammarOptions::Reasoning::None) {
      const std::string close = "free-text " + lit("</think>") + " [ \\n]*";
      think = opt.reasoning == ToolGrammarOptions::Reasoning::Open ? close + " " : "(" + lit("<think>") + " " + close + ")? ";
      free_text_ = true;
    }
    std::string out = "root ::= " + think + head + " call" + (parallel ? " (" + sep + " call)*" : "") + " " + tail + "\n";
    out += "call ::= " + call + "\n";
    out += "fn ::= " + fns_ + "\n";
    if (free_text_) out += kFreeText;
    return out + rules_ + grammar::json_common_gbnf();
  }

 private:
  static std::string lit(const std::string& s) { return gbnf_literal(s); }

  template <class F>
  void fn_alternatives(F alt) {
    for (size_t i = 0; i < tools_.size(); ++i) fns_ += (i ? " | " : "") + alt(tools_[i], i);
  }

  // The rule of a schema, its own rules added under a prefix unique to it.
  std::string schema_rule(const ojson& schema, const std::string& prefix, const std::string& fn) {
    try {
      grammar::SchemaRules r = grammar::json_schema_rules(schema, prefix);
      rules_ += r.rules;
      return r.top;
    } catch (const Error& e) {
      fail("function '", fn, "': ", e.what());
    }
  }

  std::string args_rule(const ToolSpec& t, size_t i) {
    const ojson schema = parameters_schema(t);
    if (schema.value("type", ojson()) != "object")
      fail("function '", t.name, "': parameters must be a JSON Schema of type \"object\"");
    return schema_rule(schema, "t" + std::to_string(i) + "-", t.name);
  }

  // Qwen3.5's parameters, each "<parameter=P>\nVALUE\n</parameter>\n" in the schema's order
  // (the optional ones skippable): a string value is free text, any other the JSON its schema
  // allows.
  std::string xml_parameters(const ToolSpec& t, size_t i) {
    const ojson schema = parameters_schema(t);
    std::string seq;
    const ojson props = schema.value("properties", ojson::object());
    const ojson required = schema.value("required", ojson::array());
    size_t k = 0;
    for (auto it = props.begin(); it != props.end(); ++it, ++k) {
      const ojson& ps = it.value();
      const bool plain_string = ps.is_object() && ps.value("type", ojson()) == "string" && !ps.contains("enum") &&
                                !ps.contains("const") && !ps.contains("pattern") && !ps.contains("format") &&
                                !ps.contains("minLength") && !ps.contains("maxLength");
      std::string value;
      if (plain_string) {
        value = "free-text";
        free_text_ = true;
      } else {
        value = schema_rule(ps, "t" + std::to_string(i) + "-p" + std::to_string(k) + "-", t.name);
      }
      std::string one = lit("<parameter=" + it.key() + ">\n") + " " + value + " " + lit("\n</parameter>\n");
      const bool req = std::find(required.begin(), required.end(), ojson(it.key())) != required.end();
      seq += (seq.empty() ? "" : " ") + (req ? one : "(" + one + ")?");
    }
    return seq.empty() ? lit("") : seq;
  }

  ToolSyntax syntax_;
  const std::vector<ToolSpec>& tools_;
  std::string fns_, rules_;
  bool free_text_ = false;
};

}  // namespace

std::string tool_call_gbnf(ToolSyntax syntax, const std::vector<ToolSpec>& tools, const ToolGrammarOptions& opt) {
  return Builder(syntax, tools).run(opt);
}

}  // namespace triattn
