#include "tokenizer/word_cache.h"

#include <cstring>

namespace portllm::tok {

namespace {
constexpr size_t kMaxArenaBytes = size_t{64} << 20;  // also caps memory on adversarial input
}

WordCache::WordCache(size_t slots) : slots_(slots), mask_(slots - 1) {}

uint64_t WordCache::hash(std::string_view w) {
  const char* p = w.data();
  size_t n = w.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
  while (n >= 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    h = (h ^ k) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t k = 0;
    std::memcpy(&k, p, n);
    h = (h ^ k) * 0xC4CEB9FE1A85EC53ull;
  }
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

bool WordCache::lookup(std::string_view word, uint64_t h, std::vector<int32_t>& out) const {
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.key_len == 0) return false;
    if (s.hash == h && s.key_len == word.size() &&
        std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0) {
      out.insert(out.end(), ids_.begin() + s.ids_off, ids_.begin() + s.ids_off + s.ids_len);
      return true;
    }
  }
}

void WordCache::insert(std::string_view word, uint64_t h, std::span<const int32_t> ids) {
  if (word.empty()) return;
  if (used_ * 2 >= slots_.size() || keys_.size() + word.size() > kMaxArenaBytes ||
      (ids_.size() + ids.size()) * sizeof(int32_t) > kMaxArenaBytes)
    clear();
  size_t i = h & mask_;
  for (;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.key_len == 0) break;
    if (s.hash == h && s.key_len == word.size() &&
        std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0)
      return;  // already present
  }
  slots_[i] = {h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(word.size()),
               static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(ids.size())};
  keys_.append(word);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++used_;
}

void WordCache::clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{0, 0, 0, 0, 0});
  keys_.clear();
  ids_.clear();
  used_ = 0;
}

}  // namespace portllm::tok
