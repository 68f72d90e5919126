// Decode steps replayed from device graphs (CUDA/MUSA graphs; --cuda-graph-bs,
// --disable-cuda-graph). A decode step of a small model is hundreds of tiny kernels whose launch
// cost exceeds their run time; a graph launches them all at once.
//
// One graph per captured batch size, each over the same static inputs: a packed i32 buffer
// (token ids, positions, slots, sequence lengths, query offsets, logit rows, recurrent-state
// slots and initial-state flags, block tables) that a step fills with one upload from a
// page-locked staging buffer (so the upload does not wait for a step still running), and a shared
// [max size, V] f32 logits buffer. A step of n sequences runs the smallest captured size >= n;
// the padding sequences write no KV (slot -1) and read one cached position of block 0, keep no
// recurrent state (state slot -1), and their logits rows are ignored. Attention is captured for
// the longest context (max_seq_len = max_model_len), so one graph serves every context length.
//
// With an upload stream (backend/ahead_upload.h) a replay's inputs go up on it, into a device
// staging copy, while the step before still runs; the main stream then runs one TOKEN_FEED launch
// (the staging copy into the static inputs, fed token ids gathered from the sampled ids) and the
// replay, and no host->device copy sits between two steps.
//
// A captured batch has no host mirrors (ForwardBatch::host_*): a replay refreshes only the device
// inputs. So every kernel a decode step runs must plan its grid from the batch size, max_q_len and
// max_seq_len alone and read per-sequence data (context lengths, query offsets, state slots and
// initial-state flags) on the device: ATTN_DECODE, MLA_ATTENTION and the Gated DeltaNet kernels
// do, which is why paged K/V, MLA latent and recurrent-state models all take graphs.
// Recurrent-state rows carry the sequence's slot and has_initial_state = (start_pos > 0), exactly
// as build_forward_batch passes them.
#pragma once
#include <memory>
#include <vector>

#include "backend/ahead_upload.h"
#include "backend/host_staging.h"
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
  // until the next run). `feed`: token ids taken from the device (batch_builder.h).
  Tensor run(const std::vector<SeqWork>& work, const DeviceTokenFeed* feed = nullptr);
  // What run() does before the replay: fills the static inputs for `work` padded to the smallest
  // captured size that holds it, and returns the batch that size's graph was captured with.
  // Exposed so that the inputs can be checked (and the step run eagerly) where nothing is captured.
  ForwardBatch stage(const std::vector<SeqWork>& work);
  const std::vector<int>& sizes() const { return sizes_; }

  // The batch sizes captured by default (vLLM-like: dense at small sizes, sparser above), up to max.
  static std::vector<int> default_sizes(int max_num_seqs);
  // Whether a model's cache layout allows graphs (see above).
  static bool supported(const std::vector<LayerCacheSpec>& spec);

 private:
  struct Layout {  // offsets (in i32 elements) of each array in the packed input buffer
    size_t ids, pos, slots, lens, qsl, rows, states, init, order, tables, total;
  };
  ForwardBatch batch_for(int size) const;
  size_t size_index(int n) const;  // index of the smallest size >= n
  size_t words_used(int size) const { return lay_.tables + size_t(size) * size_t(max_blocks_); }
  // The host image of the inputs for `work` padded to `size` (words_used(size) words at h).
  void fill_host(const std::vector<SeqWork>& work, int size, int32_t* h) const;
  // fill_host into a staging buffer, then one upload on the main stream.
  void fill(const std::vector<SeqWork>& work, int size);
  // fill_host and the feed rows uploaded ahead, then TOKEN_FEED into the static inputs.
  void fill_ahead(const std::vector<SeqWork>& work, int size, const DeviceTokenFeed* feed);

  Model& model_;
  OpContext& ctx_;
  KvCache& cache_;
  std::vector<int> sizes_;  // ascending
  int64_t max_model_len_, max_blocks_;
  Layout lay_{};
  HostStaging staging_;  // two buffers: one may still feed the step in flight
  AheadUpload ahead_;    // two slots, likewise
  Tensor inputs_, logits_;
  std::vector<std::unique_ptr<Graph>> graphs_;  // parallel to sizes_
};

}  // namespace portllm
