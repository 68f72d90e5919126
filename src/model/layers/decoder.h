// The pre-norm decoder stack that Llama, Qwen2/3, Qwen3-MoE and DeepSeek share: embed, then per
// layer  h = norm(residual); residual += attn(h); h = norm(residual); residual += ffn(h),  then
// the final norm and the LM head. The residual add is fused into the next RMSNorm. A family
// supplies its layer type: `attn` (forward(ctx, batch, cache, h) and cache_spec()), `ffn(ctx, h)`,
// and the two norm weights.
#pragma once
#include <vector>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/layers/lm_head.h"
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
    Tensor residual = ctx.act({T, H}), h = ctx.act({T, H}), delta;
    ops::embed(ctx, residual, embed, b.token_ids);
    for (size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      if (l == 0) ops::rms_norm(ctx, h, residual, L.input_norm, eps);
      else ops::add_rms_norm(ctx, residual, h, delta, L.input_norm, eps);
      delta = L.attn.forward(ctx, b, cache[l], h);
      ops::add_rms_norm(ctx, residual, h, delta, L.post_norm, eps);
      delta = L.ffn(ctx, h);
    }
    ops::add_rms_norm(ctx, residual, h, delta, final_norm, eps);
    lm_head.forward(ctx, b, h, logits);
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
