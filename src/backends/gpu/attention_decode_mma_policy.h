// The launch knobs of the tensor-core decode attention (attention_decode_mma.cu), each a measured
// default with a PORTLLM_ATTN_* override for measuring (attention_decode_mma_policy.cpp says what
// was measured). NVIDIA's fast path only; plain host code, so it needs no vendor header.
#pragma once
#include "backend/device_caps.h"

namespace portllm::gpu {

// The large-batch fp8 form's blocks per SM, the bound of its __launch_bounds__ (see the kernel).
constexpr int kLargeMinBlocks = 3;

int split_keys();           // least keys per split (AttnParams::split_keys)
bool early_tiles();         // small batches copy their first tiles before the wait
int early_trigger_keys();   // contexts up to which the successor launches right after the wait
int split_blocks_per_cu();  // blocks per compute unit the 4-warp form's splits aim at
int small_batch_warps();    // warps per block at small batches: 8, or 4 when forced
bool heads_as_n(bool fp8_cache);  // head dim 128, up to 8 heads per KV head: the query heads as the MMAs' N dimension
// Whether the grid follows the longest-first work order, for a launch of `blocks` blocks.
bool follow_work_order(int blocks, const DeviceCaps& caps);
// Tile buffers per warp of the large-batch fp8 form, for a launch of `blocks` blocks.
int large_stages(int blocks, const DeviceCaps& caps);

}  // namespace portllm::gpu
