// An fp8 KV cache (--kv-dtype fp8) clips outliers: every CPU kernel that writes a cache (the
// reference KV_WRITE, the CPU KV_WRITE and the fused q/k preparation) stores +-448 for values
// beyond it, not NaN. The conformance suite compares those kernels with each other, so a NaN on
// both sides would pass there; this pins the semantics. A backend without fp8-cache kernels is
// refused when the cache is made, naming the dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "ops/op_args.h"
#include "ops/registry.h"
#include "runtime/kv_cache.h"

using namespace portllm;

namespace {
constexpr int64_t kPage = 16, kBlocks = 2, kD = 8;

Device& cpu() {
  register_builtin_backends();
  return *BackendRegistry::instance().device("cpu");
}

// k and v [1, 1, kD] with outliers both ways and ordinary values, written to slot 5.
struct Inputs {
  Tensor k, v, k_cache, v_cache, slots;
};
Inputs make_inputs(Device& dev) {
  Inputs in;
  in.k = dev.empty(DType::F32, {1, 1, kD});
  in.v = dev.empty(DType::F32, {1, 1, kD});
  const float vals[kD] = {1000.f, -1000.f, 1.5f, -0.25f, 448.f, 470.f, -1e9f, 3.f};
  for (int64_t d = 0; d < kD; ++d) {
    in.k.ptr<float>()[d] = vals[d];
    in.v.ptr<float>()[d] = -vals[d];
  }
  in.k_cache = dev.zeros(DType::F8E4M3, {kBlocks, kPage, 1, kD});
  in.v_cache = dev.zeros(DType::F8E4M3, {kBlocks, kPage, 1, kD});
  in.slots = dev.empty(DType::I32, {1});
  in.slots.ptr<int32_t>()[0] = 5;
  return in;
}

// Runs the named kernel on a, which it must support.
template <class Args>
void run_kernel(Device& dev, const char* name, const Args& a) {
  const KernelInfo* k = KernelRegistry::instance().find(name);
  ASSERT_NE(k, nullptr) << name;
  ASSERT_TRUE(k->supports(a.desc(), dev.caps())) << name;
  k->run(&a, dev.stream());
}

void expect_clipped(const Inputs& in, const std::string& kernel) {
  const uint8_t* k = in.k_cache.ptr<uint8_t>() + 5 * kD;
  const uint8_t* v = in.v_cache.ptr<uint8_t>() + 5 * kD;
  const float want[kD] = {448.f, -448.f, 1.5f, -0.25f, 448.f, 448.f, -448.f, 3.f};
  for (int64_t d = 0; d < kD; ++d) {
    EXPECT_EQ(f8e4m3_to_f32(k[d]), want[d]) << kernel << " k[" << d << "]";
    EXPECT_EQ(f8e4m3_to_f32(v[d]), -want[d]) << kernel << " v[" << d << "]";
  }
}
}  // namespace

TEST(KvCacheFp8, KvWriteKernelsClipOutliers) {
  Device& dev = cpu();
  for (const char* name : {"ref.kv_write", "cpu.kv_write"}) {
    Inputs in = make_inputs(dev);
    run_kernel(dev, name, KvWriteArgs{in.k, in.v, in.k_cache, in.v_cache, in.slots});
    expect_clipped(in, name);
  }
}

TEST(KvCacheFp8, FusedPreparationClipsOutliers) {
  // No norm, no rotation (rot_dim 0): the cache gets k and v as they are.
  Device& dev = cpu();
  for (const char* name : {"ref.qk_norm_rope_kv_write", "cpu.qk_norm_rope_kv_write"}) {
    Inputs in = make_inputs(dev);
    QkNormRopeKvWriteArgs a;
    a.q = dev.zeros(DType::F32, {1, 1, kD});
    a.k = in.k;
    a.v = in.v;
    a.positions = dev.zeros(DType::I32, {1});
    a.cos_sin = dev.zeros(DType::F32, {1, kD});
    a.rot_dim = 0;
    a.k_cache = in.k_cache;
    a.v_cache = in.v_cache;
    a.slot_mapping = in.slots;
    run_kernel(dev, name, a);
    expect_clipped(in, name);
  }
}

TEST(KvCacheFp8, CacheOfAnUnsupportedDtypeIsRefused) {
  // No kernel of any backend writes an i32 cache: the refusal names the dtype.
  Device& dev = cpu();
  OpContext ctx(dev);
  LayerCacheSpec s;
  s.kind = LayerCacheSpec::Kind::PagedKV;
  s.num_kv_heads = 1;
  s.head_dim_k = s.head_dim_v = kD;
  KvCacheConfig cfg;
  cfg.num_blocks = kBlocks;
  cfg.page_size = kPage;
  cfg.dtype = DType::F8E4M3;
  EXPECT_NO_THROW(KvCache(ctx, {s}, cfg));  // the CPU backend writes fp8 caches
  cfg.dtype = DType::I32;
  try {
    KvCache c(ctx, {s}, cfg);
    FAIL() << "an i32 KV cache was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-dtype i32"), std::string::npos) << e.what();
  }
}
