// Llama, Mistral, Qwen2 and Qwen3: one decoder, differences are flags (q/k/v bias, per-head
// q/k RMSNorm, explicit head_dim, rope scaling, tied embeddings).
#include <cmath>

#include "model/archs/archs.h"
#include "model/layers/attention.h"
#include "model/layers/decoder.h"
#include "model/layers/mlp.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

namespace {

struct LlamaLayer {
  AttentionBlock attn;
  GatedMlp mlp;
  Tensor input_norm, post_norm;
  SublayerOut ffn(OpContext& ctx, NormedInput& x) const { return mlp.forward(ctx, x); }
};

class LlamaModel final : public PreNormDecoderModel<LlamaLayer> {
 public:
  LlamaModel(const ModelConfig& cfg, WeightLoader& w) : PreNormDecoderModel(cfg) {
    const bool qkv_bias = cfg.architecture == "Qwen2ForCausalLM" || cfg.get_bool("attention_bias", false);
    const bool qk_norm = cfg.architecture == "Qwen3ForCausalLM";
    net_.embed = w.load("model.embed_tokens.weight", {cfg.vocab_size, cfg.hidden_size});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      LlamaLayer L;
      L.attn = AttentionBlock::load(w, p + "self_attn", cfg, qkv_bias, qk_norm);
      L.mlp = GatedMlp::load(w, p + "mlp", cfg.hidden_size, cfg.intermediate_size);
      L.input_norm = w.load(p + "input_layernorm.weight", {cfg.hidden_size});
      L.post_norm = w.load(p + "post_attention_layernorm.weight", {cfg.hidden_size});
      net_.layers.push_back(std::move(L));
    }
    net_.final_norm = w.load("model.norm.weight", {cfg.hidden_size});
    net_.lm_head = LmHead::load(w, cfg, net_.embed);
  }
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext&) {
  return std::make_unique<LlamaModel>(cfg, w);
}

}  // namespace

void register_llama_archs() {
  for (const char* a : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
    register_arch(a, make);
}

}  // namespace portllm
