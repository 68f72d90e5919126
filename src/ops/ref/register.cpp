#include "ops/ref/ref_kernels.h"

namespace portllm::ref {

void register_reference_kernels() {
  register_elementwise_ref();
  register_norm_ref();
  register_matmul_ref();
  register_attention_ref();
  register_hybrid_ref();
  register_moe_ref();
  register_mla_ref();
  register_sample_ref();
  register_fused_ref();
}

}  // namespace portllm::ref
