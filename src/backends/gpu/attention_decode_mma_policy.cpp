// The tuning knobs of the tensor-core decode attention's launch (attention_decode_mma.cu): keys
// and blocks per split, tile buffers, warps per block, work order, early copies and triggers.
// Each is a measured default with a PORTLLM_ATTN_* override read once, for measuring; the
// measurements are beside each.
#include "backends/gpu/attention_decode_mma_policy.h"

#include <algorithm>

#include "backends/gpu/env_switch.h"

namespace portllm::gpu {

// Least keys per split at the actual context (AttnParams::split_keys): a split of fewer keys than
// this is not worth its partial, fence, counter and merge. 256 keys are 16 tiles: one round of
// copies for 8 warps with 2 buffers, two for 4. PORTLLM_ATTN_SPLIT_KEYS overrides it (read once),
// for measuring.
int split_keys() {
  static const int v = [] {
    const int k = env_int("PORTLLM_ATTN_SPLIT_KEYS", 256);
    return k > 0 ? k : 256;
  }();
  return v;
}

// Whether small batches copy their first tiles before the wait (AttnParams::early_tiles, see
// attn_decode_mma). PORTLLM_ATTN_EARLY=0 turns it off (read once), for measuring.
bool early_tiles() {
  static const bool v = env_switch("PORTLLM_ATTN_EARLY", {"0", "1"}, 1) == 1;
  return v;
}

// Keys up to which a sequence's blocks let the next kernel (the o_proj GEMV) launch right after
// their wait, so its first weight loads overlap the attention (AttnParams::early_trigger_keys).
// Past it they let it launch only when they exit: a long context's KV reads are the step's
// critical path, and the GEMV's weight loads, queued ahead of them in the memory system, stretch
// every round trip of the attention more than their head start gains. H200, batch 1, same binary
// (the cluster form): Qwen3-8B at 4k 4.75-4.77 -> 4.58-4.63 ms with the launch at exit;
// Qwen3-30B-A3B at 128-256 keys 3.03 -> 3.06 with it (there the attention reads little, and the
// exposed launch costs). PORTLLM_ATTN_TRIGGER_KEYS overrides it (read once), for measuring: 0 is
// always at exit.
int early_trigger_keys() {
  static const int v = std::max(0, env_int("PORTLLM_ATTN_TRIGGER_KEYS", 1024));
  return v;
}

// Whether the grid follows AttentionArgs::work_order (longest context first) for a launch of
// `blocks` blocks (splits aside). Blocks start in grid order, so in a ragged batch of a few waves
// the long contexts' blocks otherwise start late and run on alone. Up to 4 waves of the large form
// only: H200, Qwen3-8B heads, fp8 cache, ragged contexts 100..2042 (`ops perf --cold`,
// BENCHMARKS.md, thirty-eighth session), batch 96 (1.9 waves) 67.3 -> 56.9 us, 160 (3.2 waves)
// 100.1 -> 96.8, 32 (3 splits) 34.0 -> 31.7, but 256 (5.2 waves) 150.7 -> 155.8: there a tail of
// only short blocks, each bound by its first tile's latency, costs more than the long ones would.
// PORTLLM_ATTN_ORDER=off|always overrides the rule (read once), for measuring.
bool follow_work_order(int blocks, const DeviceCaps& caps) {
  static const int mode = env_switch("PORTLLM_ATTN_ORDER", {"off", "always", "auto"}, 2);
  return mode == 1 || (mode == 2 && blocks <= 4 * kLargeMinBlocks * caps.num_compute_units);
}

// Tile buffers per warp of the large-batch form with fragments from e4m3 tiles (kDirect), for a
// launch of `blocks` blocks (splits aside): 4 from one full wave of kLargeMinBlocks blocks per SM
// on, so three tiles per warp are in flight while one is multiplied (its buffers are half a bf16
// tile's, so 3 blocks of 4 warps still fit per SM: 3 x 69 KB); 2 below. H200, one binary
// (BENCHMARKS.md, fortieth session; `ops perf --cold`, Qwen3-8B heads, fp8 cache), us with 2 / 3 /
// 4 stages at every batch: 256 x 1k keys 152.1 / 149.1 / 146.6, 64 x 1k 58.1 / 56.2 / 55.5, 256
// ragged 100..2042 151.6 / 149.9 / 150.0, 160 ragged 100.1 / 99.1 / 99.2, but 32 ragged 34.3 / 35.2
// / 35.9 and 20 ragged 25.1 / 25.9 / 26.3 (256 and 160 blocks: under one wave, hence the bound);
// the throughput workload 11,341 / 11,352 out tok/s with 2 against 11,389 / 11,395 with 4 on one
// machine. PORTLLM_ATTN_STAGES=2|3|4 sets it at every batch (read once), for measuring.
int large_stages(int blocks, const DeviceCaps& caps) {
  static const int forced = env_switch("PORTLLM_ATTN_STAGES", {"auto", "2", "3", "4"}, 0);
  if (forced > 0) return forced + 1;
  return blocks >= kLargeMinBlocks * caps.num_compute_units ? 4 : 2;
}

// Warps per block at small batches (see attn_decode_mma in attention_decode_mma.cu for which): 8, so that a 256-key split's
// 16 tiles are all in flight at once (2 buffers per warp) and a short context is one round trip
// of cache reads; 4 warps take the 16 tiles in two rounds. The block then needs 140 KB of shared
// memory at D = 128 (one block per compute unit), so head dims of 256 keep 4 warps.
// PORTLLM_ATTN_WARPS=4 keeps 4 warps at every batch (read once), for measuring.
int small_batch_warps() {
  static const int v = env_switch("PORTLLM_ATTN_WARPS", {"4", "8"}, 1) == 0 ? 4 : 8;
  return v;
}

// Whether caches (fp8 or 16-bit) at head dim 128 with up to 8 query heads per KV head take the
// heads-as-N form of the kernel (attention_decode_heads_n.cuh). Default for fp8 caches: on the H200
// (forty-third session, BENCHMARKS.md) `ops test -b cuda -o ATTN_DECODE` passed with it and every
// Qwen3-8B-shaped fp8 case ran faster (256 x 1k keys 150.3 -> 139.1 us, ragged 256 x 100..2042
// 153.4 -> 148.0, batch 1 at 4k 12.3 -> 11.1), the throughput workload 11,482 -> 11,742 out tok/s.
// 16-bit caches pass conformance with it but their speed is not measured yet: opt-in there.
// PORTLLM_ATTN_HEADS_N=0 / 1 (read once) forces it off / on for both.
bool heads_as_n(bool fp8_cache) {
  static const int v = env_switch("PORTLLM_ATTN_HEADS_N", {"0", "1"}, -1);
  return v == 1 || (v == -1 && fp8_cache);
}

// Blocks per compute unit the splits of the 4-warp form aim at: about two, at every batch (one
// wave of the three that fit, and fewer partials to merge). Large batches aimed at four before;
// H200, one binary (BENCHMARKS.md, forty-first session; `ops perf --cold`, Qwen3-8B heads, fp8
// cache, us with four / two): 64 x 1k keys 55.2 / 51.1, 48 x 1000..1940 (the throughput workload's
// tail, longest first) 49.2 / 43.7, 32 x 100..1772 longest first 31.9 / 27.5, 20 x 100..1502 25.2 /
// 23.8; 96 and 256 sequences unchanged (no split either way). More splits lost everywhere: 16 per
// compute unit took 256 x 150..1074 from 96.8 to 134.5 us. PORTLLM_ATTN_SPLIT_BPC overrides it
// (read once), for measuring.
int split_blocks_per_cu() {
  static const int v = std::max(1, env_int("PORTLLM_ATTN_SPLIT_BPC", 2));
  return v;
}

}  // namespace portllm::gpu
