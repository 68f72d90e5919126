// jinja2's builtin filters (with HF's tojson override: json.dumps, ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/strings.h"
#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {
namespace {

const Value* arg(const Args& a, size_t i, const char* name) { return a.get(i, name); }

bool flag(const Args& a, size_t i, const char* name, bool def = false) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : def;
}

// "a.b.0" -> successive getitem (jinja2's make_attrgetter).
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (true) {
    size_t e = path.find('.', b);
    std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                 : get_item(cur, Value(part));
    if (e == std::string::npos) return cur;
    b = e + 1;
  }
}

// Sort/unique key: case-folded strings unless case_sensitive.
Value fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(utf8::to_lower(v.s));
  return v;
}

Value f_trim(const Value& v, const Args& a) {
  const Value* chars = arg(a, 0, "chars");
  std::string c = chars && !chars->is_none() ? chars->str() : "";
  return Value(pystr::strip(v.str(), chars && !chars->is_none() ? &c : nullptr, true, true));
}

Value f_length(const Value& v, const Args&) { return Value(static_cast<int64_t>(py_len(v))); }

Value f_tojson(const Value& v, const Args& a) {
  // HF: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonDumpOptions o;
  o.ensure_ascii = flag(a, 0, "ensure_ascii");
  if (const Value* ind = arg(a, 1, "indent"); ind && !ind->is_none()) o.indent = static_cast<int>(ind->as_int());
  if (const Value* sep = arg(a, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list->size() != 2) throw TypeError("tojson: separators must be a pair");
    o.item_sep = (*sep->list)[0].str();
    o.key_sep = (*sep->list)[1].str();
  }
  o.sort_keys = flag(a, 3, "sort_keys");
  return Value(to_json(v, o));
}

Value f_items(const Value& v, const Args&) {
  if (v.is_undefined()) return Value(List{});
  if (!v.is_dict()) throw TypeError(std::string("items filter: expected a mapping, got ") + v.type_name());
  bool found = false;
  return call_method(v, "items", Args{}, found);
}

