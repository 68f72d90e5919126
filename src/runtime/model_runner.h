// The model runner: turns one scheduler step (SchedulerOutput) into a forward pass over the paged
// KV cache and returns the next-token logits of the sequences that sample this step (the last
// prompt chunk, a recompute after preemption, or a decode). Only those rows are computed by the
// LM head; they stay on the device, where the engine samples them (engine/batch_sampler.h).
//
// Recurrent-state (hybrid) models: each sequence's state_slot indexes the state tensors; the slot
// is zeroed when a sequence starts at position 0. Such models must run with prefix caching off
// (a prefix hit would skip the tokens that build the state); the engine enforces that.
#pragma once
#include <memory>
#include <vector>

#include "model/model.h"
#include "runtime/batch_builder.h"
#include "runtime/decode_graphs.h"
#include "runtime/kv_cache.h"
#include "sched/scheduler_output.h"

namespace portllm {

class ModelRunner {
 public:
  ModelRunner(Model& model, OpContext& ctx, const KvCacheConfig& kv);

  // f32 logits [number of scheduled requests with sample == true, vocab] on the runner's device
  // (host memory on the CPU), rows in the order of out.scheduled; an undefined tensor when
  // nothing samples this step. `feed` (a step where every request feeds one token): the ids
  // request i feeds come from the device (runtime/batch_builder.h), as async scheduling needs.
  Tensor execute(const SchedulerOutput& out, const DeviceTokenFeed* feed = nullptr);

  // The per-sequence work of one step (exposed for tests).
  std::vector<SeqWork> make_work(const SchedulerOutput& out) const;

  // Decode steps of at most max(sizes) sequences replay captured graphs from now on
  // (runtime/decode_graphs.h). Throws if capture fails; the runner then stays graph-free.
  void enable_decode_graphs(std::vector<int> sizes, int64_t max_model_len);
  const DecodeGraphs* decode_graphs() const { return graphs_.get(); }

  KvCache& cache() { return *cache_; }
  bool needs_state_slots() const { return cache_->has_state_layers(); }
  int64_t page_size() const { return cache_->config().page_size; }

 private:
  void reset_state_slot(int slot);

  Model& model_;
  OpContext& ctx_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<DecodeGraphs> graphs_;
};

// True when a model keeps recurrent state (some layer's cache kind is Recurrent).
bool has_recurrent_layers(const std::vector<LayerCacheSpec>& spec);

}  // namespace portllm
