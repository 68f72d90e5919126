#include "engine/kv_sizing.h"

#include <algorithm>

#include "core/error.h"
#include "runtime/kv_cache.h"
#include "runtime/model_runner.h"

namespace portllm {

namespace {
constexpr int64_t kCpuKvCapBytes = int64_t(2) << 30;
}

std::optional<DType> kv_dtype_from_name(std::string_view name) {
  // fp8: e4m3 with no scale (vLLM's --kv-cache-dtype fp8 without checkpoint scales), written
  // saturating at +-448 (f32_to_f8e4m3_satfinite).
  if (name == "fp8" || name == "fp8_e4m3") return DType::F8E4M3;
  const std::optional<DType> d = dtype_from_name(name);
  if (d && (*d == DType::F32 || *d == DType::F16 || *d == DType::BF16 || *d == DType::F8E4M3)) return d;
  return std::nullopt;
}

DType resolve_kv_dtype(const std::string& name, DType act_dtype) {
  // auto: the activation dtype (f32 on the CPU, the checkpoint's dtype on GPUs), so the cache
  // adds no rounding the activations do not already have.
  if (name == "auto") return act_dtype;
  const std::optional<DType> d = kv_dtype_from_name(name);
  if (!d) PL_THROW("--kv-dtype: '{}' is not one of auto, f32, f16, bf16, fp8", name);
  return *d;
}

KvPlan plan_kv_cache(const EngineConfig& cfg, const std::vector<LayerCacheSpec>& spec,
                     Device& device, DType act_dtype, int64_t max_model_len) {
  KvPlan plan;
  plan.dtype = resolve_kv_dtype(cfg.kv_dtype, act_dtype);
  plan.page_size = cfg.page_size > 0 ? cfg.page_size : device.caps().preferred_page_size;
  if (plan.page_size < 1) plan.page_size = 16;
  if (has_recurrent_layers(spec)) plan.num_state_slots = cfg.max_num_seqs;
  const int64_t per_block = KvCache::bytes_per_block(spec, plan.page_size, plan.dtype);
  const int64_t per_slot = KvCache::bytes_per_state_slot(spec);
  const int64_t blocks_per_seq = (max_model_len + plan.page_size - 1) / plan.page_size;
  if (cfg.num_kv_blocks > 0) {
    plan.num_blocks = cfg.num_kv_blocks;
    return plan;
  }
  if (per_block == 0) {  // no paged layers: a token pool still drives the scheduler
    plan.num_blocks = blocks_per_seq * cfg.max_num_seqs;
    return plan;
  }
  if (!(cfg.mem_fraction_static > 0 && cfg.mem_fraction_static <= 1))
    PL_THROW("--mem-fraction-static must be in (0, 1], got {}", cfg.mem_fraction_static);
  const MemoryStats m = device.memory_stats();
  int64_t budget = int64_t(double(m.free) * cfg.mem_fraction_static);
  budget -= per_slot * plan.num_state_slots;
  if (device.kind() == DeviceKind::CPU) {
    budget = std::min(budget, kCpuKvCapBytes);
    budget = std::min(budget, blocks_per_seq * int64_t(cfg.max_num_seqs) * per_block);
  }
  plan.num_blocks = budget / per_block;
  if (plan.num_blocks < 1)
    PL_THROW("no memory left for the KV cache on {} ({} MiB free, {} KiB per block of {} tokens); "
             "lower --max-num-seqs or --max-model-len, or set --num-kv-blocks",
             device.name(), m.free >> 20, per_block >> 10, plan.page_size);
  return plan;
}

}  // namespace portllm