// select/reject/selectattr/rejectattr share one implementation.
Value select_impl(const Value& v, const Args& a, bool by_attr, bool keep) {
  size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty() || !a.pos[0].is_string()) throw TypeError("selectattr/rejectattr need an attribute name");
    attr = a.pos[0].s;
    k = 1;
  }
  std::string test;
  Args targs;
  if (a.pos.size() > k) {
    test = a.pos[k].str();
    targs.pos.assign(a.pos.begin() + static_cast<long>(k) + 1, a.pos.end());
  }
  targs.kw = a.kw;
  List out;
  for (auto& item : iterate(v)) {
    Value x = by_attr ? attr_path(item, attr) : item;
    bool r = test.empty() ? x.truthy() : apply_test(test, x, targs);
    if (r == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value f_select(const Value& v, const Args& a) { return select_impl(v, a, false, true); }
Value f_reject(const Value& v, const Args& a) { return select_impl(v, a, false, false); }
Value f_selectattr(const Value& v, const Args& a) { return select_impl(v, a, true, true); }
Value f_rejectattr(const Value& v, const Args& a) { return select_impl(v, a, true, false); }

Value f_map(const Value& v, const Args& a) {
  List out;
  if (const Value* attr = a.kwarg("attribute")) {
    const Value* def = a.kwarg("default");
    for (auto& item : iterate(v)) {
      Value x = attr_path(item, attr->str());
      out.push_back(x.is_undefined() && def ? *def : x);
    }
    return Value(std::move(out));
  }
  if (a.pos.empty()) throw TypeError("map filter needs a filter name or attribute=");
  std::string name = a.pos[0].str();
  Args fargs;
  fargs.pos.assign(a.pos.begin() + 1, a.pos.end());
  fargs.kw = a.kw;
  for (auto& item : iterate(v)) out.push_back(apply_filter(name, item, fargs));
  return Value(std::move(out));
}

Value f_join(const Value& v, const Args& a) {
  const Value* d = arg(a, 0, "d");
  const Value* attr = arg(a, 1, "attribute");
  std::string sep = d ? d->str() : "";
  std::string out;
  bool first = true;
  for (auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += (attr && !attr->is_none() ? attr_path(item, attr->str()) : item).str();
  }
  return Value(std::move(out));
}

Value f_default(const Value& v, const Args& a) {
  const Value* d = arg(a, 0, "default_value");
  bool boolean = flag(a, 1, "boolean");
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value("");
  return v;
}

Value f_string(const Value& v, const Args&) { return Value(v.str()); }
Value f_lower(const Value& v, const Args&) { return Value(utf8::to_lower(v.str())); }
Value f_upper(const Value& v, const Args&) { return Value(utf8::to_upper(v.str())); }
Value f_capitalize(const Value& v, const Args&) { return Value(pystr::capitalize(v.str())); }

Value f_title(const Value& v, const Args&) {
  // jinja2 splits on runs of [-\s({\[<] and capitalizes each piece.
  std::u32string cps = utf8::decode(v.str());
  auto is_sep = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || utf8::is_space(c);
  };
  std::string out;
  bool word_start = true;
  for (char32_t c : cps) {
    if (is_sep(c)) {
      utf8::append(out, c);
      word_start = true;
    } else {
      utf8::append(out, word_start ? utf8::upper(c) : utf8::lower(c));
      word_start = false;
    }
  }
  return Value(std::move(out));
}

Value f_first(const Value& v, const Args&) {
  List items = iterate(v);
  return items.empty() ? Value() : items.front();
}

Value f_last(const Value& v, const Args&) {
  List items = iterate(v);
  return items.empty() ? Value() : items.back();
}

Value f_replace(const Value& v, const Args& a) {
  const Value* o = arg(a, 0, "old");
  const Value* n = arg(a, 1, "new");
  const Value* c = arg(a, 2, "count");
  if (!o || !n) throw TypeError("replace filter needs old and new");
  return Value(pystr::replace(v.str(), o->str(), n->str(), c && !c->is_none() ? c->as_int() : -1));
}

Value f_indent(const Value& v, const Args& a) {
  const Value* w = arg(a, 0, "width");
  std::string ind = !w ? "    " : w->is_string() ? w->s : std::string(static_cast<size_t>(w->as_int()), ' ');
  bool first = flag(a, 1, "first"), blank = flag(a, 2, "blank");
  std::string s = v.str() + "\n";
  List lines;
  {
    bool dummy = false;
    lines = *call_method(Value(s), "splitlines", Args{}, dummy).list;
  }
  std::string rv;
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) rv.append("\n").append(ind);
      rv.append(lines[k].s);
    }
  } else if (!lines.empty()) {
    rv = lines[0].s;
    for (size_t k = 1; k < lines.size(); ++k) {
      rv.append("\n");
      if (!lines[k].s.empty()) rv.append(ind).append(lines[k].s);
    }
  }
  if (first) rv.insert(0, ind);
  return Value(std::move(rv));
}

Value f_list(const Value& v, const Args&) { return Value(iterate(v)); }

