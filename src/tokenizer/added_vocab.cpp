#include "tokenizer/added_vocab.h"

#include <utf8proc.h>

#include <algorithm>

#include "core/error.h"
#include "tokenizer/json_util.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

namespace {

bool is_space_cp(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return true;
  if (c < 0x80) return false;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return c == 0x85 || cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
         cat == UTF8PROC_CATEGORY_ZP;
}

bool is_word_cp(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

// Start offset of the code point that ends at `end` (end > 0).
size_t prev_char_start(std::string_view s, size_t end) {
  size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
  return p;
}

char32_t cp_at(std::string_view s, size_t pos) { return next_codepoint(s, pos); }

}  // namespace

AddedVocab::AddedVocab(const nlohmann::json& added, const std::string& file) {
  const std::string where = file + ": added_tokens";
  if (added.is_null()) return;
  if (!added.is_array()) PL_THROW("{}: must be an array", where);
  for (size_t i = 0; i < added.size(); ++i) {
    const auto& t = added[i];
    const std::string w = fmt::format("{}[{}]", where, i);
    AddedToken a{json_get<int32_t>(t, "id", w),
                 json_get<std::string>(t, "content", w),
                 json_get_or<bool>(t, "special", false, w),
                 json_get_or<bool>(t, "lstrip", false, w),
                 json_get_or<bool>(t, "rstrip", false, w),
                 json_get_or<bool>(t, "normalized", true, w),
                 json_get_or<bool>(t, "single_word", false, w)};
    if (a.id < 0) PL_THROW("{}: negative id", w);
    if (a.content.empty()) PL_THROW("{}: empty content", w);
    by_id_[a.id] = tokens_.size();
    by_content_[a.content] = tokens_.size();
    tokens_.push_back(std::move(a));
  }
}

void AddedVocab::build(const Normalizer* normalizer) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const auto& t = tokens_[i];
    if (t.normalized) {
      std::string c = t.content;
      if (normalizer) normalizer->normalize(c);
      if (!c.empty()) normalized_.insert(c, static_cast<int32_t>(i));
    } else {
      raw_.insert(t.content, static_cast<int32_t>(i));
    }
  }
}

const AddedToken* AddedVocab::find_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::find_content(std::string_view content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocab::Trie::insert(std::string_view s, int32_t token) {
  int32_t n = 0;
  first_byte[static_cast<unsigned char>(s[0])] = true;
  for (unsigned char c : s) {
    auto& next = nodes[static_cast<size_t>(n)].next;
    auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, INT32_MIN));
    if (it != next.end() && it->first == c) {
      n = it->second;
    } else {
      const auto child = static_cast<int32_t>(nodes.size());
      next.insert(it, {c, child});
      nodes.emplace_back();
      n = child;
    }
  }
  // Duplicate contents: the first token listed keeps the match.
  if (nodes[static_cast<size_t>(n)].token < 0) nodes[static_cast<size_t>(n)].token = token;
}

int32_t AddedVocab::Trie::longest(std::string_view text, size_t pos, size_t& len) const {
  int32_t best = -1;
  int32_t n = 0;
  for (size_t p = pos; p < text.size(); ++p) {
    const auto c = static_cast<unsigned char>(text[p]);
    const auto& next = nodes[static_cast<size_t>(n)].next;
    auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, INT32_MIN));
    if (it == next.end() || it->first != c) break;
    n = it->second;
    if (nodes[static_cast<size_t>(n)].token >= 0) {
      best = nodes[static_cast<size_t>(n)].token;
      len = p + 1 - pos;
    }
  }
  return best;
}

void AddedVocab::split_raw(std::string_view text, bool at_start, std::vector<Segment>& out) const {
  split(raw_, text, at_start, out);
}

void AddedVocab::split_normalized(std::string_view text, bool at_start,
                                  std::vector<Segment>& out) const {
  split(normalized_, text, at_start, out);
}

void AddedVocab::split(const Trie& trie, std::string_view text, bool at_start,
                       std::vector<Segment>& out) const {
  size_t emitted = 0;  // end of what has been pushed to `out`
  size_t pos = 0;
  if (!trie.empty()) {
    while (pos < text.size()) {
      if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
        ++pos;
        continue;
      }
      size_t len = 0;
      const int32_t idx = trie.longest(text, pos, len);
      if (idx < 0) {
        ++pos;
        continue;
      }
      const AddedToken& t = tokens_[static_cast<size_t>(idx)];
      size_t start = pos, stop = pos + len;
      if (t.single_word) {
        const bool left_ok = start == 0 || !is_word_cp(cp_at(text, prev_char_start(text, start)));
        const bool right_ok = stop == text.size() || !is_word_cp(cp_at(text, stop));
        if (!left_ok || !right_ok) {
          ++pos;
          continue;
        }
      }
      if (t.lstrip) {  // swallow whitespace on the left, but not text already emitted
        while (start > emitted) {
          const size_t p = prev_char_start(text, start);
          if (!is_space_cp(cp_at(text, p))) break;
          start = p;
        }
      }
      if (t.rstrip) {
        while (stop < text.size()) {
          size_t q = stop;
          if (!is_space_cp(next_codepoint(text, q))) break;
          stop = q;
        }
      }
      if (start > emitted)
        out.push_back({std::string(text.substr(emitted, start - emitted)), -1,
                       at_start && emitted == 0});
      out.push_back({std::string(), t.id, at_start && start == 0});
      emitted = stop;
      pos = stop;
    }
  }
  if (emitted < text.size())
    out.push_back({std::string(text.substr(emitted)), -1, at_start && emitted == 0});
}

}  // namespace portllm::tok
