#include <mutex>

#include "ops/conformance/cases.h"

namespace portllm::conformance {

void register_builtin_case_generators() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_basic_cases();
    register_matmul_cases();
    register_batched_matmul_cases();
    register_attention_cases();
    register_hybrid_cases();
    register_moe_cases();
    register_mla_cases();
    register_sample_cases();
    register_fused_cases();
    register_perf_cases();
  });
}

}  // namespace portllm::conformance
