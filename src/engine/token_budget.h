// The engine's default token budget per step (--max-num-batched-tokens unset).
#pragma once
#include <cstdint>

#include "backend/device.h"
#include "engine/engine.h"

namespace portllm {

// Tokens per step when --max-num-batched-tokens is not given. The chunked prefill size, where one
// is set. On GPUs, vLLM's defaults (its engine arguments by usage context and device memory):
// 16384 offline and 8192 behind a server on devices of 70 GiB or more, 8192 / 2048 on smaller
// ones; larger steps keep the prefill GEMMs in their efficient range (Qwen3-8B's throughput
// workload on the H200: 10,987 out tok/s at 2048, 11,113 at 8192, 11,128 at 16384; BENCHMARKS.md,
// twenty-seventh session). On the CPU: max(2048, max_model_len), as before. Never below
// max_num_seqs (one decode token each), nor, without chunked prefill, below max_model_len (a whole
// prompt must fit one step).
int64_t default_token_budget(const EngineConfig& cfg, DeviceKind kind, const DeviceCaps& caps, int64_t max_model_len);

}  // namespace portllm
