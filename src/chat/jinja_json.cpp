#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

void append_u16_escape(std::string& out, unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", v);
  out += buf;
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  std::u32string u = pystr::decode(s);
  for (char32_t c : u) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
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
        } else {
          out += pystr::encode(std::u32string(1, c));
        }
    }
  }
  out.push_back('"');
}

struct Dumper {
  const JsonDumpOptions& opt;
  std::string item_sep, key_sep;
  std::string out;

  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  void dump(const Value& v, int level) {
    if (level > 512) fail("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: {
        double d = v.as_float();
        if (std::isnan(d)) out += "NaN";
        else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
        else out += pystr::float_repr(d);
        return;
      }
      case Value::Kind::String: dump_string(out, v.str_ref(), opt.ensure_ascii); return;
      case Value::Kind::List: {
        const ValueList& l = v.list_ref();
        if (l.empty()) { out += "[]"; return; }
        out.push_back('[');
        for (size_t i = 0; i < l.size(); ++i) {
          if (i) out += item_sep;
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
        if (items.empty()) { out += "{}"; return; }
        out.push_back('{');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump_string(out, items[i]->first, opt.ensure_ascii);
          out += key_sep;
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
  return std::move(d.out);
}

}  // namespace triattn::jinja
