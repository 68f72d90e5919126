// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): byte-level vocabularies
// (GPT-2, Llama 3, Qwen, DeepSeek) and SentencePiece-style ones ("▁", byte_fallback, unk).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/string_map.h"
#include "tokenizer/word_cache.h"

namespace portllm::tok {

class BpeModel {
 public:
  // `where` names the file for errors ("tokenizer.json").
  BpeModel(const nlohmann::json& model, const std::string& where);

  // Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  // Byte-level fast path: tokenize() then takes raw bytes and applies the GPT-2 byte mapping
  // itself, so the word cache is keyed by the short raw word and hits skip the mapping.
  // Returns false (and changes nothing) unless all 256 byte characters are in the vocab.
  bool enable_byte_level_input();

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when `id` is not in the vocabulary.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    int32_t len;
  };
  void tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const;
  void initial_symbols(std::string_view word, std::vector<Symbol>& sym) const;
  void merge(std::vector<Symbol>& sym, std::vector<int32_t>& out) const;
  const Merge* find_merge(int32_t a, int32_t b) const {
    const uint64_t key = pair_key(a, b);
    for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> merge_shift_;; i = (i + 1) & merge_mask_) {
      if (merge_keys_[i] == key) return &merge_vals_[i];
      if (merge_keys_[i] == kEmptyKey) return nullptr;
    }
  }
  void insert_merge(uint64_t key, Merge m);

  StringMap<int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  // Merges in an open-addressing table (linear probing): the hot lookup of BPE.
  static constexpr uint64_t kEmptyKey = ~0ull;
  std::vector<uint64_t> merge_keys_;
  std::vector<Merge> merge_vals_;
  size_t merge_mask_ = 0;
  int merge_shift_ = 64;
  bool byte_input_ = false;
  int32_t byte_char_ids_[256] = {};  // raw byte -> id of its byte-level character
  std::optional<int32_t> unk_id_;
  std::vector<int32_t> byte_ids_;  // <0xXX> ids when byte_fallback (all 256 present), else empty
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;

  // Word -> ids cache (bounded, see WordCache).
  mutable std::mutex cache_mu_;
  mutable WordCache cache_;
  static constexpr size_t kCacheMaxWordBytes = 256;
};

}  // namespace portllm::tok
