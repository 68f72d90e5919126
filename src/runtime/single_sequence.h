// Runs one sequence through a model with a private paged cache: the teacher-forced logit check
// (check-logits) and tests use it. Serving goes through the engine and the model runner instead.
#pragma once
#include <memory>
#include <vector>

#include "model/model.h"
#include "runtime/kv_cache.h"

namespace portllm {

class SingleSequence {
 public:
  SingleSequence(Model& model, OpContext& ctx, int64_t max_tokens, int64_t page_size = 16,
                 DType kv_dtype = DType::F32);
  // Feeds `tokens` after everything fed so far; returns logits on the host, f32:
  // [tokens.size(), vocab] when all_logits, else [1, vocab] for the last token.
  Tensor feed(const std::vector<int32_t>& tokens, bool all_logits);
  int64_t length() const { return length_; }

 private:
  Model& model_;
  OpContext& ctx_;
  int64_t page_size_, max_tokens_, length_ = 0;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> block_table_;
};

}  // namespace portllm
