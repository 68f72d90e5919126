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

// Token ids a step takes from device memory instead of from SeqWork::tokens: with async
// scheduling the previous step's sampled ids, still on the device when this step is launched
// (engine/engine_loop.cpp). Only for steps where every sequence feeds one token: sequence i reads
// ids[src_rows[i]] where src_rows[i] >= 0 and keeps its host token otherwise.
struct DeviceTokenFeed {
  Tensor ids;                 // [R] i32 on the step's device
  std::vector<int> src_rows;  // one per sequence of the step
};

// Writes the fed ids over token_ids (the batch's [n] ids, n = src_rows.size()), ordered on ctx's
// stream: one device copy per run of consecutive rows.
void apply_token_feed(OpContext& ctx, const Tensor& token_ids, const DeviceTokenFeed& feed);

ForwardBatch build_forward_batch(OpContext& ctx, const std::vector<SeqWork>& seqs, int64_t page_size);

}  // namespace portllm
