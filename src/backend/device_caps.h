// What a device can do, as data. Kernels' supports() predicates read this; model code never
// asks which vendor it runs on. This is the C++ form of the seeds' forward_musa/_is_musa guards.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace portllm {

struct DeviceCaps {
  DeviceKind kind = DeviceKind::CPU;
  std::string vendor = "cpu";   // "cpu", "nvidia", "mthreads"
  std::string name;             // marketing name, e.g. "NVIDIA H200"
  int arch = 0;                 // CUDA: 90 for sm_90; MUSA: 21/22/31 (MP21, MP22, MP31)
  int warp_size = 1;
  int num_compute_units = 1;    // SMs / MPs / CPU threads
  size_t shared_mem_per_block = 0;
  size_t shared_mem_per_block_optin = 0;  // dynamic shared memory a kernel may opt into
  bool bf16_matmul = false;     // bf16 matrix units
  bool bf16_blas = false;       // vendor BLAS accepts bf16 GEMMs
  bool fp8 = false;             // e4m3 matrix units
  bool flash_attention = false;
  bool graphs = false;          // stream capture / graph replay usable by default
  bool cooperative_launch = false;
  bool programmatic_launch = false;  // a kernel may start while its predecessor drains (NVIDIA sm_90+ PDL)
  int max_cluster_blocks = 0;   // blocks of one thread-block cluster (shared memory visible across
                                // them; NVIDIA sm_90+: 16, the non-portable size); 0: no clusters
  bool aux_stream = false;      // an auxiliary stream exists for overlapping work
  bool avx2 = false;            // CPU: AVX2 + FMA + F16C
  int preferred_page_size = 16; // paged-attention block size this backend prefers
  size_t total_memory = 0;
};

struct MemoryStats {
  size_t allocated = 0;  // bytes currently handed out
  size_t peak = 0;       // high-water mark of allocated
  size_t reserved = 0;   // bytes held by the caching allocator (>= allocated)
  size_t free = 0;       // free device memory as the driver/OS reports it
  size_t total = 0;
  // Blocks the device's caching allocator has taken from the driver so far: each one is a driver
  // call that can stall the host for up to milliseconds. -1 where the device does not count them
  // (the CPU, which caches nothing).
  int64_t driver_allocations = -1;
};

}  // namespace portllm
