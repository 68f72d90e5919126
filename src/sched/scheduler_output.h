// What one schedule() step asks the model runner to compute.
#pragma once
#include <vector>

#include "kv/kv_types.h"

namespace portllm {

struct ScheduledRequest {
  RequestId id = 0;
  int num_scheduled_tokens = 0;
  int start_position = 0;           // position of token_ids[0] (= num_computed_tokens before)
  std::vector<TokenId> token_ids;   // tokens at positions start_position .. +num_scheduled_tokens
  // The request's whole block table. Slot of position p:
  //   block_table[p / block_size] * block_size + p % block_size
  // Positions < start_position are already in these blocks (attention reads them).
  std::vector<BlockId> block_table;
  // True when this step reaches the last known token (the prompt's last chunk, a recompute
  // after preemption, or a decode step): the engine samples one token for this request only then.
  bool sample = false;
  // Recurrent state slot, -1 without one. start_position == 0 means the state starts fresh.
  int state_slot = -1;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;  // decodes first, then prefill chunks, then new ones
  int total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted_ids;     // lost their blocks this step (recomputed later)
  std::vector<RequestId> finished_ids;      // finished or aborted since the previous step
  bool empty() const { return scheduled.empty(); }
};

// The engine's answer for one scheduled request with sample == true.
struct SampledToken {
  RequestId id = 0;
  TokenId token = 0;
};

}  // namespace portllm
