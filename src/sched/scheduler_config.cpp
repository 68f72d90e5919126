#include "sched/scheduler_config.h"

#include "core/error.h"

namespace portllm {

void SchedulerConfig::validate() const {
  if (max_num_seqs < 1) PL_THROW("scheduler: max_num_seqs must be >= 1, got {}", max_num_seqs);
  // Every running request must be able to advance each step (no starvation by budget).
  if (max_num_batched_tokens < max_num_seqs)
    PL_THROW("scheduler: max_num_batched_tokens ({}) must be >= max_num_seqs ({})",
             max_num_batched_tokens, max_num_seqs);
  if (max_model_len < 1) PL_THROW("scheduler: max_model_len must be >= 1, got {}", max_model_len);
  // Without chunking a (re)computed sequence must fit one step.
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len)
    PL_THROW("scheduler: without chunked prefill max_num_batched_tokens ({}) must be >= "
             "max_model_len ({})",
             max_num_batched_tokens, max_model_len);
  if (long_prefill_token_threshold < 0)
    PL_THROW("scheduler: long_prefill_token_threshold must be >= 0, got {}",
             long_prefill_token_threshold);
  if (block_size < 1) PL_THROW("scheduler: block_size must be >= 1, got {}", block_size);
  if (num_blocks < 1) PL_THROW("scheduler: num_blocks must be >= 1, got {}", num_blocks);
  if (num_state_slots < 0)
    PL_THROW("scheduler: num_state_slots must be >= 0, got {}", num_state_slots);
}

}  // namespace portllm
