// The small-batch expert path of ops::moe_experts (MOE_GEMM in gather mode, then
// MOE_DOWN_COMBINE) end to end on the CPU. The CPU backend has no kernels for it, so the op layer
// normally runs the op sequence there; these tests register the two reference kernels again
// under a non-reference priority (the op layer takes a fused path only for real kernels), with
// the GPU kernel's batch limit (4 tokens), and check the MoE fixtures against transformers' logits through
// it: the new ops' definitions, the op layer's wiring (gate|up rows t*k+j, the shared-expert
// output aliased with out) and the fallback above the limit; and, switched on per test, the
// SwiGLU-epilogue pair (MOE_GEMM writing h, MOE_DOWN_COMBINE reading it: flags bit1 of both),
// which the op layer prefers when both have kernels. A separate binary, since the registrations
// change dispatch for the whole process (each OpContext has its own dispatcher, so the switch
// takes effect at the next model load).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "model/model.h"
#include "ops/op_args_moe.h"
#include "ops/registry.h"
#include "runtime/single_sequence.h"

#include "../common/fixture_parity.h"
#include "../common/model_fixtures.h"

using namespace portllm;
using namespace portllm::testing;

namespace {

std::atomic<int> g_gather_calls{0}, g_down_calls{0}, g_max_tokens{0};
std::atomic<int> g_swiglu_calls{0}, g_activated_calls{0};
std::atomic<bool> g_swiglu_on{false};  // whether the SwiGLU-epilogue kernels accept descriptors

// The reference kernel of op, registered again as a CPU kernel the dispatcher prefers to it.
void register_as_fast(Op op, const char* name, std::function<bool(const OpDesc&)> supports, std::atomic<int>& calls) {
  const KernelInfo* ref = KernelRegistry::instance().reference(op);
  ASSERT_NE(ref, nullptr) << op_name(op);
  KernelInfo k;
  k.op = op;
  k.device = DeviceKind::CPU;
  k.name = name;
  k.priority = KernelInfo::kReferencePriority + 1;
  k.supports = [supports](const OpDesc& d, const DeviceCaps&) { return supports(d); };
  auto run = ref->run;
  k.run = [run, &calls, op](const void* a, Stream& s) {
    ++calls;
    if (op == Op::MOE_DOWN_COMBINE) {
      const int t = int(static_cast<const MoeDownCombineArgs*>(a)->topk_ids.size(0));
      g_max_tokens = std::max(g_max_tokens.load(), t);
    }
    run(a, s);
  };
  KernelRegistry::instance().add(std::move(k));
}

void register_fused_kernels() {
  static bool done = false;
  if (done) return;
  done = true;
  cpu();  // registers the builtin kernels (the references) first
  register_as_fast(Op::MOE_GEMM, "test.moe_gemm_gather", [](const OpDesc& d) { return d.flags == 1u; },
                   g_gather_calls);
  register_as_fast(Op::MOE_DOWN_COMBINE, "test.moe_down_combine",
                   [](const OpDesc& d) { return d.dim[0] <= 4 && !(d.flags & 2u); }, g_down_calls);
  register_as_fast(Op::MOE_GEMM, "test.moe_gemm_swiglu", [](const OpDesc& d) { return d.flags == 3u && g_swiglu_on; },
                   g_swiglu_calls);
  register_as_fast(Op::MOE_DOWN_COMBINE, "test.moe_down_activated",
                   [](const OpDesc& d) { return d.dim[0] <= 4 && (d.flags & 2u) && g_swiglu_on; }, g_activated_calls);
}

struct FixtureCase {
  const char* name;
  double tol;
};
// Qwen3-MoE (softmax routing), DeepSeek-V2 (shared experts), DeepSeek-V3 (grouped sigmoid
// routing), its block-FP8 checkpoint, Qwen3.5-MoE (routed experts under a gated shared expert).
const FixtureCase kFixtures[] = {{"qwen3moe-tiny", 1e-3},      {"deepseekv2-tiny", 1e-3},
                                 {"deepseekv3-tiny", 1e-3},    {"deepseekv3fp8-tiny", 1e-2},
                                 {"qwen35moetext-tiny", 1e-3}};
}  // namespace

TEST(MoeFusedPath, DecodeTokenByTokenMatchesTransformers) {
  register_fused_kernels();
  for (auto& f : kFixtures) {
    const int before = g_down_calls;
    EXPECT_LE(max_logit_diff(f.name, 1), f.tol) << f.name;
    EXPECT_GT(g_down_calls - before, 0) << f.name << ": the fused path never ran";
  }
  EXPECT_EQ(g_gather_calls.load(), g_down_calls.load());
}

TEST(MoeFusedPath, SmallChunksMatchTransformers) {
  register_fused_kernels();
  for (auto& f : kFixtures) EXPECT_LE(max_logit_diff(f.name, 3), f.tol) << f.name;
  EXPECT_EQ(g_gather_calls.load(), g_down_calls.load());
}

TEST(MoeFusedPath, LargerBatchesTakeTheOpSequence) {
  register_fused_kernels();
  g_max_tokens = 0;
  // Chunks of 12 tokens are past the kernels' 4-token limit: the op layer falls back, and the
  // fused kernels only see the last, short chunk of the 40-token fixtures.
  for (auto& f : kFixtures) EXPECT_LE(max_logit_diff(f.name, 12), f.tol) << f.name;
  EXPECT_LE(g_max_tokens.load(), 4);
  EXPECT_EQ(g_gather_calls.load(), g_down_calls.load());
}

TEST(MoeFusedPath, SwigluEpilogueMatchesTransformers) {
  register_fused_kernels();
  g_swiglu_on = true;
  const int plain_gather = g_gather_calls, plain_down = g_down_calls;
  for (auto& f : kFixtures) {
    const int before = g_activated_calls;
    EXPECT_LE(max_logit_diff(f.name, 1), f.tol) << f.name;
    EXPECT_LE(max_logit_diff(f.name, 3), f.tol) << f.name;
    EXPECT_GT(g_activated_calls - before, 0) << f.name << ": the SwiGLU-epilogue path never ran";
  }
  g_swiglu_on = false;
  EXPECT_EQ(g_swiglu_calls.load(), g_activated_calls.load());
  // Preferred over the plain pair whenever both kernels exist.
  EXPECT_EQ(g_gather_calls.load(), plain_gather);
  EXPECT_EQ(g_down_calls.load(), plain_down);
}
