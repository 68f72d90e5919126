// Qwen3-Next and Qwen3.5/3.6 hybrids: decoder layers alternate Gated DeltaNet linear attention
// (recurrent state per request) and gated full attention (paged KV), chosen by `layer_types`
// or, in older configs, every `full_attention_interval`-th layer is full attention. All RMSNorms
// (input, post-attention, final, q/k) scale by (1 + weight); the MLP is dense SwiGLU (Qwen3.5),
// or a softmax top-k MoE plus a shared expert gated by sigmoid(shared_expert_gate(x))
// (Qwen3-Next, Qwen3.5-MoE). Published Qwen3.5/3.6 checkpoints wrap the text model in a
// multimodal one (Qwen3_5*ForConditionalGeneration): its weights sit under
// "model.language_model.", the vision tower ("model.visual.") is skipped, and so are the
// multi-token-prediction weights ("mtp.") of every variant.
#include <algorithm>
#include <optional>
#include <utility>

#include "core/error.h"
#include "model/archs/archs.h"
#include "model/layers/attention.h"
#include "model/layers/gated_attention.h"
#include "model/layers/gated_deltanet.h"
#include "model/layers/lm_head.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "ops/ops.h"
#include "ops/ops_hybrid.h"

namespace portllm {

namespace {

bool is_wrapped(const std::string& arch) { return arch.find("ForConditionalGeneration") != std::string::npos; }

// Which layers are linear attention, for the first cfg.num_layers layers.
std::vector<bool> linear_layers(const ModelConfig& cfg) {
  std::vector<bool> lin;
  if (cfg.has("layer_types")) {
    const std::vector<std::string> lt = cfg.get_string_list("layer_types");
    if (int64_t(lt.size()) < cfg.num_layers)
      PL_THROW("{}: layer_types has {} entries for {} layers", cfg.source, lt.size(), cfg.num_layers);
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string& t = lt[size_t(l)];
      if (t != "linear_attention" && t != "full_attention")
        PL_THROW("{}: layer_types[{}] '{}' is not linear_attention or full_attention", cfg.source, l, t);
      lin.push_back(t == "linear_attention");
    }
  } else {
    const int64_t every = cfg.get_int("full_attention_interval", 4);
    if (every <= 0) PL_THROW("{}: full_attention_interval must be positive", cfg.source);
    for (int64_t l = 0; l < cfg.num_layers; ++l) lin.push_back((l + 1) % every != 0);
  }
  return lin;
}

// The sparse block of Qwen3-Next / Qwen3.5-MoE: routed experts (the shared MoE layer) plus one
// shared expert scaled per token by sigmoid(shared_expert_gate(x)).
struct HybridMoe {
  SparseMoe routed;
  std::optional<GatedMlp> shared;
  Linear shared_gate;  // [1, hidden]

