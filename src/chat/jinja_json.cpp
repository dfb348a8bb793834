#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

void append_u16_escape(CappedString& out, unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", v);
  out.append(buf);
}

void dump_string(CappedString& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  std::u32string u = pystr::decode(s);
  for (char32_t c : u) {
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default:
        if (c < 0x20) {
          append_u16_escape(out, c);
        } else if (ensure_ascii && c > 0x7E) {
          if (c >= 0x10000) {  // surrogate pair, as Python writes it
            char32_t v = c - 0x10000;
            append_u16_escape(out, 0xD800 + (v >> 10));
            append_u16_escape(out, 0xDC00 + (v & 0x3FF));
          } else {
            append_u16_escape(out, c);
          }
        } else if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else {
          out.append(pystr::encode(std::u32string(1, c)));
        }
    }
  }
  out.push_back('"');
}

struct Dumper {
  const JsonDumpOptions& opt;
  std::string item_sep, key_sep;
  CappedString out;

  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out.append(*opt.indent);
  }

  void dump(const Value& v, int level) {
    if (level > kMaxNesting) fail("tojson: value nested more than ", kMaxNesting, " levels deep");
    switch (v.kind()) {
      case Value::Kind::None: out.append("null"); return;
      case Value::Kind::Bool: out.append(v.as_bool() ? "true" : "false"); return;
      case Value::Kind::Int: out.append(std::to_string(v.as_int())); return;
      case Value::Kind::Float: {
        double d = v.as_float();
        if (std::isnan(d)) out.append("NaN");
        else if (std::isinf(d)) out.append(d < 0 ? "-Infinity" : "Infinity");
        else out.append(pystr::float_repr(d));
        return;
      }
      case Value::Kind::String: dump_string(out, v.str_ref(), opt.ensure_ascii); return;
      case Value::Kind::List: {
        const ValueList& l = v.list_ref();
        if (l.empty()) { out.append("[]"); return; }
        out.push_back('[');
        for (size_t i = 0; i < l.size(); ++i) {
          if (i) out.append(item_sep);
          if (opt.indent) newline(level + 1);
          dump(l[i], level + 1);
        }
        if (opt.indent) newline(level);
        out.push_back(']');
        return;
      }
      case Value::Kind::Dict: {
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.dict_ref().items) items.push_back(&kv);
        if (opt.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto a, auto b) { return a->first < b->first; });
        if (items.empty()) { out.append("{}"); return; }
        out.push_back('{');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out.append(item_sep);
          if (opt.indent) newline(level + 1);
          dump_string(out, items[i]->first, opt.ensure_ascii);
          out.append(key_sep);
          dump(items[i]->second, level + 1);
        }
        if (opt.indent) newline(level);
        out.push_back('}');
        return;
      }
      default:
        fail("tojson: object of type ", v.type_name(), " is not JSON serializable");
    }
  }
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
  Dumper d{opt, opt.item_sep.value_or(opt.indent ? "," : ", "), opt.key_sep.value_or(": "), {}};
  d.dump(v, 0);
  return d.out.take();
}

}  // namespace triattn::jinja
