// DeepSeek-V2 / V2-Lite and DeepSeek-V3 / R1: multi-head latent attention (absorbed, paged
// latent cache; q_lora optional) and DeepSeekMoE (fine-grained routed experts + shared
// experts). The first first_k_dense_replace layers (and those off the moe_layer_freq grid)
// keep a dense SwiGLU MLP. Routing variants from the config:
//   topk_method greedy                -> softmax top-k
//   topk_method group_limited_greedy  -> softmax, best n_group groups by their max expert
//   topk_method noaux_tc (V3)         -> sigmoid + e_score_correction_bias for selection,
//                                        groups ranked by the sum of their two best experts
// then optional renormalization (norm_topk_prob) and routed_scaling_factor. Block-FP8
// checkpoints (V3) load through Linear and the MoE stacker with their scales.
#include "core/error.h"
#include "model/archs/archs.h"
#include "model/layers/decoder.h"
#include "model/layers/mla_attention.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "ops/ops.h"

namespace portllm {

namespace {

MoeSpec deepseek_moe_spec(const ModelConfig& cfg) {
  MoeSpec s;
  s.num_experts = cfg.get_int("n_routed_experts", 0);
  s.top_k = cfg.get_int("num_experts_per_tok", 1);
  s.hidden = cfg.hidden_size;
  s.intermediate = cfg.get_int("moe_intermediate_size");
  s.shared_intermediate = s.intermediate * cfg.get_int("n_shared_experts", 0);
  s.renormalize = cfg.get_bool("norm_topk_prob", false);
  s.scale = float(cfg.get_double("routed_scaling_factor", 1.0));
  const std::string method = cfg.get_string("topk_method", cfg.architecture == "DeepseekV3ForCausalLM" ? "noaux_tc" : "greedy");
  const std::string scoring = cfg.get_string("scoring_func", "softmax");
  if (scoring == "sigmoid") s.scoring = MoeScoring::Sigmoid;
  else if (scoring != "softmax") PL_THROW("{}: scoring_func '{}' is not supported (softmax, sigmoid)", cfg.source, scoring);
  if (method == "greedy") {
    s.n_group = s.topk_group = 1;
  } else if (method == "group_limited_greedy" || method == "noaux_tc") {
    s.n_group = int(cfg.get_int("n_group", 1));
    s.topk_group = int(cfg.get_int("topk_group", 1));
    if (s.n_group < 1 || s.num_experts % s.n_group != 0)
      PL_THROW("{}: n_routed_experts {} is not divisible by n_group {}", cfg.source, s.num_experts, s.n_group);
    if (method == "noaux_tc") {
      s.group_score = MoeGroupScore::Top2Sum;
      s.score_bias = true;
    }
  } else {
    PL_THROW("{}: topk_method '{}' is not supported (greedy, group_limited_greedy, noaux_tc)", cfg.source, method);
  }
  return s;
}

struct DeepseekLayer {
  MlaAttention attn;
  FeedForward ffn_block;
  Tensor input_norm, post_norm;
  SublayerOut ffn(OpContext& ctx, NormedInput& x) const { return ffn_block.forward(ctx, x); }
};

class DeepseekModel final : public PreNormDecoderModel<DeepseekLayer> {
 public:
  DeepseekModel(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) : PreNormDecoderModel(cfg) {
    const MoeSpec spec = deepseek_moe_spec(cfg);
    const int64_t first_dense = cfg.get_int("first_k_dense_replace", 0);
    const int64_t freq = std::max<int64_t>(1, cfg.get_int("moe_layer_freq", 1));
    // Multi-token-prediction layers follow the decoder layers; inference does not use them.
    const int64_t full_depth = cfg.get_int("num_hidden_layers", cfg.num_layers);
    for (int64_t i = 0; i < cfg.get_int("num_nextn_predict_layers", 0); ++i)
      w.ignore_prefix("model.layers." + std::to_string(full_depth + i) + ".");

    net_.embed = w.load("model.embed_tokens.weight", {cfg.vocab_size, cfg.hidden_size});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      DeepseekLayer L;
      // Both V2 and V3 fold yarn's mscale(factor, mscale_all_dim)^2 into the softmax scale
      // (DeepSeek's code and transformers 5.17; checked against the deepseekv2-tiny fixture,
      // whose logits move by ~0.09 without it).
      L.attn = MlaAttention::load(w, ctx, p + "self_attn", cfg, /*mscale_in_softmax=*/true);
      const bool sparse = spec.num_experts > 0 && l >= first_dense && l % freq == 0;
      L.ffn_block = FeedForward::load(w, p + "mlp", sparse, spec, cfg.intermediate_size);
      L.input_norm = w.load(p + "input_layernorm.weight", {cfg.hidden_size});
      L.post_norm = w.load(p + "post_attention_layernorm.weight", {cfg.hidden_size});
      net_.layers.push_back(std::move(L));
    }
    net_.final_norm = w.load("model.norm.weight", {cfg.hidden_size});
    net_.lm_head = LmHead::load(w, cfg, net_.embed);
  }
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext& ctx) {
  return std::make_unique<DeepseekModel>(cfg, w, ctx);
}

}  // namespace

void register_deepseek_archs() {
  for (const char* a : {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"}) register_arch(a, make);
}

}  // namespace portllm
