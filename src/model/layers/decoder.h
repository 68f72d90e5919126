// The pre-norm decoder stack that Llama, Qwen2/3, Qwen3-MoE and DeepSeek share: embed, then per
// layer  h = norm(residual); residual += attn(h); h = norm(residual); residual += ffn(h),  then
// the final norm and the LM head. The residual add is fused into the next RMSNorm, and that norm
// is handed to the sub-layer unevaluated (NormedInput), so that its first projection can run it
// inside the GEMV; a sub-layer's last projection may be handed over unevaluated too (SublayerOut),
// for the next norm to run in its GEMV's last block where the first projection cannot take it. A family supplies its layer type: `attn` (cache_spec() and forward(ctx, batch,
// cache, x) with x a NormedInput& or, for attention without a plain first projection (MLA), the
// evaluated h), `ffn(ctx, x)` with x a NormedInput&, and the two norm weights.
#pragma once
#include <utility>
#include <vector>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/layers/lm_head.h"
#include "model/layers/normed_input.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

template <class Layer>
struct PreNormDecoder {
  Tensor embed, final_norm;
  std::vector<Layer> layers;
  LmHead lm_head;

  std::vector<LayerCacheSpec> cache_spec() const {
    std::vector<LayerCacheSpec> v;
    for (const Layer& L : layers) v.push_back(L.attn.cache_spec());
    return v;
  }

  void forward(OpContext& ctx, const ModelConfig& cfg, const ForwardBatch& b, std::vector<LayerCache>& cache,
               const Tensor& logits) const {
    const int64_t T = b.num_tokens, H = cfg.hidden_size;
    const float eps = float(cfg.rms_norm_eps);
    ResidualStream rs(ctx, T, H);
    SublayerOut delta;
    ops::embed(ctx, rs.residual, embed, b.token_ids);
    for (size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      NormedInput attn_in = rs.next(std::move(delta), L.input_norm, eps, 0.f);
      if constexpr (requires { L.attn.forward(ctx, b, cache[l], attn_in); })
        delta = L.attn.forward(ctx, b, cache[l], attn_in);
      else
        delta = L.attn.forward(ctx, b, cache[l], attn_in.hidden(ctx));
      rs.advance(ctx, attn_in);
      NormedInput ffn_in = rs.next(std::move(delta), L.post_norm, eps, 0.f);
      delta = L.ffn(ctx, ffn_in);
      rs.advance(ctx, ffn_in);
    }
    NormedInput final_in = rs.next(std::move(delta), final_norm, eps, 0.f);  // last block of down_proj where it can
    lm_head.forward(ctx, b, final_in.hidden(ctx), logits);
  }
};

// A Model that is exactly this stack: a family's constructor loads net_ and nothing else.
template <class Layer>
class PreNormDecoderModel : public Model {
 public:
  std::vector<LayerCacheSpec> cache_spec() const override { return net_.cache_spec(); }
  void forward(OpContext& ctx, const ForwardBatch& b, std::vector<LayerCache>& cache,
               const Tensor& logits) override {
    net_.forward(ctx, cfg_, b, cache, logits);
  }

 protected:
  explicit PreNormDecoderModel(const ModelConfig& cfg) : Model(cfg) {}
  PreNormDecoder<Layer> net_;
};

}  // namespace portllm
