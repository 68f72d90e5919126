// Global functions of HF's chat-template environment: jinja2's range/namespace/dict plus
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "tokenizer/jinja/builtins.h"

namespace portllm::tok::jinja {
namespace {

Value g_range(const Args& a) {
  if (a.pos.empty() || a.pos.size() > 3) throw TypeError("range expected 1 to 3 arguments");
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = a.pos[0].as_int();
  } else {
    start = a.pos[0].as_int();
    stop = a.pos[1].as_int();
    if (a.pos.size() == 3) step = a.pos[2].as_int();
  }
  if (step == 0) throw TypeError("range() arg 3 must not be zero");
  List out;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    out.emplace_back(k);
    if (out.size() > 10'000'000) throw TypeError("range too big");
  }
  return Value(std::move(out));
}

Value g_namespace(const Args& a) {
  auto d = make_dict();
  d->is_namespace = true;
  for (auto& p : a.pos) {
    if (!p.is_dict()) throw TypeError("namespace() positional argument must be a mapping");
    for (auto& [k, v] : p.dict->items) d->set(k, v);
  }
  for (auto& [k, v] : a.kw) d->set(k, v);
  return Value(d);
}

Value g_dict(const Args& a) {
  auto d = make_dict();
  for (auto& p : a.pos) {
    if (!p.is_dict()) throw TypeError("dict() positional argument must be a mapping");
    for (auto& [k, v] : p.dict->items) d->set(k, v);
  }
  for (auto& [k, v] : a.kw) d->set(k, v);
  return Value(d);
}

Value g_raise_exception(const Args& a) {
  const Value* m = a.get(0, "message");
  throw TemplateRaise(m ? m->str() : std::string("template raised an exception"));
}

Value g_strftime_now(const Args& a) {
  const Value* f = a.get(0, "format");
  if (!f || !f->is_string()) throw TypeError("strftime_now(format) needs a format string");
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[512];
  size_t n = std::strftime(buf, sizeof buf, f->s.c_str(), &tm);
  return Value(std::string(buf, n));
}

struct Entry {
  const char* name;
  Value (*fn)(const Args&);
};
constexpr Entry kGlobals[] = {{"range", g_range},
                              {"namespace", g_namespace},
                              {"dict", g_dict},
                              {"raise_exception", g_raise_exception},
                              {"strftime_now", g_strftime_now}};

}  // namespace

bool is_known_global_function(std::string_view name) {
  for (auto& e : kGlobals)
    if (name == e.name) return true;
  return false;
}

Value make_global_function(std::string_view name) {
  for (auto& e : kGlobals) {
    if (name == e.name) {
      auto c = std::make_shared<Callable>();
      c->name = e.name;
      c->fn = e.fn;
      return Value(c);
    }
  }
  return Value();
}

}  // namespace portllm::tok::jinja
