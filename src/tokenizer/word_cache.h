// Bounded word -> ids cache for BPE. Natural text repeats words heavily, so most words skip the
// merge loop. Open addressing over one slot array plus two arenas (key bytes, ids): a hit costs
// one hash and about three cache lines, far less than std::unordered_map's node chasing.
// Not thread-safe by itself (BpeModel guards it with a mutex).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portllm::tok {

class WordCache {
 public:
  // `slots` must be a power of two; the cache is emptied when half full.
  explicit WordCache(size_t slots = size_t{1} << 18);

  static uint64_t hash(std::string_view word);
  // Appends the cached ids of `word` (whose hash is `h`) to `out`; false on a miss.
  bool lookup(std::string_view word, uint64_t h, std::vector<int32_t>& out) const;
  void insert(std::string_view word, uint64_t h, std::span<const int32_t> ids);
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t key_off, key_len;  // key_len 0 marks an empty slot (words are never empty)
    uint32_t ids_off, ids_len;
  };
  void clear();

  std::vector<Slot> slots_;
  size_t mask_;
  size_t used_ = 0;
  std::string keys_;
  std::vector<int32_t> ids_;
};

}  // namespace portllm::tok
