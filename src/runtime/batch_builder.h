// Builds a ForwardBatch from per-sequence work: which tokens to feed at which positions, the
// sequence's block table and state slot, and whether its next-token logits are wanted (all
// rows, or only the last one). This is where positions, slot mapping, block tables, sequence
// lengths and query offsets are computed, once, on the host, then uploaded.
#pragma once
#include <vector>

#include "model/forward_batch.h"
#include "ops/registry.h"

namespace portllm {

struct SeqWork {
  std::vector<int32_t> tokens;      // tokens fed this step
  int64_t start_pos = 0;            // position of tokens[0] (= tokens already in the cache)
  std::vector<int32_t> block_table; // covers positions [0, start_pos + tokens.size())
  int32_t state_slot = -1;
  enum class Logits { None, Last, All } logits = Logits::Last;
};

ForwardBatch build_forward_batch(OpContext& ctx, const std::vector<SeqWork>& seqs, int64_t page_size);

}  // namespace portllm
