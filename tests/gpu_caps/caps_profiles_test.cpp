// Capability profiles (src/backends/gpu/caps_profiles.h) checked on the CPU: what each MUSA
// architecture and a few NVIDIA ones may run, from the property values their runtimes report.
#include "backends/gpu/caps_profiles.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"

namespace portllm::gpu {
namespace {

// Properties as a MUSA runtime reports them (warp size per arch, 48 KB default shared memory,
// a larger opt-in value that the profile must not expose).
GpuDeviceProps musa_props(int arch) {
  GpuDeviceProps p;
  p.name = musa_arch_board(arch);
  p.warp_size = nominal_warp_size(GpuVendor::MTHREADS, arch);
  p.num_compute_units = 128;
  p.shared_mem_per_block = 48 * 1024;
  p.shared_mem_per_block_optin = 96 * 1024;
  p.cooperative_launch = true;  // even if a runtime claimed it, MUSA profiles turn it off
  p.total_memory = size_t(48) << 30;
  return p;
}

GpuDeviceProps h200_props() {
  GpuDeviceProps p;
  p.name = "NVIDIA H200";
  p.warp_size = 32;
  p.num_compute_units = 132;
  p.shared_mem_per_block = 48 * 1024;
  p.shared_mem_per_block_optin = 227 * 1024;
  p.cooperative_launch = true;
  p.total_memory = size_t(141) << 30;
  return p;
}

TEST(CapsProfiles, Mp21HasNoBf16NoFp8NoFlashAttention) {
  const DeviceCaps c = gpu_caps_from_profile(GpuVendor::MTHREADS, 21, musa_props(21));
  EXPECT_EQ(c.kind, DeviceKind::MUSA);
  EXPECT_EQ(c.vendor, "mthreads");
  EXPECT_EQ(c.arch, 21);
  EXPECT_EQ(c.warp_size, 128);
  EXPECT_FALSE(c.bf16_blas);
  EXPECT_FALSE(c.bf16_matmul);
  EXPECT_FALSE(c.fp8);
  EXPECT_FALSE(c.flash_attention);
}

TEST(CapsProfiles, Mp22HasBf16BlasButNoMatrixUnitsOrFp8) {
  const DeviceCaps c = gpu_caps_from_profile(GpuVendor::MTHREADS, 22, musa_props(22));
  EXPECT_EQ(c.warp_size, 128);
  EXPECT_TRUE(c.bf16_blas);
  EXPECT_FALSE(c.bf16_matmul);
  EXPECT_FALSE(c.fp8);
  EXPECT_TRUE(c.flash_attention);
}

TEST(CapsProfiles, Mp31HasBf16MatrixUnitsAndFp8) {
  const DeviceCaps c = gpu_caps_from_profile(GpuVendor::MTHREADS, 31, musa_props(31));
  EXPECT_TRUE(c.bf16_blas);
  EXPECT_TRUE(c.bf16_matmul);
  EXPECT_TRUE(c.fp8);
  EXPECT_TRUE(c.flash_attention);
}

TEST(CapsProfiles, MusaGapsAreClosedOnEveryArch) {
  for (int arch : {21, 22, 31}) {
    const DeviceCaps c = gpu_caps_from_profile(GpuVendor::MTHREADS, arch, musa_props(arch));
    EXPECT_EQ(c.shared_mem_per_block_optin, kMusaMaxDynamicSmem) << arch;  // no opt-in above 48 KB
    EXPECT_LE(c.shared_mem_per_block, kMusaMaxDynamicSmem) << arch;
    EXPECT_FALSE(c.cooperative_launch) << arch;
    EXPECT_FALSE(c.programmatic_launch) << arch;  // no PDL: ordinary launches, device calls no-ops
    EXPECT_EQ(c.max_cluster_blocks, 0) << arch;   // no thread-block clusters
    EXPECT_FALSE(c.graphs) << arch;  // opt-in
    EXPECT_TRUE(gpu_caps_from_profile(GpuVendor::MTHREADS, arch, musa_props(arch), true).graphs) << arch;
    EXPECT_EQ(c.preferred_page_size, 64) << arch;
    EXPECT_EQ(c.num_compute_units, 128) << arch;
    EXPECT_EQ(c.total_memory, size_t(48) << 30) << arch;
  }
}

TEST(CapsProfiles, EmulatedProfileKeepsThePhysicalWarpSize) {
  // Emulation: an NVIDIA GPU (warp 32) under the MP22 profile. The caps report what the hardware
  // executes (kernels are compiled for it); the nominal 128 stays a property of the profile.
  GpuDeviceProps p = h200_props();
  const DeviceCaps c = gpu_caps_from_profile(GpuVendor::MTHREADS, 22, p);
  EXPECT_EQ(c.warp_size, 32);
  EXPECT_EQ(nominal_warp_size(GpuVendor::MTHREADS, 22), 128);
  EXPECT_EQ(c.shared_mem_per_block_optin, kMusaMaxDynamicSmem);  // the H200's 227 KB is hidden
  EXPECT_FALSE(c.cooperative_launch);
  EXPECT_FALSE(c.fp8);
}

TEST(CapsProfiles, NvidiaThresholdsStayNvidias) {
  const DeviceCaps h = gpu_caps_from_profile(GpuVendor::NVIDIA, 90, h200_props());
  EXPECT_EQ(h.kind, DeviceKind::CUDA);
  EXPECT_EQ(h.vendor, "nvidia");
  EXPECT_TRUE(h.fp8 && h.bf16_matmul && h.bf16_blas && h.flash_attention && h.graphs && h.cooperative_launch);
  EXPECT_EQ(h.shared_mem_per_block_optin, size_t(227 * 1024));
  EXPECT_EQ(h.preferred_page_size, 16);
  GpuDeviceProps t = h200_props();
  t.shared_mem_per_block_optin = 0;  // no opt-in attribute: the default limit stands
  const DeviceCaps turing = gpu_caps_from_profile(GpuVendor::NVIDIA, 75, t);
  EXPECT_FALSE(turing.bf16_blas);
  EXPECT_FALSE(turing.fp8);
  EXPECT_EQ(turing.shared_mem_per_block_optin, size_t(48 * 1024));
  EXPECT_FALSE(gpu_caps_from_profile(GpuVendor::NVIDIA, 86, t).fp8);
  EXPECT_TRUE(gpu_caps_from_profile(GpuVendor::NVIDIA, 89, t).fp8);
  // Programmatic dependent launch (griddepcontrol) is Hopper's: on sm_90, not on sm_89.
  EXPECT_TRUE(h.programmatic_launch);
  EXPECT_FALSE(gpu_caps_from_profile(GpuVendor::NVIDIA, 89, t).programmatic_launch);
  // Thread-block clusters likewise: 16 blocks on sm_90, none on sm_89.
  EXPECT_EQ(h.max_cluster_blocks, 16);
  EXPECT_EQ(gpu_caps_from_profile(GpuVendor::NVIDIA, 89, t).max_cluster_blocks, 0);
}

TEST(CapsProfiles, UnknownMusaArchIsAnError) {
  EXPECT_THROW(gpu_caps_from_profile(GpuVendor::MTHREADS, 80, musa_props(22)), Error);
  EXPECT_FALSE(known_musa_arch(30));
}

TEST(CapsProfiles, ArchFromEnvironment) {
  unsetenv("PORTLLM_MUSA_ARCH");
  EXPECT_EQ(musa_arch_from_env(22), 22);
  setenv("PORTLLM_MUSA_ARCH", "31", 1);
  EXPECT_EQ(musa_arch_from_env(22), 31);
  setenv("PORTLLM_MUSA_ARCH", "21", 1);
  EXPECT_EQ(musa_arch_from_env(22), 21);
  setenv("PORTLLM_MUSA_ARCH", "90", 1);
  EXPECT_THROW(musa_arch_from_env(22), Error);
  unsetenv("PORTLLM_MUSA_ARCH");
  unsetenv("PORTLLM_MUSA_GRAPHS");
  EXPECT_FALSE(musa_graphs_from_env());
  setenv("PORTLLM_MUSA_GRAPHS", "1", 1);
  EXPECT_TRUE(musa_graphs_from_env());
  unsetenv("PORTLLM_MUSA_GRAPHS");
}

}  // namespace
}  // namespace portllm::gpu
