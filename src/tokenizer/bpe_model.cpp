#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <bit>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

BpeModel::BpeModel(const nlohmann::json& model, const std::string& file) {
  const std::string where = file + ": model";
  const std::string type = json_get_or<std::string>(model, "type", "BPE", where);
  if (type != "BPE")
    PL_THROW("{}: unsupported model type '{}' (only BPE is implemented)", where, type);

  if (!model.contains("vocab") || !model["vocab"].is_object())
    PL_THROW("{}: field 'vocab' missing or not an object", where);
  const nlohmann::json& vocab = model["vocab"];  // a reference: the vocab is large
  vocab_.reserve(vocab.size());
  int32_t max_id = -1;
  for (const auto& [tok, idj] : vocab.items()) {
    if (!idj.is_number_integer() || idj.get<int64_t>() < 0 || idj.get<int64_t>() > INT32_MAX)
      PL_THROW("{}.vocab: token '{}' has an invalid id", where, tok);
    const auto id = idj.get<int32_t>();
    vocab_.emplace(tok, id);
    max_id = std::max(max_id, id);
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [tok, id] : vocab_) id_to_token_[static_cast<size_t>(id)] = tok;

  byte_fallback_ = json_get_or<bool>(model, "byte_fallback", false, where);
  fuse_unk_ = json_get_or<bool>(model, "fuse_unk", false, where);
  ignore_merges_ = json_get_or<bool>(model, "ignore_merges", false, where);
  continuing_subword_prefix_ =
      json_get_or<std::string>(model, "continuing_subword_prefix", "", where);
  end_of_word_suffix_ = json_get_or<std::string>(model, "end_of_word_suffix", "", where);
  if (auto unk = json_get_or<std::string>(model, "unk_token", "", where); !unk.empty()) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) PL_THROW("{}: unk_token '{}' is not in the vocab", where, unk);
    unk_id_ = it->second;
  }
  if (byte_fallback_) {
    byte_ids_.resize(256);
    for (int b = 0; b < 256; ++b) {
      auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
      if (it == vocab_.end()) {
        byte_ids_.clear();  // incomplete byte set: fall back to unk like HF does
        break;
      }
      byte_ids_[static_cast<size_t>(b)] = it->second;
    }
  }

  if (!model.contains("merges")) PL_THROW("{}: missing field 'merges'", where);
  const auto& merges = model["merges"];
  if (!merges.is_array()) PL_THROW("{}: field 'merges' must be an array", where);
  size_t cap = 16;
  while (cap < merges.size() * 2) cap <<= 1;
  merge_keys_.assign(cap, kEmptyKey);
  merge_vals_.resize(cap);
  merge_mask_ = cap - 1;
  merge_shift_ = 64 - std::countr_zero(cap);
  const size_t plen = continuing_subword_prefix_.size();
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& m = merges[r];
    std::string a, b;
    if (m.is_string()) {  // "a b" (older files)
      const auto& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        PL_THROW("{}.merges[{}]: '{}' is not two tokens separated by one space", where, r, s);
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      PL_THROW("{}.merges[{}]: expected \"a b\" or [\"a\", \"b\"], got {}", where, r, m.dump());
    }
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end())
      PL_THROW("{}.merges[{}]: token '{}' is not in the vocab", where, r, a);
    if (ib == vocab_.end())
      PL_THROW("{}.merges[{}]: token '{}' is not in the vocab", where, r, b);
    const std::string merged =
        a + (plen && b.compare(0, plen, continuing_subword_prefix_) == 0 ? b.substr(plen) : b);
    auto im = vocab_.find(merged);
    if (im == vocab_.end())
      PL_THROW("{}.merges[{}]: merged token '{}' is not in the vocab", where, r, merged);
    // The first occurrence of a pair wins (lowest rank), as in HF.
    insert_merge(pair_key(ia->second, ib->second), Merge{static_cast<int32_t>(r), im->second});
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  const auto& s = id_to_token_[static_cast<size_t>(id)];
  return s.empty() ? nullptr : &s;
}

void BpeModel::insert_merge(uint64_t key, Merge m) {
  for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> merge_shift_;; i = (i + 1) & merge_mask_) {
    if (merge_keys_[i] == key) return;  // the first occurrence of a pair (lowest rank) wins
    if (merge_keys_[i] == kEmptyKey) {
      merge_keys_[i] = key;
      merge_vals_[i] = m;
      return;
    }
  }
}

