// The output head: gathers the hidden rows whose logits are wanted (the last token of each
// sequence when serving, every token when checking logits) and projects them to the vocab.
#pragma once
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/linear.h"

namespace portllm {

struct LmHead {
  Linear proj;  // [vocab, hidden]; tied embeddings reuse the embedding table

  static LmHead load(WeightLoader& w, const ModelConfig& cfg, const Tensor& embed_table);
  // h: [T, hidden] final-normed hidden states; logits: [num_logits, vocab] f32.
  void forward(OpContext& ctx, const ForwardBatch& b, const Tensor& h, const Tensor& logits) const;
};

}  // namespace portllm
