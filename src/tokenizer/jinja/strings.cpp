#include "tokenizer/jinja/strings.h"

#include <algorithm>
#include <cstdlib>

#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja::pystr {

std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
  std::u32string cps = utf8::decode(s);
  std::u32string set = chars ? utf8::decode(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : utf8::is_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  return utf8::encode(std::u32string_view(cps).substr(b, e - b));
}

List split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right) {
  List out;
  if (sep) {
    if (sep->empty()) throw TypeError("empty separator");
    if (!from_right) {
      size_t pos = 0;
      int64_t n = 0;
      while (maxsplit < 0 || n < maxsplit) {
        size_t f = s.find(*sep, pos);
        if (f == std::string::npos) break;
        out.emplace_back(s.substr(pos, f - pos));
        pos = f + sep->size();
        ++n;
      }
      out.emplace_back(s.substr(pos));
      return out;
    }
    std::vector<std::string> rev;
    size_t end = s.size();
    int64_t n = 0;
    while (maxsplit < 0 || n < maxsplit) {
      if (end < sep->size()) break;
      size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string::npos) break;
      rev.push_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
      ++n;
    }
    rev.push_back(s.substr(0, end));
    for (auto it = rev.rbegin(); it != rev.rend(); ++it) out.emplace_back(*it);
    return out;
  }
  // Whitespace split: runs of whitespace separate, no empty strings.
  std::u32string cps = utf8::decode(s);
  std::vector<std::pair<size_t, size_t>> words;
  size_t k = 0;
  while (k < cps.size()) {
    while (k < cps.size() && utf8::is_space(cps[k])) ++k;
    if (k >= cps.size()) break;
    size_t b = k;
    while (k < cps.size() && !utf8::is_space(cps[k])) ++k;
    words.emplace_back(b, k);
  }
  if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
    if (!from_right) {
      size_t keep = static_cast<size_t>(maxsplit);
      size_t rest_b = words[keep].first;
      size_t rest_e = cps.size();
      while (rest_e > rest_b && utf8::is_space(cps[rest_e - 1])) --rest_e;
      words.resize(keep);
      words.emplace_back(rest_b, rest_e);
    } else {
      size_t drop = words.size() - static_cast<size_t>(maxsplit);
      size_t rest_e = words[drop - 1].second;
      size_t rest_b = 0;
      while (rest_b < rest_e && utf8::is_space(cps[rest_b])) ++rest_b;
      words.erase(words.begin(), words.begin() + static_cast<long>(drop));
      words.insert(words.begin(), {rest_b, rest_e});
    }
  }
  for (auto& [b, e] : words) out.emplace_back(utf8::encode(std::u32string_view(cps).substr(b, e - b)));
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every code point (and at both ends).
    std::u32string cps = utf8::decode(s);
    int64_t n = 0;
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (k < cps.size()) utf8::append(out, cps[k]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++n;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

int64_t count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8::length(s)) + 1;
  int64_t n = 0;
  for (size_t f = s.find(sub); f != std::string::npos; f = s.find(sub, f + sub.size())) ++n;
  return n;
}

static bool cased(char32_t c) { return utf8::is_lower_cased(c) || utf8::is_upper_cased(c); }

std::string title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8::decode(s)) {
    utf8::append(out, prev_cased ? utf8::lower(c) : utf8::upper(c));
    prev_cased = cased(c);
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (char32_t c : utf8::decode(s)) {
    utf8::append(out, first ? utf8::upper(c) : utf8::lower(c));
    first = false;
  }
  return out;
}

std::string format(const std::string& fmt, const Args& args) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    char c = fmt[k];
    if (c == '{' && k + 1 < fmt.size() && fmt[k + 1] == '{') { out += '{'; ++k; continue; }
    if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') { out += '}'; ++k; continue; }
    if (c != '{') { out += c; continue; }
    size_t e = fmt.find('}', k);
    if (e == std::string::npos) throw TypeError("str.format: single '{' in format string");
    std::string field = fmt.substr(k + 1, e - k - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      throw TypeError("str.format: unsupported field '{" + field + "}'");
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_idx < args.pos.size()) v = &args.pos[auto_idx++];
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      size_t idx = std::strtoul(field.c_str(), nullptr, 10);
      if (idx < args.pos.size()) v = &args.pos[idx];
    } else {
      v = args.kwarg(field);
    }
    if (!v) throw TypeError("str.format: no argument for '{" + field + "}'");
    out += v->str();
    k = e;
  }
  return out;
}

std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step) {
  auto as_i = [](const Value& v) -> int64_t {
    if (!(v.is_int() || v.is_bool())) throw TypeError("slice indices must be integers or None");
    return v.as_int();
  };
  bool has_start = !start.is_none() && !start.is_undefined();
  bool has_stop = !stop.is_none() && !stop.is_undefined();
  int64_t st = (step.is_none() || step.is_undefined()) ? 1 : as_i(step);
  if (st == 0) throw TypeError("slice step cannot be zero");
  int64_t b, e;
  if (st > 0) {
    b = has_start ? as_i(start) : 0;
    e = has_stop ? as_i(stop) : n;
    if (b < 0) b = std::max<int64_t>(b + n, 0);
    if (e < 0) e = std::max<int64_t>(e + n, 0);
    b = std::min(b, n);
    e = std::min(e, n);
  } else {
    b = has_start ? as_i(start) : n - 1;
    e = has_stop ? as_i(stop) : -1;
    if (has_start && b < 0) b = std::max<int64_t>(b + n, -1);
    if (has_stop && e < 0) e = std::max<int64_t>(e + n, -1);
    b = std::min(b, n - 1);
    e = std::min(e, n - 1);
  }
  std::vector<size_t> idx;
  if (st > 0)
    for (int64_t k = b; k < e; k += st) idx.push_back(static_cast<size_t>(k));
  else
    for (int64_t k = b; k > e; k += st) idx.push_back(static_cast<size_t>(k));
  return idx;
}

}  // namespace portllm::tok::jinja::pystr
