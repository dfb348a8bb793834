#include "chat/tool_call_syntax.h"

#include <algorithm>
#include <random>
#include <utility>

namespace triattn {

namespace {

using ojson = nlohmann::ordered_json;

struct Marker {
  std::string_view open, close;  // close "": the region runs to the reply's end
};

const std::vector<Marker>& call_markers(ToolSyntax s) {
  static const std::vector<Marker> tagged = {{"<tool_call>", "</tool_call>"}};
  static const std::vector<Marker> llama = {{"<|python_tag|>", ""}};
  static const std::vector<Marker> mistral = {{"[TOOL_CALLS]", ""}};
  static const std::vector<Marker> deepseek = {{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"}};
  // Harmony: where a message header begins (the call is decided by the header).
  static const std::vector<Marker> harmony = {{"<|start|>", ""}, {"<|channel|>", ""}};
  static const std::vector<Marker> none;
  switch (s) {
    case ToolSyntax::Hermes:
    case ToolSyntax::QwenXml: return tagged;
    case ToolSyntax::Llama3: return llama;
    case ToolSyntax::Mistral: return mistral;
    case ToolSyntax::DeepSeekR1: return deepseek;
    case ToolSyntax::Harmony: return harmony;
    case ToolSyntax::None: break;
  }
  return none;
}

constexpr std::string_view kHarmonyMessage = "<|message|>";
const std::vector<Marker> kHarmonyEnds = {{"<|call|>", ""}, {"<|end|>", ""}, {"<|return|>", ""}};

// The earliest marker in text: its position and index (npos when none).
std::pair<size_t, size_t> find_marker(std::string_view text, const std::vector<Marker>& ms) {
  std::pair<size_t, size_t> best{std::string_view::npos, 0};
  for (size_t i = 0; i < ms.size(); ++i) {
    const size_t p = text.find(ms[i].open);
    if (p < best.first) best = {p, i};
  }
  return best;
}

// The longest end of `text` that begins some marker: held back, it may be the marker's start.
size_t partial_marker(std::string_view text, const std::vector<Marker>& ms) {
  size_t best = 0;
  for (const Marker& m : ms)
    for (size_t n = std::min(text.size(), m.open.size() - 1); n > best; --n)
      if (text.substr(text.size() - n) == m.open.substr(0, n)) {
        best = n;
        break;
      }
  return best;
}

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

// Arguments as compact JSON object text: an object, a string holding one, or none ({}).
std::optional<std::string> arguments_text(const ojson* v) {
  if (!v || v->is_null()) return "{}";
  if (v->is_object()) return v->dump();
  if (v->is_string()) {
    const ojson inner = ojson::parse(v->get<std::string>(), nullptr, false);
    if (inner.is_object()) return inner.dump();
  }
  return std::nullopt;
}

// {"name": N, <args_key>: {...}} (either key of arguments / parameters accepted).
std::optional<ParsedToolCall> call_of_object(const ojson& o) {
  if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) return std::nullopt;
  const ojson* args = o.contains("arguments") ? &o["arguments"] : o.contains("parameters") ? &o["parameters"] : nullptr;
  auto text = arguments_text(args);
  if (!text || o["name"].get<std::string>().empty()) return std::nullopt;
  return ParsedToolCall{o["name"].get<std::string>(), *text};
}

// The end of the JSON value that starts at text[0] ('{' or '['), by bracket depth outside
// strings; npos when it does not close.
size_t json_value_end(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// Llama 3: one or more call objects, apart by white space or ';'.
std::optional<std::vector<ParsedToolCall>> llama_calls(std::string_view body) {
  std::vector<ParsedToolCall> calls;
  body = trim(body);
  while (!body.empty()) {
    if (body[0] != '{') return std::nullopt;
    const size_t end = json_value_end(body);
    if (end == std::string_view::npos) return std::nullopt;
    auto c = call_of_object(ojson::parse(body.substr(0, end), nullptr, false));
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
    body = trim(body.substr(end));
    while (!body.empty() && body[0] == ';') body = trim(body.substr(1));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

const ojson* parameter_schema(const std::vector<ToolSpec>& tools, const std::string& fn, const std::string& param) {
  for (const ToolSpec& t : tools)
    if (t.name == fn && t.parameters.contains("properties") && t.parameters["properties"].is_object() &&
        t.parameters["properties"].contains(param))
      return &t.parameters["properties"][param];
  return nullptr;
}

// Qwen3.5: <function=N> then <parameter=P>\nVALUE\n</parameter> each; a value is text, read
// as JSON unless the parameter's schema says string (or it does not parse).
std::optional<ParsedToolCall> xml_call(std::string_view body, const std::vector<ToolSpec>& tools) {
  body = trim(body);
  constexpr std::string_view fn_open = "<function=", fn_close = "</function>", p_open = "<parameter=",
                             p_close = "</parameter>";
  if (body.size() < fn_open.size() + fn_close.size() || !body.starts_with(fn_open) || !body.ends_with(fn_close))
    return std::nullopt;
  body = body.substr(fn_open.size(), body.size() - fn_open.size() - fn_close.size());
  const size_t gt = body.find('>');
  if (gt == std::string_view::npos || gt == 0) return std::nullopt;
  ParsedToolCall call{std::string(trim(body.substr(0, gt))), ""};
  ojson args = ojson::object();
  body = trim(body.substr(gt + 1));
  while (!body.empty()) {
    if (!body.starts_with(p_open)) return std::nullopt;
    const size_t name_end = body.find('>');
    const size_t close = body.find(p_close);
    if (name_end == std::string_view::npos || close == std::string_view::npos || close < name_end) return std::nullopt;
    const std::string param(trim(body.substr(p_open.size(), name_end - p_open.size())));
    std::string_view value = body.substr(name_end + 1, close - name_end - 1);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    const ojson* schema = parameter_schema(tools, call.name, param);
    const bool is_string = schema && schema->is_object() && schema->value("type", ojson()) == "string";
    ojson parsed = is_string ? ojson() : ojson::parse(value, nullptr, false);
    args[param] = is_string || parsed.is_discarded() ? ojson(std::string(value)) : std::move(parsed);
    body = trim(body.substr(close + p_close.size()));
  }
  call.arguments = args.dump();
  return call;
}

// DeepSeek-R1: <｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\nARGS\n```<｜tool▁call▁end｜>, repeated.
std::optional<std::vector<ParsedToolCall>> deepseek_calls(std::string_view body) {
  constexpr std::string_view begin = "<｜tool▁call▁begin｜>", end = "<｜tool▁call▁end｜>", sep = "<｜tool▁sep｜>";
  std::vector<ParsedToolCall> calls;
  body = trim(body);
  while (!body.empty()) {
    if (!body.starts_with(begin)) return std::nullopt;
    body.remove_prefix(begin.size());
    size_t stop = body.find(end);
    std::string_view one = body.substr(0, stop);
    body = stop == std::string_view::npos ? std::string_view() : trim(body.substr(stop + end.size()));
    const size_t s = one.find(sep);
    if (s == std::string_view::npos) return std::nullopt;
    one.remove_prefix(s + sep.size());
    const size_t nl = one.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string name(trim(one.substr(0, nl)));
    std::string_view args = trim(one.substr(nl + 1));
    if (args.starts_with("```")) {
      const size_t line = args.find('\n');
      const size_t fence = args.rfind("```");
      if (line == std::string_view::npos || fence <= line) return std::nullopt;
      args = trim(args.substr(line + 1, fence - line - 1));
    }
    const ojson a = ojson::parse(args, nullptr, false);
    if (name.empty() || !a.is_object()) return std::nullopt;
    calls.push_back({name, a.dump()});
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

ToolSyntax tool_syntax_of_template(std::string_view src) {
  const auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (has("<|channel|>") && has(" to=")) return ToolSyntax::Harmony;  // the recipient of a harmony message
  if (has("<tool_call>") && has("<function=") && has("<parameter=")) return ToolSyntax::QwenXml;
  if (has("<tool_call>")) return ToolSyntax::Hermes;
  if (has("[TOOL_CALLS]")) return ToolSyntax::Mistral;
  if (has("tool▁calls▁begin")) return ToolSyntax::DeepSeekR1;
  if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("tool_calls"))) return ToolSyntax::Llama3;
  return ToolSyntax::None;
}

const char* tool_syntax_name(ToolSyntax s) {
  switch (s) {
    case ToolSyntax::Hermes: return "hermes";
    case ToolSyntax::QwenXml: return "qwen-xml";
    case ToolSyntax::Llama3: return "llama3";
    case ToolSyntax::Mistral: return "mistral";
    case ToolSyntax::DeepSeekR1: return "deepseek-r1";
    case ToolSyntax::Harmony: return "harmony";
    case ToolSyntax::None: break;
  }
  return "none";
}

std::string new_tool_call_id(ToolSyntax s) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlnum) - 2);
  // Mistral's template insists on 9 alphanumerics.
  const bool mistral = s == ToolSyntax::Mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[pick(rng)];
  return id;
}

ToolCallParser::ToolCallParser(ToolSyntax syntax, std::vector<ToolSpec> tools)
    : syntax_(syntax), tools_(std::move(tools)),
      // A harmony reply begins inside a message header (the prompt ends with <|start|>assistant).
      state_(syntax == ToolSyntax::Harmony ? State::HarmonyHeader : State::Text) {}

ToolCallParser::Out ToolCallParser::push(std::string_view piece) {
  Out out;
  buf_ += piece;
  run(out, false);
  return out;
}

ToolCallParser::Out ToolCallParser::finish() {
  Out out;
  run(out, true);
  return out;
}

ToolCallParser::Out ToolCallParser::parse(ToolSyntax syntax, std::string_view text, std::vector<ToolSpec> tools) {
  ToolCallParser p(syntax, std::move(tools));
  Out a = p.push(text), b = p.finish();
  a.text += b.text;
  for (ParsedToolCall& c : b.calls) a.calls.push_back(std::move(c));
  return a;
}

void ToolCallParser::run(Out& out, bool at_end) {
  const std::vector<Marker>& ms = call_markers(syntax_);
  for (;;) {
    switch (state_) {
      case State::Call:
        if (!call_region(out, at_end)) return;
        break;
      case State::HarmonyHeader:
        if (!harmony_header(out, at_end)) return;
        break;
      case State::HarmonyBody:
        if (!harmony_body(out, at_end)) return;
        break;
      case State::Text: {
        if (syntax_ == ToolSyntax::Llama3 && !seen_text_) {
          // A reply that opens with '{' is a call (Llama 3's JSON form has no marker).
          const size_t p = buf_.find_first_not_of(" \t\r\n");
          if (p == std::string::npos) {
            if (at_end) out.text += std::exchange(buf_, {});
            return;
          }
          seen_text_ = true;
          if (buf_[p] == '{') {
            out.text += buf_.substr(0, p);
            buf_.erase(0, p);
            open_.clear();
            close_.clear();
            state_ = State::Call;
            break;
          }
        }
        const auto [pos, i] = find_marker(buf_, ms);
        if (pos == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker(buf_, ms);
          out.text += buf_.substr(0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        out.text += buf_.substr(0, pos);
        if (syntax_ == ToolSyntax::Harmony) {
          buf_.erase(0, pos);  // the header keeps its opener: passed on whole unless it calls
          state_ = State::HarmonyHeader;
        } else {
          buf_.erase(0, pos + ms[i].open.size());
          open_ = ms[i].open;
          close_ = ms[i].close;
          state_ = State::Call;
        }
        break;
      }
    }
  }
}

bool ToolCallParser::call_region(Out& out, bool at_end) {
  size_t end = close_.empty() ? std::string::npos : buf_.find(close_);
  if (end == std::string::npos && !at_end) return false;
  const bool closed = end != std::string::npos;
  const std::string body = buf_.substr(0, closed ? end : buf_.size());
  buf_.erase(0, closed ? end + close_.size() : buf_.size());
  if (auto calls = parse_region(body)) {
    for (ParsedToolCall& c : *calls) out.calls.push_back(std::move(c));
  } else {
    out.text += open_ + body + (closed ? close_ : "");
  }
  state_ = State::Text;
  return true;
}

std::optional<std::vector<ParsedToolCall>> ToolCallParser::parse_region(std::string_view body) const {
  switch (syntax_) {
    case ToolSyntax::Hermes:
    case ToolSyntax::QwenXml: {
      // Either form inside <tool_call>: a Qwen3.5 model may still write the JSON one.
      auto c = syntax_ == ToolSyntax::QwenXml ? xml_call(body, tools_) : std::nullopt;
      if (!c) c = call_of_object(ojson::parse(trim(body), nullptr, false));
      if (!c) return std::nullopt;
      return std::vector<ParsedToolCall>{std::move(*c)};
    }
    case ToolSyntax::Llama3: return llama_calls(body);
    case ToolSyntax::Mistral: {
      const ojson v = ojson::parse(trim(body), nullptr, false);
      std::vector<ParsedToolCall> calls;
      for (const ojson& o : v.is_array() ? v : ojson::array({v})) {
        auto c = call_of_object(o);
        if (!c) return std::nullopt;
        calls.push_back(std::move(*c));
      }
      if (calls.empty()) return std::nullopt;
      return calls;
    }
    case ToolSyntax::DeepSeekR1: return deepseek_calls(body);
    case ToolSyntax::Harmony:
    case ToolSyntax::None: break;
  }
  return std::nullopt;
}

bool ToolCallParser::harmony_header(Out& out, bool at_end) {
  const size_t m = buf_.find(kHarmonyMessage);
  if (m == std::string::npos) {
    if (!at_end) return false;
    out.text += std::exchange(buf_, {});  // no message: not harmony after all
    state_ = State::Text;
    return true;
  }
  const std::string header = buf_.substr(0, m + kHarmonyMessage.size());
  buf_.erase(0, header.size());
  harmony_name_.clear();
  constexpr std::string_view to = "to=functions.";
  if (const size_t t = header.find(to); t != std::string::npos) {
    const size_t b = t + to.size();
    const size_t e = header.find_first_of(" \t\n<", b);
    harmony_name_ = header.substr(b, e - b);
  }
  if (harmony_name_.empty()) out.text += header;
  open_ = header;
  state_ = State::HarmonyBody;
  return true;
}

bool ToolCallParser::harmony_body(Out& out, bool at_end) {
  const auto [pos, i] = find_marker(buf_, kHarmonyEnds);
  if (harmony_name_.empty()) {  // a message for the reader: passed on as it comes
    if (pos == std::string::npos) {
      const size_t keep = at_end ? 0 : partial_marker(buf_, kHarmonyEnds);
      out.text += buf_.substr(0, buf_.size() - keep);
      buf_.erase(0, buf_.size() - keep);
      if (!at_end) return false;
    } else {
      out.text += buf_.substr(0, pos + kHarmonyEnds[i].open.size());
      buf_.erase(0, pos + kHarmonyEnds[i].open.size());
    }
    state_ = State::Text;
    return true;
  }
  if (pos == std::string::npos && !at_end) return false;
  const std::string body = buf_.substr(0, pos == std::string::npos ? buf_.size() : pos);
  const std::string end = pos == std::string::npos ? "" : std::string(kHarmonyEnds[i].open);
  buf_.erase(0, body.size() + end.size());
  const ojson args = ojson::parse(trim(body), nullptr, false);
  if (args.is_object()) out.calls.push_back({harmony_name_, args.dump()});
  else out.text += open_ + body + end;
  state_ = State::Text;
  return true;
}

}  // namespace triattn
