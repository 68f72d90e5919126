// Python methods of str, list and dict that chat templates call (`content.startswith(...)`,
// `message.get('x')`, `ns.items.append(...)`), plus slicing.
#include <set>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/strings.h"
#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {
namespace {

const std::set<std::string, std::less<>> kMethods = {
    // str
    "startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "upper", "lower", "replace",
    "find", "rfind", "count", "title", "capitalize", "format", "join", "isdigit", "isalpha", "isalnum",
    "isspace", "islower", "isupper", "splitlines",
    // list
    "append", "pop", "extend", "insert", "index",
    // dict
    "items", "keys", "values", "get", "update", "copy", "setdefault",
    // loop
    "cycle"};

const std::string& str_arg(const Args& a, size_t i, const char* name, const char* method) {
  const Value* v = a.get(i, name);
  if (!v || !v->is_string()) throw TypeError(std::string(method) + "() argument '" + name + "' must be a string");
  return v->s;
}

const std::string* opt_str_arg(const Args& a, size_t i, const char* name) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) throw TypeError(std::string("argument '") + name + "' must be a string or None");
  return &v->s;
}

int64_t opt_int_arg(const Args& a, size_t i, const char* name, int64_t def) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return def;
  return v->as_int();
}

// startswith/endswith accept a string or a tuple (list) of strings.
bool affix_match(const std::string& s, const Value& arg, bool start) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) throw TypeError("startswith/endswith arguments must be strings");
    if (p.s.size() > s.size()) return false;
    return start ? s.compare(0, p.s.size(), p.s) == 0 : s.compare(s.size() - p.s.size(), p.s.size(), p.s) == 0;
  };
  if (arg.is_list()) {
    for (auto& p : *arg.list)
      if (one(p)) return true;
    return false;
  }
  return one(arg);
}

template <typename Pred>
bool all_chars(const std::string& s, Pred p) {
  if (s.empty()) return false;
  for (char32_t c : utf8::decode(s))
    if (!p(c)) return false;
  return true;
}

