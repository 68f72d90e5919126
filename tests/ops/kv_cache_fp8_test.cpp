// An fp8 KV cache (--kv-dtype fp8) clips outliers: every kernel that writes a cache (the
// reference KV_WRITE, the CPU's and, on a machine with a GPU, the GPU's KV_WRITE and fused q/k
// preparation) stores +-448 for values beyond it, not NaN. The conformance suite compares those
// kernels with each other on values far from 448, so a NaN on both sides would pass there; this
// pins the semantics. A cache dtype no kernel writes is refused when the cache is made, naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "ops/op_args.h"
#include "ops/registry.h"
#include "runtime/kv_cache.h"

using namespace portllm;

namespace {
constexpr int64_t kPage = 16, kBlocks = 2, kD = 8;
constexpr int kSlot = 5;

Device& cpu() {
  register_builtin_backends();
  return *BackendRegistry::instance().device("cpu");
}

// The devices whose cache writers are checked, with their kernels' name prefix: the CPU (the
// reference's too), and the first CUDA device where there is one.
struct Target {
  Device* dev;
  std::vector<std::string> prefixes;
};
std::vector<Target> targets() {
  std::vector<Target> t{{&cpu(), {"ref", "cpu"}}};
  const BackendInfo* cuda = BackendRegistry::instance().find("cuda");
  if (cuda && cuda->device_count && cuda->device_count() > 0)
    t.push_back({BackendRegistry::instance().device("cuda").get(), {"gpu"}});
  return t;
}

Tensor upload(Device& dev, DType dt, std::vector<int64_t> shape, const void* host) {
  Tensor t = dev.empty(dt, std::move(shape));
  dev.copy_to_device(t.data, host, t.nbytes());
  return t;
}

// k and v [1, 1, kD] with outliers both ways and ordinary values, written to slot kSlot.
struct Inputs {
  Tensor k, v, k_cache, v_cache, slots;
};
Inputs make_inputs(Device& dev) {
  const float vals[kD] = {1000.f, -1000.f, 1.5f, -0.25f, 448.f, 470.f, -1e9f, 3.f};
  float neg[kD];
  for (int64_t d = 0; d < kD; ++d) neg[d] = -vals[d];
  const int32_t slot = kSlot;
  Inputs in;
  in.k = upload(dev, DType::F32, {1, 1, kD}, vals);
  in.v = upload(dev, DType::F32, {1, 1, kD}, neg);
  in.k_cache = dev.zeros(DType::F8E4M3, {kBlocks, kPage, 1, kD});
  in.v_cache = dev.zeros(DType::F8E4M3, {kBlocks, kPage, 1, kD});
  in.slots = upload(dev, DType::I32, {1}, &slot);
  return in;
}

// Runs the named kernel on a, which it must support.
template <class Args>
void run_kernel(Device& dev, const std::string& name, const Args& a) {
  const KernelInfo* k = KernelRegistry::instance().find(name);
  ASSERT_NE(k, nullptr) << name;
  ASSERT_TRUE(k->supports(a.desc(), dev.caps())) << name;
  k->run(&a, dev.stream());
  dev.synchronize();
}

void expect_clipped(Device& dev, const Inputs& in, const std::string& kernel) {
  std::vector<uint8_t> k(size_t(in.k_cache.nbytes())), v(size_t(in.v_cache.nbytes()));
  dev.copy_to_host(k.data(), in.k_cache.data, k.size());
  dev.copy_to_host(v.data(), in.v_cache.data, v.size());
  const float want[kD] = {448.f, -448.f, 1.5f, -0.25f, 448.f, 448.f, -448.f, 3.f};
  for (int64_t d = 0; d < kD; ++d) {
    EXPECT_EQ(f8e4m3_to_f32(k[size_t(kSlot * kD + d)]), want[d]) << kernel << " k[" << d << "]";
    EXPECT_EQ(f8e4m3_to_f32(v[size_t(kSlot * kD + d)]), -want[d]) << kernel << " v[" << d << "]";
  }
}
}  // namespace

TEST(KvCacheFp8, KvWriteKernelsClipOutliers) {
  for (const Target& t : targets())
    for (const std::string& prefix : t.prefixes) {
      const std::string name = prefix + ".kv_write";
      Inputs in = make_inputs(*t.dev);
      run_kernel(*t.dev, name, KvWriteArgs{in.k, in.v, in.k_cache, in.v_cache, in.slots});
      expect_clipped(*t.dev, in, name);
    }
}

TEST(KvCacheFp8, FusedPreparationClipsOutliers) {
  // No norm, no rotation (rot_dim 0): the cache gets k and v as they are.
  for (const Target& t : targets())
    for (const std::string& prefix : t.prefixes) {
      const std::string name = prefix + ".qk_norm_rope_kv_write";
      Device& dev = *t.dev;
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
      expect_clipped(dev, in, name);
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
