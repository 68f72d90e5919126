#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace portllm::tok {

const char* const kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// How the matches of a split pattern are kept (HF SplitDelimiterBehavior).
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s, const std::string& where) {
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  PL_THROW("{}: unknown split behavior '{}'", where, s);
}

struct Span {
  size_t b, e;
  bool match;
};

// Splits `t` with `re` per `behavior` and hands each non-empty resulting piece to `fn`.
template <class F>
void split_stream(const Regex& re, Behavior behavior, bool invert, std::string_view t,
                  bool at_start, F&& fn) {
  if (behavior == Behavior::Isolated) {  // every match and every gap is its own piece
    size_t prev = 0;
    re.for_each_match(t, [&](size_t s, size_t e) {
      if (s > prev) fn(t.substr(prev, s - prev), at_start && prev == 0);
      fn(t.substr(s, e - s), at_start && s == 0);
      prev = e;
    });
    if (prev < t.size()) fn(t.substr(prev), at_start && prev == 0);
    return;
  }
  // 1. Cover the text with alternating match / non-match spans.
  std::vector<Span> spans;
  size_t prev = 0;
  re.for_each_match(t, [&](size_t s, size_t e) {
    if (s > prev) spans.push_back({prev, s, invert});
    spans.push_back({s, e, !invert});
    prev = e;
  });
  if (prev < t.size()) spans.push_back({prev, t.size(), invert});
  // 2. Merge spans per behavior (the same folds as HF's NormalizedString::split).
  std::vector<Span> res;
  switch (behavior) {
    case Behavior::Isolated:
      break;
    case Behavior::Removed:
      res = spans;
      break;
    case Behavior::Contiguous: {
      bool prev_match = false;
      for (const auto& s : spans) {
        if (s.match == prev_match && !res.empty()) res.back().e = s.e;
        else res.push_back({s.b, s.e, false});
        prev_match = s.match;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool prev_match = false;
      for (const auto& s : spans) {
        if (s.match && !prev_match && !res.empty()) res.back().e = s.e;
        else res.push_back({s.b, s.e, false});
        prev_match = s.match;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool prev_match = false;
      for (size_t k = spans.size(); k-- > 0;) {
        const auto& s = spans[k];
        if (s.match && !prev_match && !res.empty()) res.back().b = s.b;
        else res.push_back({s.b, s.e, false});
        prev_match = s.match;
      }
      std::reverse(res.begin(), res.end());
      break;
    }
  }
  for (const auto& s : res) {
    if (s.match || s.e == s.b) continue;
    fn(t.substr(s.b, s.e - s.b), at_start && s.b == 0);
  }
}

// Vector form of split_stream for the string-building path.
void split_piece(const Regex& re, Behavior behavior, bool invert, Piece&& piece,
                 std::vector<Piece>& out) {
  split_stream(re, behavior, invert, piece.text, piece.at_start,
               [&](std::string_view v, bool s) { out.push_back({std::string(v), s}); });
}

class RegexSplit : public PreTokenizer {
 public:
  RegexSplit(const std::string& pattern, Behavior behavior, bool invert, const std::string& where)
      : re_(pattern, where), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    for (auto& p : pieces) split_piece(re_, behavior_, invert_, std::move(p), out);
    pieces.swap(out);
  }
  bool can_stream() const override { return true; }
  void stream(std::string_view text, bool at_start, const PieceFn& fn) const override {
    split_stream(re_, behavior_, invert_, text, at_start, fn);
  }

 private:
  Regex re_;
  Behavior behavior_;
  bool invert_;
};


class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& where)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) re_ = std::make_unique<Regex>(kGpt2SplitPattern, where);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_)
      for (auto& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(p.text.begin(), ' ');  // (insert(0, " ") trips GCC 12's -Wrestrict)
    if (re_) {
      std::vector<Piece> out;
      out.reserve(pieces.size() * 2);
      for (auto& p : pieces) split_piece(*re_, Behavior::Isolated, false, std::move(p), out);
      pieces.swap(out);
    }
    std::string mapped;
    for (auto& p : pieces) {
      mapped.clear();
      byte_level_encode(p.text, mapped);
      p.text.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> re_;
};

enum class PrependScheme { Always, First, Never };

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split, const std::string& where)
      : rep_(std::move(replacement)), scheme_(scheme) {
    if (split) re_ = std::make_unique<Regex>(Regex::quote(rep_), where);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (auto& p : pieces) {
      std::string t;
      t.reserve(p.text.size() + rep_.size());
      for (char c : p.text) {
        if (c == ' ') t += rep_;
        else t.push_back(c);
      }
      const bool starts = t.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always ||
                      (scheme_ == PrependScheme::First && p.at_start)))
        t.insert(0, rep_);
      p.text.swap(t);
    }
    if (re_) {
      std::vector<Piece> out;
      for (auto& p : pieces) split_piece(*re_, Behavior::MergedWithNext, false, std::move(p), out);
      pieces.swap(out);
    }
  }

 private:
  std::string rep_;
  PrependScheme scheme_;
  std::unique_ptr<Regex> re_;
};

