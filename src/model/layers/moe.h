// A sparse mixture-of-experts block (Qwen3-MoE, DeepSeek-V2/V3, reusable by other archs):
// router -> top-k routing (softmax, group-limited, or biased sigmoid) -> experts' SwiGLU over
// tokens grouped by expert -> weighted combine, plus optional always-on shared experts.
// Expert weights are stacked at load into [E, 2I, H] (gate|up) and [E, H, I] (down) device
// tensors from either checkpoint layout: one tensor per expert (`experts.N.gate_proj.weight`)
// or fused 3-D tensors (`experts.gate_up_proj`, `experts.down_proj`).
#pragma once
#include <optional>
#include <string>

#include "model/layers/mlp.h"
#include "model/linear.h"
#include "ops/ops_moe.h"

namespace portllm {

struct MoeSpec {
  int64_t num_experts = 0, top_k = 1, hidden = 0, intermediate = 0;
  int64_t shared_intermediate = 0;  // 0: no shared experts
  bool renormalize = false;         // norm_topk_prob
  float scale = 1.f;                // routed_scaling_factor
  MoeScoring scoring = MoeScoring::Softmax;
  MoeGroupScore group_score = MoeGroupScore::Max;
  int n_group = 1, topk_group = 1;
  bool score_bias = false;          // DeepSeek-V3 e_score_correction_bias
};

// Stacked expert weights of one projection: w [E, N, K], fp8 scales [E, N/bn, K/bk].
using ExpertWeights = ops::MoeExpertWeights;

struct SparseMoe {
  MoeSpec spec;
  Tensor router;      // [E, H] float (routers are never quantized)
  Tensor score_bias;  // [E] f32 or undefined
  ExpertWeights gate_up, down;
  std::optional<GatedMlp> shared;

  // prefix: the layer's mlp module, e.g. "model.layers.3.mlp".
  static SparseMoe load(WeightLoader& w, const std::string& prefix, const MoeSpec& spec);
  // [T, H] -> [T, H]; x unevaluated (the norm may run inside the router GEMV).
  Tensor forward(OpContext& ctx, NormedInput& x) const;
};

// A decoder layer's feed-forward block in a MoE model: sparse experts, or a dense SwiGLU MLP on
// the layers the config keeps dense (first_k_dense_replace, mlp_only_layers, sparse step).
struct FeedForward {
  bool sparse = false;
  SparseMoe moe;
  GatedMlp mlp;

  static FeedForward load(WeightLoader& w, const std::string& prefix, bool sparse, const MoeSpec& spec,
                          int64_t dense_intermediate) {
    FeedForward f;
    f.sparse = sparse;
    if (sparse) f.moe = SparseMoe::load(w, prefix, spec);
    else f.mlp = GatedMlp::load(w, prefix, spec.hidden, dense_intermediate);
    return f;
  }
  SublayerOut forward(OpContext& ctx, NormedInput& x) const {
    if (sparse) return moe.forward(ctx, x);
    return mlp.forward(ctx, x);
  }
};

}  // namespace portllm
