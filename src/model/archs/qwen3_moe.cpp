// Qwen3-MoE: Qwen3 attention (per-head q/k RMSNorm, GQA) with sparse MoE MLPs (softmax top-k
// routing, optional renormalization of the top-k weights). Layers listed in mlp_only_layers,
// or not on the decoder_sparse_step grid, keep a dense SwiGLU MLP.
#include <algorithm>

#include "model/archs/archs.h"
#include "model/layers/attention.h"
#include "model/layers/decoder.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

namespace {

struct Qwen3MoeLayer {
  AttentionBlock attn;
  FeedForward ffn_block;
  Tensor input_norm, post_norm;
  SublayerOut ffn(OpContext& ctx, NormedInput& x) const { return ffn_block.forward(ctx, x); }
};

class Qwen3MoeModel final : public PreNormDecoderModel<Qwen3MoeLayer> {
 public:
  Qwen3MoeModel(const ModelConfig& cfg, WeightLoader& w) : PreNormDecoderModel(cfg) {
    MoeSpec spec;
    spec.num_experts = cfg.get_int("num_experts");
    spec.top_k = cfg.get_int("num_experts_per_tok");
    spec.hidden = cfg.hidden_size;
    spec.intermediate = cfg.get_int("moe_intermediate_size");
    spec.renormalize = cfg.get_bool("norm_topk_prob", false);
    const int64_t sparse_step = cfg.get_int("decoder_sparse_step", 1);
    const std::vector<int64_t> mlp_only = cfg.get_int_list("mlp_only_layers");

    net_.embed = w.load("model.embed_tokens.weight", {cfg.vocab_size, cfg.hidden_size});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Qwen3MoeLayer L;
      L.attn = AttentionBlock::load(w, p + "self_attn", cfg, cfg.attention_bias, /*qk_norm=*/true);
      const bool sparse = std::find(mlp_only.begin(), mlp_only.end(), l) == mlp_only.end() &&
                          spec.num_experts > 0 && sparse_step > 0 && (l + 1) % sparse_step == 0;
      L.ffn_block = FeedForward::load(w, p + "mlp", sparse, spec, cfg.intermediate_size);
      L.input_norm = w.load(p + "input_layernorm.weight", {cfg.hidden_size});
      L.post_norm = w.load(p + "post_attention_layernorm.weight", {cfg.hidden_size});
      net_.layers.push_back(std::move(L));
    }
    net_.final_norm = w.load("model.norm.weight", {cfg.hidden_size});
    net_.lm_head = LmHead::load(w, cfg, net_.embed);
  }
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext&) {
  return std::make_unique<Qwen3MoeModel>(cfg, w);
}

}  // namespace

void register_qwen3_moe_archs() { register_arch("Qwen3MoeForCausalLM", make); }

}  // namespace portllm
