// Qwen3-MoE: Qwen3 attention (per-head q/k RMSNorm, GQA) with sparse MoE MLPs (softmax top-k
// routing, optional renormalization of the top-k weights). Layers listed in mlp_only_layers,
// or not on the decoder_sparse_step grid, keep a dense SwiGLU MLP.
#include <algorithm>

#include "model/archs/archs.h"
#include "model/layers/attention.h"
#include "model/layers/lm_head.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

namespace {

class Qwen3MoeModel final : public Model {
 public:
  Qwen3MoeModel(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) : Model(cfg) {
    MoeSpec spec;
    spec.num_experts = cfg.get_int("num_experts");
    spec.top_k = cfg.get_int("num_experts_per_tok");
    spec.hidden = cfg.hidden_size;
    spec.intermediate = cfg.get_int("moe_intermediate_size");
    spec.renormalize = cfg.get_bool("norm_topk_prob", false);
    const int64_t sparse_step = cfg.get_int("decoder_sparse_step", 1);
    std::vector<int64_t> mlp_only;
    if (cfg.raw.contains("mlp_only_layers") && cfg.raw["mlp_only_layers"].is_array())
      for (auto& v : cfg.raw["mlp_only_layers"]) mlp_only.push_back(v.get<int64_t>());

    embed_ = w.load("model.embed_tokens.weight", {cfg.vocab_size, cfg.hidden_size});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Layer L;
      L.attn = AttentionBlock::load(w, ctx, p + "self_attn", cfg, cfg.attention_bias, /*qk_norm=*/true);
      const bool sparse = std::find(mlp_only.begin(), mlp_only.end(), l) == mlp_only.end() &&
                          spec.num_experts > 0 && sparse_step > 0 && (l + 1) % sparse_step == 0;
      if (sparse) L.moe = SparseMoe::load(w, p + "mlp", spec);
      else L.mlp = GatedMlp::load(w, p + "mlp", cfg.hidden_size, cfg.intermediate_size);
      L.sparse = sparse;
      L.input_norm = w.load(p + "input_layernorm.weight", {cfg.hidden_size});
      L.post_norm = w.load(p + "post_attention_layernorm.weight", {cfg.hidden_size});
      layers_.push_back(std::move(L));
    }
    final_norm_ = w.load("model.norm.weight", {cfg.hidden_size});
    lm_head_ = LmHead::load(w, cfg, embed_);
  }

  std::vector<LayerCacheSpec> cache_spec() const override {
    std::vector<LayerCacheSpec> v;
    for (auto& L : layers_) v.push_back(L.attn.cache_spec());
    return v;
  }

  void forward(OpContext& ctx, const ForwardBatch& b, std::vector<LayerCache>& cache,
               const Tensor& logits) override {
    const int64_t T = b.num_tokens, H = cfg_.hidden_size;
    const float eps = float(cfg_.rms_norm_eps);
    Tensor residual = ctx.act({T, H}), h = ctx.act({T, H}), delta;
    ops::embed(ctx, residual, embed_, b.token_ids);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      if (l == 0) ops::rms_norm(ctx, h, residual, L.input_norm, eps);
      else ops::add_rms_norm(ctx, residual, h, delta, L.input_norm, eps);
      delta = L.attn.forward(ctx, b, cache[l], h);
      ops::add_rms_norm(ctx, residual, h, delta, L.post_norm, eps);
      delta = L.sparse ? L.moe.forward(ctx, h) : L.mlp.forward(ctx, h);
    }
    ops::add_rms_norm(ctx, residual, h, delta, final_norm_, eps);
    lm_head_.forward(ctx, b, h, logits);
  }

 private:
  struct Layer {
    AttentionBlock attn;
    bool sparse = false;
    SparseMoe moe;
    GatedMlp mlp;
    Tensor input_norm, post_norm;
  };
  Tensor embed_, final_norm_;
  std::vector<Layer> layers_;
  LmHead lm_head_;
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) {
  return std::make_unique<Qwen3MoeModel>(cfg, w, ctx);
}

}  // namespace

void register_qwen3_moe_archs() { register_arch("Qwen3MoeForCausalLM", make); }

}  // namespace portllm
