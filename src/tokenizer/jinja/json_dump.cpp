// Python json.dumps, as HF transformers' chat-template `tojson` filter calls it
// (ensure_ascii=False by default, key order preserved, separators ", " and ": ").
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/utf8.h"
#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja {
namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto hex4 = [&](unsigned v) {
    char b[16];
    std::snprintf(b, sizeof b, "\\u%04x", v & 0xFFFFu);
    out += b;
  };
  for (char32_t c : utf8::decode(s)) {
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
          hex4(c);
        } else if (ensure_ascii && c > 0x7E && c != 0x7F) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            hex4(0xD800 + (v >> 10));
            hex4(0xDC00 + (v & 0x3FF));
          } else {
            hex4(c);
          }
        } else {
          utf8::append(out, c);
        }
    }
  }
  out += '"';
}

struct Dumper {
  const JsonDumpOptions& opt;
  std::string item_sep;
  std::string out;
  std::vector<const void*> open;  // containers being dumped: one met again is a cycle

  // Python's json.dumps refuses a container that holds itself.
  void enter(const void* id) {
    if (std::find(open.begin(), open.end(), id) != open.end()) throw TypeError("Circular reference detected");
    open.push_back(id);
  }

  void newline(int level) {
    out += '\n';
    out.append(static_cast<size_t>(opt.indent * level), ' ');
  }

  void dump(const Value& v, int level) {
    using T = Value::Type;
    switch (v.type) {
      case T::None: out += "null"; return;
      case T::Bool: out += v.b ? "true" : "false"; return;
      case T::Int: out += std::to_string(v.i); return;
      case T::Float:
        if (std::isnan(v.f)) out += "NaN";
        else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
        else out += format_float(v.f);
        return;
      case T::String: dump_string(out, v.s, opt.ensure_ascii); return;
      case T::List: {
        if (v.list->empty()) { out += "[]"; return; }
        enter(v.list.get());
        out += '[';
        for (size_t k = 0; k < v.list->size(); ++k) {
          if (k) out += item_sep;
          if (opt.indent >= 0) newline(level + 1);
          dump((*v.list)[k], level + 1);
        }
        if (opt.indent >= 0) newline(level);
        out += ']';
        open.pop_back();
        return;
      }
      case T::Dict: {
        if (v.dict->is_namespace) throw TypeError("Object of type Namespace is not JSON serializable");
        if (v.dict->items.empty()) { out += "{}"; return; }
        enter(v.dict.get());
        std::vector<const std::pair<std::string, Value>*> items;
        for (auto& kv : v.dict->items) items.push_back(&kv);
        if (opt.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
        out += '{';
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += item_sep;
          if (opt.indent >= 0) newline(level + 1);
          dump_string(out, items[k]->first, opt.ensure_ascii);
          out += opt.key_sep;
          dump(items[k]->second, level + 1);
        }
        if (opt.indent >= 0) newline(level);
        out += '}';
        open.pop_back();
        return;
      }
      case T::Undefined: throw TypeError("Object of type Undefined is not JSON serializable");
      case T::Callable: throw TypeError("Object of type function is not JSON serializable");
    }
  }
};

}  // namespace

std::string to_json(const Value& v, const JsonDumpOptions& opt) {
  Dumper d{opt, opt.item_sep.empty() ? (opt.indent >= 0 ? "," : ", ") : opt.item_sep, {}, {}};
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace portllm::tok::jinja
