// Capability profiles: what a GPU can do, derived from (vendor, arch, device properties) alone.
// The device code fills GpuDeviceProps from the vendor runtime and calls gpu_caps_from_profile();
// kernels' supports() predicates then read DeviceCaps. Keeping the table a pure function makes it
// testable on a CPU-only machine (tests/gpu_caps) and keeps vendor thresholds out of kernels and
// model code (ARCHITECTURE.md rule 3: vendor first, never NVIDIA thresholds on MUSA).
#pragma once
#include <cstddef>
#include <string>

#include "backend/device_caps.h"

namespace portllm::gpu {

enum class GpuVendor { NVIDIA, MTHREADS };

// What the vendor runtime reports about one device (a vendor-neutral copy of cudaDeviceProp /
// musaDeviceProp fields the profiles need).
struct GpuDeviceProps {
  std::string name;
  int warp_size = 32;                      // the physical warp size the runtime reports
  int num_compute_units = 1;               // SMs / MPs
  size_t shared_mem_per_block = 48 * 1024;
  size_t shared_mem_per_block_optin = 0;   // 0: the device has no opt-in above the default
  bool cooperative_launch = false;
  size_t total_memory = 0;
};

// Dynamic shared memory a MUSA kernel may use: 48 KB, the portable limit (rule 6).
constexpr size_t kMusaMaxDynamicSmem = 48 * 1024;

// Warp size of the vendor's architecture as its documentation states it (MUSA MP21/MP22: 128).
// Under MUSA emulation on an NVIDIA GPU this differs from the physical one (docs/backends/musa.md).
int nominal_warp_size(GpuVendor vendor, int arch);

// Marketing name of a MUSA architecture ("MTT S4000" for 22), empty if unknown.
std::string musa_arch_board(int arch);

// True for the MUSA architectures the profiles know (21, 22, 31).
bool known_musa_arch(int arch);

// The capability profile. arch: NVIDIA major*10+minor (90 = sm_90); MUSA 21/22/31.
// `graphs_opt_in` enables graph capture where the vendor makes it opt-in (MUSA).
DeviceCaps gpu_caps_from_profile(GpuVendor vendor, int arch, const GpuDeviceProps& p, bool graphs_opt_in = false);

// Not pure: the MUSA architecture from the environment. PORTLLM_MUSA_ARCH (21, 22, 31) when set,
// else `fallback`; an unknown value throws (it would select a profile nobody tested).
int musa_arch_from_env(int fallback);
// Not pure: PORTLLM_MUSA_GRAPHS=1 turns MUSA graph capture on (opt-in, rule 6).
bool musa_graphs_from_env();

}  // namespace portllm::gpu
