// How many KV blocks (and recurrent-state slots) the engine allocates. An explicit
// --num-kv-blocks wins; otherwise mem_fraction_static of the device's free memory (measured after
// the weights are loaded). On the CPU that fraction would take most of the host's RAM and zeroing
// it would take seconds, so it is also capped at what max_num_seqs sequences of max_model_len
// tokens can use, and at 2 GiB.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "backend/device.h"
#include "engine/engine.h"
#include "model/cache_spec.h"

namespace portllm {

struct KvPlan {
  int64_t num_blocks = 0;
  int64_t page_size = 16;
  DType dtype = DType::F32;
  int64_t num_state_slots = 0;
};

// A KV cache dtype by name: f32, f16, bf16, or fp8 (also fp8_e4m3, f8_e4m3); nullopt otherwise.
std::optional<DType> kv_dtype_from_name(std::string_view name);
// --kv-dtype: auto (the activation dtype) or a kv_dtype_from_name name; throws otherwise.
DType resolve_kv_dtype(const std::string& name, DType act_dtype);
KvPlan plan_kv_cache(const EngineConfig& cfg, const std::vector<LayerCacheSpec>& spec,
                     Device& device, DType act_dtype, int64_t max_model_len);

}  // namespace portllm
