// Scheduler limits. validate() rejects combinations that could deadlock.
#pragma once

namespace portllm {

struct SchedulerConfig {
  int max_num_seqs = 256;              // running requests at most
  int max_num_batched_tokens = 8192;   // tokens per step (the token budget)
  bool enable_chunked_prefill = true;  // split prompts over several steps
  // With chunked prefill: at most this many tokens of one request per step (0 = no cap beyond
  // the budget), so one long prompt cannot take a whole step from the others.
  int long_prefill_token_threshold = 0;
  int max_model_len = 4096;            // prompt + max_tokens at most
  bool enable_prefix_caching = true;
  int block_size = 16;                 // tokens per KV block, chosen by the backend
  int num_blocks = 0;                  // KV blocks in the pool, from the memory profile
  int num_state_slots = 0;             // recurrent state slots (hybrid models), 0 = none

  // Throws portllm::Error naming the offending field.
  void validate() const;
};

}  // namespace portllm
