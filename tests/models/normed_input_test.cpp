// The decoder's norm handed to the sub-layers unevaluated (model/layers/normed_input.h): with an
// ADD_RMS_NORM_MATMUL kernel present, the first projection of each sub-layer runs the norm (qkv,
// the MLP's gate_up, the MoE router) and the residual stream alternates between two buffers. On
// the CPU only the reference has that op, so the test registers a stand-in kernel (the
// reference's composition, registered as an ordinary kernel so the model takes the fused path)
// and checks that the fixtures still match transformers, token by token and in chunks.
#include <gtest/gtest.h>

#include <string>

#include "ops/op_args.h"
#include "ops/registry.h"

#include "../common/fixture_parity.h"

using namespace portllm;
using namespace portllm::testing;

namespace {
bool g_enabled = false, g_gated_too = true;  // the stand-in takes gated projections (gate_up) too
int g_calls = 0, g_aliased = 0, g_with_h = 0;

void register_stand_in() {
  static const bool once = [] {
    register_kernel<AddRmsNormMatmulArgs>(
        Op::ADD_RMS_NORM_MATMUL, DeviceKind::CPU, "test.add_rms_norm_matmul", 50,
        [](const OpDesc& d, const DeviceCaps&) { return g_enabled && (g_gated_too || !(d.flags & 1u)); },
        [](const AddRmsNormMatmulArgs& a, Stream& s) {
          ++g_calls;
          g_aliased += a.residual_out.data == a.residual.data || a.residual_out.data == a.x.data;
          g_with_h += a.h.defined();
          KernelRegistry::instance().reference(Op::ADD_RMS_NORM_MATMUL)->run(&a, s);
        });
    return true;
  }();
  (void)once;
}

struct FusedNormOn {
  FusedNormOn() {
    register_stand_in();
    g_enabled = true;
    g_calls = g_aliased = g_with_h = 0;
  }
  ~FusedNormOn() { g_enabled = false; }
};
}  // namespace

TEST(NormedInput, DenseDecoderWithTheFusedNormMatchesTransformers) {
  for (const char* name : {"qwen3-tiny", "llama3-tiny", "qwen2-tiny"}) {
    FusedNormOn on;
    EXPECT_LE(max_logit_diff(name, 1), 1e-3) << name;
    EXPECT_LE(max_logit_diff(name, 3), 1e-3) << name;
    const ModelConfig cfg = load_config(fixture(name));
    // Every layer but the first: qkv and gate_up (Qwen2's qkv bias included); layer 0's input norm
    // has no delta to add and runs as RMS_NORM. Two parity runs, T / 1 + ceil(T / 3) steps.
    EXPECT_GE(g_calls, 2 * (2 * cfg.num_layers - 1)) << name;
    EXPECT_EQ(g_aliased, 0) << name;
    EXPECT_EQ(g_with_h, 0) << name;  // nothing reads h after a dense projection
  }
}

TEST(NormedInput, MoeRouterKeepsHForTheExperts) {
  FusedNormOn on;
  EXPECT_LE(max_logit_diff("qwen3moe-tiny", 1), 1e-3);
  EXPECT_GT(g_with_h, 0);  // the router's call stores h, which the experts read
  EXPECT_EQ(g_aliased, 0);
}

TEST(NormedInput, HybridDecoderWithTheFusedNormMatchesTransformers) {
  // Qwen3-Next / Qwen3.5: 1 + w norms into the Gated DeltaNet's in_proj, the gated attention's
  // qkv, the MLP's gate_up and the MoE router (whose h the shared expert reads again).
  for (const char* name : {"qwen3next-tiny", "qwen35text-tiny", "qwen35moetext-tiny"}) {
    FusedNormOn on;
    EXPECT_LE(max_logit_diff(name, 1), 1e-3) << name;
    EXPECT_GT(g_calls, 0) << name;
    EXPECT_EQ(g_aliased, 0) << name;
  }
}

TEST(NormedInput, WithoutTheKernelNothingIsFused) {
  register_stand_in();
  g_calls = 0;
  EXPECT_LE(max_logit_diff("qwen3-tiny", 1), 1e-3);
  EXPECT_EQ(g_calls, 0);
}

// MATMUL_ADD_RMS_NORM: the sub-layer's last projection (o_proj, down_proj) with the residual add
// and the next norm in its last block, taken where the next projection cannot take the norm. A
// stand-in (the reference as an ordinary kernel) as above; the fixtures must still match.
namespace {
bool g_last_block = false;
int g_last_calls = 0;

struct LastBlockNormOn {
  LastBlockNormOn() {
    static const bool once = [] {
      register_kernel<MatmulAddRmsNormArgs>(
          Op::MATMUL_ADD_RMS_NORM, DeviceKind::CPU, "test.matmul_add_rms_norm", 50,
          [](const OpDesc&, const DeviceCaps&) { return g_last_block; },
          [](const MatmulAddRmsNormArgs& a, Stream& s) {
            ++g_last_calls;
            KernelRegistry::instance().reference(Op::MATMUL_ADD_RMS_NORM)->run(&a, s);
          });
      return true;
    }();
    (void)once;
    g_last_block = true;
    g_last_calls = 0;
  }
  ~LastBlockNormOn() { g_last_block = false; }
};
}  // namespace

TEST(NormedInput, DenseDecoderWithTheNormInTheLastProjectionMatchesTransformers) {
  for (const char* name : {"qwen3-tiny", "llama3-tiny", "qwen2-tiny"}) {
    LastBlockNormOn on;
    EXPECT_LE(max_logit_diff(name, 1), 1e-3) << name;
    EXPECT_LE(max_logit_diff(name, 3), 1e-3) << name;
    const ModelConfig cfg = load_config(fixture(name));
    // Every norm but layer 0's input norm (no projection before it), the final one included: 2L
    // per forward, two parity runs.
    EXPECT_GE(g_last_calls, 2 * 2 * cfg.num_layers) << name;
  }
}

TEST(NormedInput, TheFusedNormFirstTheLastBlockWhereItCannot) {
  // As on the H200 at Qwen3-8B: ADD_RMS_NORM_MATMUL takes the qkv projection but not the gated
  // gate_up, so o_proj runs the post-attention norm in its last block and down_proj stays a MATMUL.
  for (const char* name : {"qwen3-tiny", "qwen3moe-tiny", "qwen35text-tiny"}) {
    FusedNormOn fused;
    g_gated_too = false;
    LastBlockNormOn last;
    EXPECT_LE(max_logit_diff(name, 1), 1e-3) << name;
    if (std::string(name) != "qwen3moe-tiny") {
      EXPECT_GT(g_last_calls, 0) << name;
    }
    EXPECT_GT(g_calls, 0) << name;
    EXPECT_EQ(g_aliased, 0) << name;
    g_gated_too = true;
  }
}