Value string_method(const std::string& s, const std::string& m, const Args& a, bool& found) {
  found = true;
  if (m == "startswith" || m == "endswith") {
    const Value* p = a.get(0, "prefix");
    if (!p) throw TypeError(m + "() takes at least 1 argument");
    return Value(affix_match(s, *p, m == "startswith"));
  }
  if (m == "split" || m == "rsplit")
    return Value(pystr::split(s, opt_str_arg(a, 0, "sep"), opt_int_arg(a, 1, "maxsplit", -1), m == "rsplit"));
  if (m == "strip") return Value(pystr::strip(s, opt_str_arg(a, 0, "chars"), true, true));
  if (m == "lstrip") return Value(pystr::strip(s, opt_str_arg(a, 0, "chars"), true, false));
  if (m == "rstrip") return Value(pystr::strip(s, opt_str_arg(a, 0, "chars"), false, true));
  if (m == "upper") return Value(utf8::to_upper(s));
  if (m == "lower") return Value(utf8::to_lower(s));
  if (m == "title") return Value(pystr::title(s));
  if (m == "capitalize") return Value(pystr::capitalize(s));
  if (m == "replace")
    return Value(pystr::replace(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                                opt_int_arg(a, 2, "count", -1)));
  if (m == "find" || m == "rfind") {
    const std::string& sub = str_arg(a, 0, "sub", m.c_str());
    size_t f = m == "find" ? s.find(sub) : s.rfind(sub);
    if (f == std::string::npos) return Value(static_cast<int64_t>(-1));
    return Value(static_cast<int64_t>(utf8::length(std::string_view(s).substr(0, f))));
  }
  if (m == "count") return Value(pystr::count(s, str_arg(a, 0, "sub", "count")));
  if (m == "format") return Value(pystr::format(s, a));
  if (m == "join") {
    const Value* it = a.get(0, "iterable");
    if (!it) throw TypeError("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (auto& e : iterate(*it)) {
      if (!e.is_string()) throw TypeError(std::string("sequence item: expected str instance, ") + e.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += e.s;
    }
    return Value(std::move(out));
  }
  if (m == "isdigit") return Value(all_chars(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  if (m == "isalpha")
    return Value(all_chars(s, [](char32_t c) { return utf8::is_alnum(c) && !(c >= '0' && c <= '9'); }));
  if (m == "isalnum") return Value(all_chars(s, utf8::is_alnum));
  if (m == "isspace") return Value(all_chars(s, utf8::is_space));
  if (m == "islower" || m == "isupper") {
    bool any = false, ok = true;
    for (char32_t c : utf8::decode(s)) {
      bool lo = utf8::is_lower_cased(c), up = utf8::is_upper_cased(c);
      if (lo || up) any = true;
      if (m == "islower" ? up : lo) ok = false;
    }
    return Value(any && ok);
  }
  if (m == "splitlines") {
    List out;
    size_t b = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '\n' || s[k] == '\r') {
        out.emplace_back(s.substr(b, k - b));
        if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
        b = k + 1;
      }
    }
    if (b < s.size()) out.emplace_back(s.substr(b));
    return Value(std::move(out));
  }
  found = false;
  return Value();
}

Value list_method(const Value& obj, const std::string& m, const Args& a, bool& found) {
  List& l = *obj.list;
  found = true;
  if (m == "append") {
    if (a.pos.size() != 1) throw TypeError("append() takes exactly one argument");
    l.push_back(a.pos[0]);
    return Value::none();
  }
  if (m == "extend") {
    if (a.pos.size() != 1) throw TypeError("extend() takes exactly one argument");
    for (auto& e : iterate(a.pos[0])) l.push_back(e);
    return Value::none();
  }
  if (m == "pop") {
    if (l.empty()) throw TypeError("pop from empty list");
    int64_t n = static_cast<int64_t>(l.size());
    int64_t i = opt_int_arg(a, 0, "index", -1);
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw TypeError("pop index out of range");
    Value v = l[static_cast<size_t>(i)];
    l.erase(l.begin() + i);
    return v;
  }
  if (m == "insert") {
    if (a.pos.size() != 2) throw TypeError("insert() takes exactly 2 arguments");
    int64_t n = static_cast<int64_t>(l.size());
    int64_t i = a.pos[0].as_int();
    if (i < 0) i = std::max<int64_t>(i + n, 0);
    i = std::min(i, n);
    l.insert(l.begin() + i, a.pos[1]);
    return Value::none();
  }
  if (m == "index" || m == "count") {
    if (a.pos.size() != 1) throw TypeError(m + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t k = 0; k < l.size(); ++k) {
      if (equals(l[k], a.pos[0])) {
        if (m == "index") return Value(static_cast<int64_t>(k));
        ++n;
      }
    }
    if (m == "index") throw TypeError("list.index(x): x not in list");
    return Value(n);
  }
  if (m == "copy") return Value(List(l));
  found = false;
  return Value();
}

Value dict_method(const Value& obj, const std::string& m, const Args& a, bool& found) {
  Dict& d = *obj.dict;
  found = true;
  if (m == "items") {
    List out;
    out.reserve(d.items.size());
    for (auto& [k, v] : d.items) out.push_back(Value::make_tuple(List{Value(k), v}));
    return Value(std::move(out));
  }
  if (m == "keys") {
    List out;
    for (auto& kv : d.items) out.emplace_back(kv.first);
    return Value(std::move(out));
  }
  if (m == "values") {
    List out;
    for (auto& kv : d.items) out.push_back(kv.second);
    return Value(std::move(out));
  }
  if (m == "get" || m == "pop" || m == "setdefault") {
    const Value* k = a.get(0, "key");
    if (!k) throw TypeError(m + "() needs a key");
    const Value* def = a.get(1, "default");
    const Value* v = k->is_string() ? d.find(k->s) : nullptr;
    if (m == "get") return v ? *v : (def ? *def : Value::none());
    if (m == "setdefault") {
      if (v) return *v;
      Value nv = def ? *def : Value::none();
      d.set(k->is_string() ? k->s : k->str(), nv);
      return nv;
    }
    if (!v) {
      if (def) return *def;
      throw TypeError("KeyError: " + k->repr());
    }
    Value out = *v;
    d.erase(k->s);
    return out;
  }
  if (m == "update") {
    if (!a.pos.empty()) {
      if (!a.pos[0].is_dict()) throw TypeError("dict.update() argument must be a dict");
      for (auto& [k, v] : a.pos[0].dict->items) d.set(k, v);
    }
    for (auto& [k, v] : a.kw) d.set(k, v);
    return Value::none();
  }
  if (m == "copy") {
    auto c = make_dict();
    c->items = d.items;
    return Value(c);
  }
  found = false;
  return Value();
}

Value slice(const Value& obj, const Args& a) {
  const Value none = Value::none();
  const Value& start = a.pos.size() > 0 ? a.pos[0] : none;
  const Value& stop = a.pos.size() > 1 ? a.pos[1] : none;
  const Value& step = a.pos.size() > 2 ? a.pos[2] : none;
  if (obj.is_list()) {
    List out;
    for (size_t k : pystr::slice_indices(static_cast<int64_t>(obj.list->size()), start, stop, step))
      out.push_back((*obj.list)[k]);
    return Value(std::move(out));
  }
  if (obj.is_string()) {
    std::u32string cps = utf8::decode(obj.s), out;
    for (size_t k : pystr::slice_indices(static_cast<int64_t>(cps.size()), start, stop, step)) out += cps[k];
    return Value(utf8::encode(out));
  }
  if (obj.is_undefined()) return Value();
  throw TypeError(std::string("'") + obj.type_name() + "' object is not subscriptable");
}

}  // namespace

bool is_known_method(std::string_view name) { return kMethods.count(name) != 0; }

Value call_method(const Value& obj, const std::string& name, const Args& args, bool& found) {
  found = false;
  if (name == "__slice__") {
    found = true;
    return slice(obj, args);
  }
  if (obj.is_string()) return string_method(obj.s, name, args, found);
  if (obj.is_list()) return list_method(obj, name, args, found);
  if (obj.is_dict() && !obj.dict->is_namespace) return dict_method(obj, name, args, found);
  return Value();
}

}  // namespace portllm::tok::jinja
