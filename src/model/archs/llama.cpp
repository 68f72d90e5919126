// Llama, Mistral, Qwen2 and Qwen3: one decoder, differences are flags (q/k/v bias, per-head
// q/k RMSNorm, explicit head_dim, rope scaling, tied embeddings).
#include <cmath>

#include "model/archs/archs.h"
#include "model/layers/attention.h"
#include "model/layers/lm_head.h"
#include "model/layers/mlp.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

namespace {

class LlamaModel final : public Model {
 public:
  LlamaModel(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) : Model(cfg) {
    const bool qkv_bias = cfg.architecture == "Qwen2ForCausalLM" || cfg.get_bool("attention_bias", false);
    const bool qk_norm = cfg.architecture == "Qwen3ForCausalLM";
    embed_ = w.load("model.embed_tokens.weight", {cfg.vocab_size, cfg.hidden_size});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Layer L;
      L.attn = AttentionBlock::load(w, ctx, p + "self_attn", cfg, qkv_bias, qk_norm);
      L.mlp = GatedMlp::load(w, p + "mlp", cfg.hidden_size, cfg.intermediate_size);
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
    Tensor residual = ctx.act({T, H}), h = ctx.act({T, H}), delta;
    ops::embed(ctx, residual, embed_, b.token_ids);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      if (l == 0) ops::rms_norm(ctx, h, residual, L.input_norm, float(cfg_.rms_norm_eps));
      else ops::add_rms_norm(ctx, residual, h, delta, L.input_norm, float(cfg_.rms_norm_eps));
      delta = L.attn.forward(ctx, b, cache[l], h);
      ops::add_rms_norm(ctx, residual, h, delta, L.post_norm, float(cfg_.rms_norm_eps));
      delta = L.mlp.forward(ctx, h);
    }
    ops::add_rms_norm(ctx, residual, h, delta, final_norm_, float(cfg_.rms_norm_eps));
    lm_head_.forward(ctx, b, h, logits);
  }

 private:
  struct Layer {
    AttentionBlock attn;
    GatedMlp mlp;
    Tensor input_norm, post_norm;
  };
  Tensor embed_, final_norm_;
  std::vector<Layer> layers_;
  LmHead lm_head_;
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) {
  return std::make_unique<LlamaModel>(cfg, w, ctx);
}

}  // namespace

void register_llama_archs() {
  for (const char* a : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
    register_arch(a, make);
}

}  // namespace portllm
