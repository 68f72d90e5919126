#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

namespace {

// True when normalizing cp cannot change the text: no decomposition, combining class 0 and not
// the second half of a canonical composition. Code points below U+0300 are all NFC-stable, so
// ASCII, Latin-1 and most CJK text skip utf8proc entirely (the speed-critical common case).
bool nfc_stable(char32_t cp) {
  if (cp < 0x300) return true;
  if (cp >= 0x1100 && cp <= 0x11FF) return false;  // Hangul jamo compose algorithmically
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  if (p->combining_class != 0) return false;
  if (p->decomp_seqindex != UINT16_MAX) return false;
  if (p->comb_index != UINT16_MAX && p->comb_index >= 0x8000) return false;
  return true;
}

class UnicodeNormalizer : public Normalizer {
 public:
  UnicodeNormalizer(int options, bool quick_nfc) : options_(options), quick_nfc_(quick_nfc) {}
  void normalize(std::string& text) const override {
    if (!quick_nfc_) {
      text = apply(text);
      return;
    }
    // NFC never composes across a newline, so only lines holding a code point that NFC could
    // change are normalized; typical text has none and is left untouched.
    std::string out;
    size_t done = 0;  // text[0, done) is already in `out`
    size_t line = 0;  // start of the current line
    size_t i = 0;
    bool dirty = false;
    auto end_line = [&](size_t end) {
      if (dirty) {
        out.append(text, done, line - done);
        out += apply(std::string_view(text).substr(line, end - line));
        done = end;
      }
      dirty = false;
      line = end;
    };
    while (i < text.size()) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x80) {
        ++i;
        if (c == '\n') end_line(i);
        continue;
      }
      if (!dirty && !nfc_stable(next_codepoint(text, i))) dirty = true;
      else if (dirty) i += utf8_len(c);
    }
    end_line(text.size());
    if (done == 0) return;
    out.append(text, done, std::string::npos);
    text.swap(out);
  }

 private:
  std::string apply(std::string_view text) const {
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                static_cast<utf8proc_ssize_t>(text.size()), &out,
                                static_cast<utf8proc_option_t>(options_ | UTF8PROC_STABLE));
    if (n < 0) return std::string(text);  // text is valid UTF-8, so this does not happen
    std::string s(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return s;
  }

  int options_;
  bool quick_nfc_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prepend_);  // HF prepends only to non-empty text
  }

 private:
  std::string prepend_;
};

class Replace : public Normalizer {
 public:
  Replace(const std::string& pattern, std::string content, const std::string& where)
      : re_(pattern, where), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    std::string out;
    size_t last = 0;
    bool any = false;
    re_.for_each_match(text, [&](size_t s, size_t e) {
      any = true;
      out.append(text, last, s - last);
      out.append(content_);
      last = e;
    });
    if (!any) return;
    out.append(text, last, std::string::npos);
    text.swap(out);
  }

 private:
  Regex re_;
  std::string content_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
      const char32_t cp = next_codepoint(text, i);
      append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
    text.swap(out);
  }
};

bool is_unicode_space(char32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return true;
  if (cp < 0x80) return false;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
         cat == UTF8PROC_CATEGORY_ZP || cp == 0x85;
}

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t b = 0, e = text.size();
    if (left_) {
      while (b < e) {
        size_t i = b;
        if (!is_unicode_space(next_codepoint(text, i))) break;
        b = i;
      }
    }
    if (right_) {
      while (e > b) {
        size_t s = e - 1;
        while (s > b && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
        size_t i = s;
        if (!is_unicode_space(next_codepoint(text, i))) break;
        e = s;
      }
    }
    text = text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::string json_pattern(const nlohmann::json& j, const std::string& where) {
  if (j.is_object() && j.contains("String") && j["String"].is_string())
    return Regex::quote(j["String"].get<std::string>());
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string())
    return j["Regex"].get<std::string>();
  PL_THROW("{}: field 'pattern' must be {{\"String\": ...}} or {{\"Regex\": ...}}", where);
}

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_COMPOSE, true);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_DECOMPOSE, false);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_COMPOSE | UTF8PROC_COMPAT, false);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, false);
  if (type == "Prepend") return std::make_unique<Prepend>(json_get<std::string>(j, "prepend", where));
  if (type == "Replace")
    return std::make_unique<Replace>(json_pattern(json_get<nlohmann::json>(j, "pattern", where),
                                                  where),
                                     json_get<std::string>(j, "content", where), where);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(json_get_or<bool>(j, "strip_left", true, where),
                                   json_get_or<bool>(j, "strip_right", true, where));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    const auto list = json_get<nlohmann::json>(j, "normalizers", where);
    if (!list.is_array()) PL_THROW("{}: field 'normalizers' must be an array", where);
    for (size_t i = 0; i < list.size(); ++i) {
      auto n = make_normalizer(list[i], fmt::format("{}.normalizers[{}]", where, i));
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  PL_THROW("{}: unknown normalizer type '{}'", where, type);
}

}  // namespace portllm::tok