class SequencePre : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }
  bool can_stream() const override {
    for (const auto& p : parts_)
      if (!p->can_stream()) return false;
    return true;
  }
  void stream(std::string_view text, bool at_start, const PieceFn& fn) const override {
    stream_from(0, text, at_start, fn);
  }

 private:
  void stream_from(size_t k, std::string_view text, bool at_start, const PieceFn& fn) const {
    if (k == parts_.size()) return fn(text, at_start);
    parts_[k]->stream(text, at_start,
                      [&](std::string_view v, bool s) { stream_from(k + 1, v, s, fn); });
  }

  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> make_split(const std::string& pattern, Behavior b, bool invert,
                                         const std::string& where) {
  return std::make_unique<RegexSplit>(pattern, b, invert, where);
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j,
                                                 const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "Split") {
    const auto pattern = json_pattern(json_get<nlohmann::json>(j, "pattern", where), where);
    return make_split(pattern, parse_behavior(json_get<std::string>(j, "behavior", where), where),
                      json_get_or<bool>(j, "invert", false, where), where);
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(json_get_or<bool>(j, "add_prefix_space", true, where),
                                       json_get_or<bool>(j, "use_regex", true, where), where);
  if (type == "Digits")
    return make_split(json_get_or<bool>(j, "individual_digits", false, where) ? R"(\p{N})"
                                                                             : R"(\p{N}+)",
                      Behavior::Isolated, false, where);
  if (type == "Whitespace")  // keep runs of word chars and runs of other non-space chars
    return make_split(R"(\w+|[^\w\s]+)", Behavior::Removed, true, where);
  if (type == "WhitespaceSplit") return make_split(R"(\s+)", Behavior::Removed, false, where);
  if (type == "Punctuation") {
    const auto b = parse_behavior(json_get_or<std::string>(j, "behavior", "Isolated", where), where);
    return make_split(R"([\p{P}!-/:-@\[-`{-~])", b, false, where);
  }
  if (type == "Metaspace") {
    const auto rep = json_get_or<std::string>(j, "replacement", "\u2581", where);
    PrependScheme scheme = PrependScheme::Always;
    if (j.contains("prepend_scheme")) {
      const auto s = json_get<std::string>(j, "prepend_scheme", where);
      if (s == "always") scheme = PrependScheme::Always;
      else if (s == "first") scheme = PrependScheme::First;
      else if (s == "never") scheme = PrependScheme::Never;
      else PL_THROW("{}: unknown prepend_scheme '{}'", where, s);
    } else if (!json_get_or<bool>(j, "add_prefix_space", true, where)) {
      scheme = PrependScheme::Never;  // legacy key of older tokenizer.json files
    }
    return std::make_unique<Metaspace>(rep, scheme, json_get_or<bool>(j, "split", true, where),
                                       where);
  }
  if (type == "Sequence") {
    const auto list = json_get<nlohmann::json>(j, "pretokenizers", where);
    if (!list.is_array()) PL_THROW("{}: field 'pretokenizers' must be an array", where);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", where, i));
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<SequencePre>(std::move(parts));
  }
  PL_THROW("{}: unknown pre_tokenizer type '{}'", where, type);
}

}  // namespace portllm::tok