  // The norm may run inside the router's GEMV (NormedInput); the shared expert reads h after it.
  Tensor forward(OpContext& ctx, NormedInput& x) const {
    Tensor out = routed.forward(ctx, x);
    if (!shared) return out;
    const Tensor& h = x.hidden(ctx);
    Tensor s = shared->forward(ctx, h);
    Tensor gate = shared_gate.forward(ctx, h);  // [T, 1]
    ops::sigmoid_mul(ctx, s, s, gate);
    ops::add(ctx, out, out, s);
    return out;
  }
};

class Qwen3NextModel final : public Model {
 public:
  Qwen3NextModel(const ModelConfig& cfg, WeightLoader& w) : Model(cfg) {
    const std::string& arch = cfg.architecture;
    const std::string root = is_wrapped(arch) ? "model.language_model." : "model.";
    w.ignore_prefix("mtp.");
    if (is_wrapped(arch)) {
      w.ignore_prefix("model.visual.");
      // Reduced depth: the dropped layers sit under the wrapped prefix, which the loader's
      // own "model.layers." rule does not cover. layer_types keeps the full depth.
      const int64_t full = cfg.has("layer_types") ? int64_t(cfg.get_string_list("layer_types").size()) : cfg.num_layers;
      for (int64_t l = cfg.num_layers; l < full; ++l) w.ignore_prefix(root + "layers." + std::to_string(l) + ".");
    }
    const bool fused_qkvz = arch == "Qwen3NextForCausalLM";
    const std::vector<bool> lin = linear_layers(cfg);

    MoeSpec spec;
    spec.num_experts = cfg.get_int("num_experts", 0);
    if (spec.num_experts > 0) {
      spec.top_k = cfg.get_int("num_experts_per_tok");
      spec.hidden = cfg.hidden_size;
      spec.intermediate = cfg.get_int("moe_intermediate_size");
      // Qwen3.5-MoE always renormalizes the top-k weights; Qwen3-Next follows norm_topk_prob.
      spec.renormalize = fused_qkvz ? cfg.get_bool("norm_topk_prob", true) : true;
    }
    const int64_t shared_inter = cfg.get_int("shared_expert_intermediate_size", 0);
    const int64_t sparse_step = cfg.get_int("decoder_sparse_step", 1);
    const std::vector<int64_t> mlp_only = cfg.get_int_list("mlp_only_layers");

    const int64_t H = cfg.hidden_size;
    const int rot_dim = cfg.rotary_dim();
    embed_ = w.load(root + "embed_tokens.weight", {cfg.vocab_size, H});
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const std::string p = root + "layers." + std::to_string(l) + ".";
      Layer L;
      L.linear = lin[size_t(l)];
      if (L.linear) {
        L.gdn = GatedDeltaNet::load(w, p + "linear_attn", cfg, fused_qkvz);
      } else {
        L.attn = GatedAttention::load(w, p + "self_attn", cfg, rope_table(w, rot_dim), rot_dim);
      }
      const bool sparse = spec.num_experts > 0 && sparse_step > 0 && (l + 1) % sparse_step == 0 &&
                          std::find(mlp_only.begin(), mlp_only.end(), l) == mlp_only.end();
      if (sparse) {
        HybridMoe m;
        m.routed = SparseMoe::load(w, p + "mlp", spec);
        if (shared_inter > 0) {
          m.shared = GatedMlp::load(w, p + "mlp.shared_expert", H, shared_inter);
          m.shared_gate = Linear::load(w, p + "mlp.shared_expert_gate", H, 1, false);
        }
        L.moe = std::move(m);
      } else {
        L.mlp = GatedMlp::load(w, p + "mlp", H, cfg.intermediate_size);
      }
      L.input_norm = w.load(p + "input_layernorm.weight", {H});
      L.post_norm = w.load(p + "post_attention_layernorm.weight", {H});
      layers_.push_back(std::move(L));
    }
    final_norm_ = w.load(root + "norm.weight", {H});
    lm_head_ = LmHead::load(w, cfg, embed_);
  }

  std::vector<LayerCacheSpec> cache_spec() const override {
    std::vector<LayerCacheSpec> v;
    for (auto& L : layers_) v.push_back(L.linear ? L.gdn.cache_spec() : L.attn.cache_spec());
    return v;
  }

  void forward(OpContext& ctx, const ForwardBatch& b, std::vector<LayerCache>& cache,
               const Tensor& logits) override {
    const int64_t T = b.num_tokens, H = cfg_.hidden_size;
    const float eps = float(cfg_.rms_norm_eps);
    constexpr float kOne = 1.f;  // Qwen3-Next RMSNorm: x_hat * (1 + w)
    // Each sub-layer gets its norm unevaluated, as in PreNormDecoder (model/layers/decoder.h).
    ResidualStream rs(ctx, T, H);
    SublayerOut delta;
    ops::embed(ctx, rs.residual, embed_, b.token_ids);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      NormedInput mix_in = rs.next(std::move(delta), L.input_norm, eps, kOne);
      delta = L.linear ? L.gdn.forward(ctx, b, cache[l], mix_in) : L.attn.forward(ctx, b, cache[l], mix_in);
      rs.advance(ctx, mix_in);
      NormedInput ffn_in = rs.next(std::move(delta), L.post_norm, eps, kOne);
      if (L.moe) delta = L.moe->forward(ctx, ffn_in);
      else delta = L.mlp.forward(ctx, ffn_in);
      rs.advance(ctx, ffn_in);
    }
    NormedInput final_in = rs.next(std::move(delta), final_norm_, eps, kOne);
    lm_head_.forward(ctx, b, final_in.hidden(ctx), logits);
  }

 private:
  struct Layer {
    bool linear = false;
    GatedDeltaNet gdn;
    GatedAttention attn;
    std::optional<HybridMoe> moe;
    GatedMlp mlp;
    Tensor input_norm, post_norm;
  };
  Tensor embed_, final_norm_;
  std::vector<Layer> layers_;
  LmHead lm_head_;
};

std::unique_ptr<Model> make(const ModelConfig& cfg, WeightLoader& w, OpContext&) {
  return std::make_unique<Qwen3NextModel>(cfg, w);
}

}  // namespace

void register_qwen3_next_archs() {
  for (const char* a : {"Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
                        "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})
    register_arch(a, make);
}

}  // namespace portllm
