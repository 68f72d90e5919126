#include "engine/token_budget.h"

#include <algorithm>

namespace portllm {

int64_t default_token_budget(const EngineConfig& cfg, DeviceKind kind, const DeviceCaps& caps, int64_t max_model_len) {
  int64_t b;
  if (cfg.chunked_prefill_size > 0) {
    b = cfg.chunked_prefill_size;
  } else if (kind != DeviceKind::CPU) {
    const bool large = caps.total_memory >= (size_t(70) << 30);
    b = cfg.serving ? (large ? 8192 : 2048) : (large ? 16384 : 8192);
    if (cfg.chunked_prefill_size == -1) b = std::max(b, max_model_len);
  } else {
    b = std::max<int64_t>(2048, max_model_len);
  }
  return std::max<int64_t>(b, cfg.max_num_seqs);
}

}  // namespace portllm
