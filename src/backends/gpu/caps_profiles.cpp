#include "backends/gpu/caps_profiles.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace portllm::gpu {

bool known_musa_arch(int arch) { return arch == 21 || arch == 22 || arch == 31; }

std::string musa_arch_board(int arch) {
  switch (arch) {
    case 21: return "MTT S80/S3000";
    case 22: return "MTT S4000";
    case 31: return "MTT S5000";
    default: return {};
  }
}

int nominal_warp_size(GpuVendor vendor, int arch) {
  if (vendor == GpuVendor::NVIDIA) return 32;
  // MP21 and MP22 execute 128-wide warps. MP31's width is taken as 32 (what its runtime is
  // expected to report); GpuDevice checks the reported value against the kernels' constant, so a
  // wrong assumption here shows up as a clear error at device creation, not as wrong results.
  return arch >= 31 ? 32 : 128;
}

namespace {
void fill_common(DeviceCaps& c, const GpuDeviceProps& p) {
  c.name = p.name;
  c.warp_size = p.warp_size;
  c.num_compute_units = p.num_compute_units;
  c.shared_mem_per_block = p.shared_mem_per_block;
  c.shared_mem_per_block_optin = std::max(p.shared_mem_per_block_optin, p.shared_mem_per_block);
  c.cooperative_launch = p.cooperative_launch;
  c.total_memory = p.total_memory;
}
}  // namespace

DeviceCaps gpu_caps_from_profile(GpuVendor vendor, int arch, const GpuDeviceProps& p, bool graphs_opt_in) {
  DeviceCaps c;
  fill_common(c, p);
  c.arch = arch;
  if (vendor == GpuVendor::NVIDIA) {
    c.kind = DeviceKind::CUDA;
    c.vendor = "nvidia";
    c.bf16_matmul = arch >= 80;
    c.bf16_blas = arch >= 80;
    c.fp8 = arch >= 89;
    c.flash_attention = arch >= 80;
    c.graphs = true;
    c.programmatic_launch = arch >= 90;  // griddepcontrol: Hopper and later
    c.max_cluster_blocks = arch >= 90 ? 16 : 0;  // Hopper: 8 portable, 16 with the non-portable opt-in
    c.preferred_page_size = 16;
    return c;
  }
  // Moore Threads (MUSA). Thresholds by MUSA arch, never by CUDA compute capability.
  PL_CHECK(known_musa_arch(arch), "MUSA arch {} has no capability profile (known: 21, 22, 31)", arch);
  c.kind = DeviceKind::MUSA;
  c.vendor = "mthreads";
  c.bf16_blas = arch >= 22;        // muBLAS bf16 GEMM from MP22 (S4000)
  c.bf16_matmul = arch >= 31;      // bf16 matrix units: MP31 (S5000) only
  c.fp8 = arch >= 31;              // e4m3 matrix units: MP31 only (the seeds' FP8 minimum capability)
  c.flash_attention = arch >= 22;  // no flash attention kernels on MP21
  // Dynamic shared memory above 48 KB is not available: kernels that need more report
  // NOT_SUPPORTED through supports() and a sibling kernel (or the CPU) takes the op.
  c.shared_mem_per_block = std::min(c.shared_mem_per_block, kMusaMaxDynamicSmem);
  c.shared_mem_per_block_optin = std::min(c.shared_mem_per_block_optin, kMusaMaxDynamicSmem);
  c.cooperative_launch = false;    // not supported by MUSA: grid-wide sync kernels must not be chosen
  c.graphs = graphs_opt_in;        // graph capture is opt-in on MUSA
  c.preferred_page_size = 64;      // MUSA attention kernels want 64-token pages
  return c;
}

int musa_arch_from_env(int fallback) {
  const char* v = std::getenv("PORTLLM_MUSA_ARCH");
  if (!v || !*v) return fallback;
  const std::string_view s(v);
  const int arch = (s == "21") ? 21 : (s == "22") ? 22 : (s == "31") ? 31 : 0;
  if (!arch) PL_THROW("PORTLLM_MUSA_ARCH={}: expected 21 (MTT S80/S3000), 22 (MTT S4000) or 31 (MTT S5000)", v);
  return arch;
}

bool musa_graphs_from_env() {
  const char* v = std::getenv("PORTLLM_MUSA_GRAPHS");
  return v && std::string_view(v) == "1";
}

}  // namespace portllm::gpu