bool BpeModel::enable_byte_level_input() {
  int32_t ids[256];
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    const char c = static_cast<char>(b);
    byte_level_encode(std::string_view(&c, 1), ch);
    auto it = vocab_.find(ch);
    if (it == vocab_.end()) return false;
    ids[b] = it->second;
  }
  std::copy(std::begin(ids), std::end(ids), byte_char_ids_);
  byte_input_ = true;
  return true;
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_ && !byte_input_) {
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (word.size() > kCacheMaxWordBytes) return tokenize_uncached(word, out);
  const uint64_t h = WordCache::hash(word);
  {
    std::lock_guard lock(cache_mu_);
    if (cache_.lookup(word, h, out)) return;
  }
  const size_t start = out.size();
  tokenize_uncached(word, out);
  std::lock_guard lock(cache_mu_);
  cache_.insert(word, h, std::span<const int32_t>(out).subspan(start));
}

void BpeModel::tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> sym;
  sym.clear();
  if (byte_input_) {
    if (ignore_merges_) {  // Llama 3: a word that is a whole vocab entry is used as is
      thread_local std::string mapped;
      mapped.clear();
      byte_level_encode(word, mapped);
      if (auto it = vocab_.find(mapped); it != vocab_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    sym.reserve(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
      const auto n = static_cast<int32_t>(i);
      sym.push_back({byte_char_ids_[static_cast<unsigned char>(word[i])], n - 1, n + 1, 1});
    }
    sym.back().next = -1;
  } else {
    initial_symbols(word, sym);
  }
  merge(sym, out);
}

void BpeModel::initial_symbols(std::string_view word, std::vector<Symbol>& sym) const {
  // Symbols form a doubly linked list over the word; merged-away symbols get len 0.
  auto add = [&](int32_t id, int32_t len) {
    const auto n = static_cast<int32_t>(sym.size());
    sym.push_back({id, n - 1, -1, len});
    if (n > 0) sym[static_cast<size_t>(n - 1)].next = n;
  };
  sym.reserve(word.size());
  // 1. One symbol per character (with byte fallback / unk for characters not in the vocab).
  int32_t pending_unk_len = 0;  // bytes covered by a pending (possibly fused) unk symbol
  auto flush_unk = [&] {
    if (pending_unk_len) add(*unk_id_, pending_unk_len);
    pending_unk_len = 0;
  };
  std::string key;
  size_t i = 0;
  while (i < word.size()) {
    const size_t b = i;
    i += std::min(utf8_len(static_cast<unsigned char>(word[i])), word.size() - i);
    const auto len = static_cast<int32_t>(i - b);
    std::string_view ch = word.substr(b, i - b);
    const bool decorated = (!continuing_subword_prefix_.empty() && b > 0) ||
                           (!end_of_word_suffix_.empty() && i == word.size());
    if (decorated) {
      key.clear();
      if (b > 0) key += continuing_subword_prefix_;
      key += ch;
      if (i == word.size()) key += end_of_word_suffix_;
      ch = key;
    }
    if (auto it = vocab_.find(ch); it != vocab_.end()) {
      flush_unk();
      add(it->second, len);
      continue;
    }
    if (!byte_ids_.empty()) {
      flush_unk();
      for (unsigned char c : ch) add(byte_ids_[c], 1);
      continue;
    }
    if (unk_id_) {
      if (!fuse_unk_) flush_unk();
      pending_unk_len += len;
    }
    // No unk token and no byte fallback: HF drops the character.
  }
  flush_unk();
}

void BpeModel::merge(std::vector<Symbol>& sym, std::vector<int32_t>& out) const {
  // Apply merges lowest rank first (ties: leftmost), re-validating stale queue entries.
  struct Cand {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const Cand& o) const {  // std heap functions build a max-heap: invert
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Cand> heap;  // binary heap via std::push_heap/pop_heap
  heap.clear();
  auto push_pair = [&](int32_t pos) {
    const auto& s = sym[static_cast<size_t>(pos)];
    if (s.next < 0) return;
    if (const Merge* m = find_merge(s.id, sym[static_cast<size_t>(s.next)].id)) {
      heap.push_back({m->rank, pos, m->new_id});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int32_t p = 0; p + 1 < static_cast<int32_t>(sym.size()); ++p) push_pair(p);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Cand c = heap.back();
    heap.pop_back();
    auto& s = sym[static_cast<size_t>(c.pos)];
    if (s.len == 0 || s.next < 0) continue;
    auto& right = sym[static_cast<size_t>(s.next)];
    const Merge* m = find_merge(s.id, right.id);
    if (!m || m->new_id != c.new_id) continue;
    s.id = c.new_id;
    s.len += right.len;
    right.len = 0;
    s.next = right.next;
    if (s.next >= 0) sym[static_cast<size_t>(s.next)].prev = c.pos;
    if (s.prev >= 0) push_pair(s.prev);
    push_pair(c.pos);
  }
  for (int32_t p = sym.empty() ? -1 : 0; p >= 0; p = sym[static_cast<size_t>(p)].next)
    out.push_back(sym[static_cast<size_t>(p)].id);
}

}  // namespace portllm::tok
