#include "runtime/single_sequence.h"

#include <numeric>

#include "core/error.h"
#include "runtime/batch_builder.h"

namespace portllm {

SingleSequence::SingleSequence(Model& model, OpContext& ctx, int64_t max_tokens, int64_t page_size, DType kv_dtype)
    : model_(model), ctx_(ctx), page_size_(page_size), max_tokens_(max_tokens) {
  KvCacheConfig cfg;
  cfg.page_size = page_size;
  cfg.num_blocks = (max_tokens + page_size - 1) / page_size;
  cfg.dtype = kv_dtype;
  cfg.num_state_slots = 1;
  cache_ = std::make_unique<KvCache>(ctx, model.cache_spec(), cfg);
  block_table_.resize(size_t(cfg.num_blocks));
  // Reverse order, so kernels that wrongly assume contiguous blocks fail here.
  std::iota(block_table_.rbegin(), block_table_.rend(), 0);
}

Tensor SingleSequence::feed(const std::vector<int32_t>& tokens, bool all_logits) {
  if (length_ + int64_t(tokens.size()) > max_tokens_)
    PL_THROW("sequence of {} tokens exceeds the {} this runner was sized for", length_ + tokens.size(), max_tokens_);
  SeqWork w;
  w.tokens = tokens;
  w.start_pos = length_;
  w.block_table = block_table_;
  w.state_slot = 0;
  w.logits = all_logits ? SeqWork::Logits::All : SeqWork::Logits::Last;
  ForwardBatch b = build_forward_batch(ctx_, {w}, page_size_);
  Tensor logits = ctx_.device->empty(DType::F32, {int64_t(b.num_logits()), model_.config().vocab_size});
  model_.forward(ctx_, b, cache_->layers(), logits);
  length_ += int64_t(tokens.size());
  return ctx_.device->download(logits);
}

}  // namespace portllm
