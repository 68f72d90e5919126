#include "model/layers/lm_head.h"

#include "ops/ops.h"

namespace portllm {

LmHead LmHead::load(WeightLoader& w, const ModelConfig& cfg, const Tensor& embed_table) {
  LmHead head;
  if (cfg.tie_word_embeddings) {
    head.proj.weight = embed_table;
    head.proj.in = cfg.hidden_size;
    head.proj.out = cfg.vocab_size;
  } else {
    head.proj = Linear::load(w, "lm_head", cfg.hidden_size, cfg.vocab_size, false);
  }
  return head;
}

void LmHead::forward(OpContext& ctx, const ForwardBatch& b, const Tensor& h, const Tensor& logits) const {
  const int64_t L = b.num_logits();
  if (L == 0) return;
  Tensor rows = h;
  if (L != h.size(0)) {
    rows = ctx.act({L, h.size(1)});
    ops::embed(ctx, rows, h, b.logits_indices);  // row gather
  }
  proj.forward(ctx, logits, rows);
}

}  // namespace portllm
