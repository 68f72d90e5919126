// Decode steps replayed from device graphs (CUDA/MUSA graphs; --cuda-graph-bs,
// --disable-cuda-graph). A decode step of a small model is hundreds of tiny kernels whose launch
// cost exceeds their run time; a graph launches them all at once.
//
// One graph per captured batch size, each over the same static inputs: a packed i32 buffer
// (token ids, positions, slots, sequence lengths, query offsets, logit rows, block tables) that a
// step fills with one upload, and a shared [max size, V] f32 logits buffer. A step of n sequences
// runs the smallest captured size >= n; the padding sequences write no KV (slot -1) and read one
// cached position of block 0, and their logits rows are ignored. Attention is captured for the
// longest context (max_seq_len = max_model_len), so one graph serves every context length.
//
// Only models whose cache is plain paged K/V take graphs: the MLA and recurrent-state kernels
// plan their grids from host mirrors of the batch, which a replay does not refresh.
#pragma once
#include <memory>
#include <vector>

#include "model/model.h"
#include "runtime/batch_builder.h"
#include "runtime/kv_cache.h"

namespace portllm {

class DecodeGraphs {
 public:
  DecodeGraphs(Model& model, OpContext& ctx, KvCache& cache, std::vector<int> sizes, int64_t max_model_len);
  // Captures every size (largest first); throws if the device cannot capture.
  void capture();
  // A pure decode step (every sequence feeds one token and samples) no larger than the largest size.
  bool covers(const std::vector<SeqWork>& work) const;
  // Runs the step; returns its logits [n, V] on the device (a view of the static buffer, valid
  // until the next run).
  Tensor run(const std::vector<SeqWork>& work);
  const std::vector<int>& sizes() const { return sizes_; }

  // The batch sizes captured by default (vLLM-like: dense at small sizes, sparser above), up to max.
  static std::vector<int> default_sizes(int max_num_seqs);
  // Whether a model's cache layout allows graphs (see above).
  static bool supported(const std::vector<LayerCacheSpec>& spec);

 private:
  struct Layout {  // offsets (in i32 elements) of each array in the packed input buffer
    size_t ids, pos, slots, lens, qsl, rows, states, init, tables, total;
  };
  ForwardBatch batch_for(int size) const;
  void fill(const std::vector<SeqWork>& work, int size);

  Model& model_;
  OpContext& ctx_;
  KvCache& cache_;
  std::vector<int> sizes_;  // ascending
  int64_t max_model_len_, max_blocks_;
  Layout lay_{};
  std::vector<int32_t> host_;
  Tensor inputs_, logits_;
  std::vector<std::unique_ptr<Graph>> graphs_;  // parallel to sizes_
};

}  // namespace portllm