Value f_unique(const Value& v, const Args& a) {
  bool cs = flag(a, 0, "case_sensitive");
  const Value* attr = arg(a, 1, "attribute");
  List out, seen;
  for (auto& item : iterate(v)) {
    Value key = fold(attr && !attr->is_none() ? attr_path(item, attr->str()) : item, cs);
    bool dup = false;
    for (auto& s : seen) dup |= equals(s, key);
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value(std::move(out));
}

Value f_reverse(const Value& v, const Args&) {
  if (v.is_string()) {
    std::u32string c = utf8::decode(v.s);
    std::reverse(c.begin(), c.end());
    return Value(utf8::encode(c));
  }
  List l = iterate(v);
  std::reverse(l.begin(), l.end());
  return Value(std::move(l));
}

Value sort_impl(const Value& v, bool reverse, bool cs, const Value* attr) {
  List l = iterate(v);
  auto key = [&](const Value& x) { return fold(attr && !attr->is_none() ? attr_path(x, attr->str()) : x, cs); };
  std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return Value(std::move(l));
}

Value f_sort(const Value& v, const Args& a) {
  return sort_impl(v, flag(a, 0, "reverse"), flag(a, 1, "case_sensitive"), arg(a, 2, "attribute"));
}

Value f_dictsort(const Value& v, const Args& a) {
  if (!v.is_dict()) throw TypeError("dictsort filter: expected a mapping");
  bool cs = flag(a, 0, "case_sensitive");
  const Value* by = arg(a, 1, "by");
  bool by_value = by && by->str() == "value";
  bool reverse = flag(a, 2, "reverse");
  List items;
  for (auto& [k, x] : v.dict->items) items.push_back(Value::make_tuple(List{Value(k), x}));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = fold((*x.list)[by_value ? 1 : 0], cs), ky = fold((*y.list)[by_value ? 1 : 0], cs);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value(std::move(items));
}

Value f_int(const Value& v, const Args& a) {
  const Value* d = arg(a, 0, "default");
  Value def = d ? *d : Value(static_cast<int64_t>(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.f) ? Value(static_cast<int64_t>(std::trunc(v.f))) : def;
  if (v.is_string()) {
    std::string s = pystr::strip(v.s, nullptr, true, true);
    try {
      size_t used = 0;
      long long x = std::stoll(s, &used, 10);
      if (used == s.size()) return Value(static_cast<int64_t>(x));
      if (s.find_first_of("xXpP") == std::string::npos) {  // stod would accept C hex floats
        double f = std::stod(s, &used);
        if (used == s.size() && std::isfinite(f)) return Value(static_cast<int64_t>(std::trunc(f)));
      }
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value f_float(const Value& v, const Args& a) {
  const Value* d = arg(a, 0, "default");
  Value def = d ? *d : Value(0.0);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    std::string s = pystr::strip(v.s, nullptr, true, true);
    try {
      size_t used = 0;
      double f = s.find_first_of("xXpP") == std::string::npos ? std::stod(s, &used) : 0.0;
      if (used == s.size()) return Value(f);
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value f_abs(const Value& v, const Args&) {
  if (v.is_int() || v.is_bool()) return Value(static_cast<int64_t>(std::llabs(v.as_int())));
  if (v.is_float()) return Value(std::fabs(v.f));
  throw TypeError(std::string("bad operand type for abs(): '") + v.type_name() + "'");
}

Value f_round(const Value& v, const Args& a) {
  const Value* p = arg(a, 0, "precision");
  const Value* m = arg(a, 1, "method");
  int64_t prec = p ? p->as_int() : 0;
  std::string method = m ? m->str() : "common";
  if (!v.is_number()) throw TypeError("round filter: expected a number");
  if (method == "common" && !v.is_float()) return Value(v.as_int());  // Python round(int, n) -> int
  double scale = std::pow(10.0, static_cast<double>(prec));
  double x = v.as_double() * scale;
  if (method == "common") x = std::nearbyint(x);  // Python rounds half to even
  else if (method == "floor") x = std::floor(x);
  else if (method == "ceil") x = std::ceil(x);
  else throw TypeError("round filter: method must be 'common', 'ceil' or 'floor'");
  return Value(x / scale);
}

Value f_batch(const Value& v, const Args& a) {
  const Value* n = arg(a, 0, "linecount");
  const Value* fill = arg(a, 1, "fill_with");
  if (!n || n->as_int() <= 0) throw TypeError("batch filter needs a positive count");
  size_t count = static_cast<size_t>(n->as_int());
  List out, cur;
  for (auto& item : iterate(v)) {
    cur.push_back(item);
    if (cur.size() == count) {
      out.emplace_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (cur.size() < count) cur.push_back(*fill);
    out.emplace_back(std::move(cur));
  }
  return Value(std::move(out));
}

Value f_safe(const Value& v, const Args&) { return v; }

Value f_escape(const Value& v, const Args&) {
  std::string out;
  for (char c : v.str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_wordcount(const Value& v, const Args&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(v.str())) {
    bool w = utf8::is_alnum(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Value f_center(const Value& v, const Args& a) {
  const Value* w = arg(a, 0, "width");
  int64_t width = w ? w->as_int() : 80;
  std::string s = v.str();
  int64_t len = static_cast<int64_t>(utf8::length(s));
  if (width <= len) return Value(s);
  int64_t marg = width - len;
  int64_t left = marg / 2 + (marg & width & 1);  // CPython's str.center
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

Value minmax(const Value& v, const Args& a, bool want_max) {
  bool cs = flag(a, 0, "case_sensitive");
  const Value* attr = arg(a, 1, "attribute");
  List l = iterate(v);
  if (l.empty()) return Value();
  size_t best = 0;
  auto key = [&](size_t k) { return fold(attr && !attr->is_none() ? attr_path(l[k], attr->str()) : l[k], cs); };
  for (size_t k = 1; k < l.size(); ++k) {
    if (want_max ? less(key(best), key(k)) : less(key(k), key(best))) best = k;
  }
  return l[best];
}

Value f_min(const Value& v, const Args& a) { return minmax(v, a, false); }
Value f_max(const Value& v, const Args& a) { return minmax(v, a, true); }

Value f_sum(const Value& v, const Args& a) {
  const Value* attr = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start ? *start : Value(static_cast<int64_t>(0));
  for (auto& item : iterate(v)) {
    Value x = attr && !attr->is_none() ? attr_path(item, attr->str()) : item;
    if (!x.is_number() || !total.is_number()) throw TypeError("sum filter: non-numeric item");
    if ((x.is_float() || total.is_float())) total = Value(total.as_double() + x.as_double());
    else total = Value(total.as_int() + x.as_int());
  }
  return total;
}

Value f_attr(const Value& v, const Args& a) {
  const Value* n = arg(a, 0, "name");
  if (!n) throw TypeError("attr filter needs a name");
  return get_attr(v, n->str());
}

Value f_pprint(const Value& v, const Args&) { return Value(v.repr()); }

const std::map<std::string, FilterFn, std::less<>>& registry() {
  static const std::map<std::string, FilterFn, std::less<>> r = {
      {"trim", f_trim},         {"length", f_length},       {"count", f_length},
      {"tojson", f_tojson},     {"items", f_items},         {"select", f_select},
      {"reject", f_reject},     {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr},
      {"map", f_map},           {"join", f_join},           {"default", f_default},
      {"d", f_default},         {"string", f_string},       {"lower", f_lower},
      {"upper", f_upper},       {"title", f_title},         {"capitalize", f_capitalize},
      {"first", f_first},       {"last", f_last},           {"replace", f_replace},
      {"indent", f_indent},     {"list", f_list},           {"unique", f_unique},
      {"reverse", f_reverse},   {"sort", f_sort},           {"dictsort", f_dictsort},
      {"int", f_int},           {"float", f_float},         {"abs", f_abs},
      {"round", f_round},       {"batch", f_batch},         {"safe", f_safe},
      {"e", f_escape},          {"escape", f_escape},       {"forceescape", f_escape},
      {"wordcount", f_wordcount}, {"center", f_center},     {"min", f_min},
      {"max", f_max},           {"sum", f_sum},             {"attr", f_attr},
      {"pprint", f_pprint},
  };
  return r;
}

}  // namespace

const FilterFn* find_filter(std::string_view name) {
  auto& r = registry();
  auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

Value apply_filter(std::string_view name, const Value& v, const Args& args) {
  const FilterFn* f = find_filter(name);
  if (!f) throw TypeError("unknown filter '" + std::string(name) + "'");
  return (*f)(v, args);
}

}  // namespace portllm::tok::jinja
