// What one forward pass computes: a ragged batch of sequences, each contributing q_len new
// tokens at the end of its context. Built by the model runner from the scheduler's output;
// every tensor is on the model's device, every host_* vector mirrors a tensor for backends
// (and model code) that plan on the host.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace portllm {

struct ForwardBatch {
  int num_tokens = 0, num_seqs = 0;
  int max_q_len = 0, max_seq_len = 0;
  // Sequences [0, num_decode_seqs) feed one token each: the batch builder lays them out first
  // (tokens [0, num_decode_seqs)), so a step that mixes them with prefill chunks can run its
  // attention as a decode part and a prefill part (model/layers/attention.cpp).
  int num_decode_seqs = 0;
  Tensor token_ids;        // [T] i32
  Tensor positions;        // [T] i32
  Tensor slot_mapping;     // [T] i32: block * page_size + offset (paged KV/latent layers)
  Tensor block_tables;     // [B, max_blocks] i32
  Tensor seq_lens;         // [B] i32: context length after this step
  Tensor query_start_loc;  // [B + 1] i32
  // [num_decode_seqs] i32 or undefined: the decode sequences longest context first
  // (AttentionArgs::work_order), for kernels that schedule their work by it.
  Tensor decode_order;
  Tensor prefill_query_start_loc;  // [B - D + 1] i32, mixed steps only: query_start_loc[D..B] - D
  Tensor logits_indices;   // [L] i32: token rows whose next-token logits are wanted
  Tensor state_slots;      // [B] i32: recurrent-state slot of each sequence (hybrid models)
  Tensor has_initial_state;  // [B] i32: 1 when the slot holds state from earlier steps
  std::vector<int32_t> host_seq_lens, host_query_start_loc, host_positions, host_state_slots,
      host_has_initial_state, host_prefill_query_start_loc;

  int num_logits() const { return int(logits_indices.defined() ? logits_indices.size(0) : 0); }
};

}  // namespace portllm
