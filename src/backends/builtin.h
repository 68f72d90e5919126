// Registers every backend compiled into this build. Header-only on purpose: it is compiled in
// the binary and the tests, which see PORTLLM_HAVE_GPU when the GPU tree was built.
#pragma once
#include "backends/cpu/cpu_device.h"
#ifdef PORTLLM_HAVE_GPU
#include "backends/gpu/gpu_backend.h"
#endif

namespace portllm {

inline void register_builtin_backends() {
  register_cpu_backend();
#ifdef PORTLLM_HAVE_GPU
  register_gpu_backend();
#endif
}

}  // namespace portllm
