// GPU backend tests. On machines without a GPU (CI) every test skips; with one, the conformance
// suite must pass on the "cuda" backend and a tiny model's logits must match the reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "ops/conformance/runner.h"

namespace portllm {
namespace {

int cuda_devices() {
  register_builtin_backends();
  const BackendInfo* b = BackendRegistry::instance().find("cuda");
  return b && b->device_count ? b->device_count() : 0;
}

TEST(GpuBackend, RegisteredWhenCompiledIn) {
#ifdef PORTLLM_HAVE_GPU
  register_builtin_backends();
  EXPECT_NE(BackendRegistry::instance().find("cuda"), nullptr);
#else
  GTEST_SKIP() << "built without the GPU tree";
#endif
}

TEST(GpuBackend, NoDeviceGivesClearError) {
  if (cuda_devices() > 0) GTEST_SKIP() << "a GPU is present";
#ifndef PORTLLM_HAVE_GPU
  GTEST_SKIP() << "built without the GPU tree";
#else
  try {
    BackendRegistry::instance().device("cuda");
    FAIL() << "opening cuda without a device must throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
#endif
}

TEST(GpuBackend, CapsAndAllocator) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = BackendRegistry::instance().device("cuda");
  const DeviceCaps& c = dev->caps();
  EXPECT_EQ(c.vendor, "nvidia");
  EXPECT_GT(c.arch, 0);
  EXPECT_EQ(c.warp_size, 32);
  EXPECT_GT(c.num_compute_units, 0);
  dev->empty_cache();
  const size_t before = dev->memory_stats().allocated;
  {
    Tensor t = dev->zeros(DType::BF16, {1024, 1024});
    EXPECT_GE(dev->memory_stats().allocated, before + t.nbytes());
    EXPECT_GE(dev->memory_stats().reserved, dev->memory_stats().allocated);
  }
  EXPECT_EQ(dev->memory_stats().allocated, before);
  // A freed block is cached: the same size again takes no driver allocation, a new size one.
  const int64_t drv = dev->memory_stats().driver_allocations;
  EXPECT_GE(drv, 1);
  { Tensor t = dev->zeros(DType::BF16, {1024, 1024}); }
  EXPECT_EQ(dev->memory_stats().driver_allocations, drv);
  { Tensor t = dev->zeros(DType::BF16, {4096, 1024}); }
  EXPECT_EQ(dev->memory_stats().driver_allocations, drv + 1);
  dev->empty_cache();
  EXPECT_GT(dev->memory_stats().total, 0u);
}

TEST(GpuBackend, ConformanceSuitePasses) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = BackendRegistry::instance().device("cuda");
  auto results = conformance::run_conformance(*dev, {});
  int pass = 0;
  for (auto& r : results) {
    EXPECT_NE(r.status, conformance::CaseResult::Status::Fail)
        << op_name(r.op) << " " << r.kernel << " " << r.case_name << ": " << r.message;
    pass += r.status == conformance::CaseResult::Status::Pass;
  }
  EXPECT_GT(pass, 100);
}

TEST(GpuBackend, TinyModelLogitsMatchReference) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string m = std::string(PORTLLM_TEST_DATA) + "/models/qwen3-tiny";
  const std::string cmd = std::string(PORTLLM_BINARY) + " check-logits --device cuda --tol 3e-2 --kv-dtype bf16 --model " + m +
                          " --reference " + m + "/reference.safetensors";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace portllm
