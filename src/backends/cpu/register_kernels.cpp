#include "backends/cpu/cpu_kernels.h"

namespace portllm::cpu {

void register_cpu_kernels() {
  register_matmul_kernels();
  register_attention_kernels();
  register_pointwise_kernels();
}

}  // namespace portllm::cpu
