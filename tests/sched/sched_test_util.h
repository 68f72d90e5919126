// Helpers for scheduler tests: a fake model whose "sampled" token is a pure function of the
// request's tokens so far, so a run is reproducible and recompute after preemption must yield
// exactly the outputs of an uninterrupted run.
#pragma once
#include <memory>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "sched/scheduler.h"

namespace portllm::test {

inline TokenId fake_next_token(std::span<const TokenId> tokens, int vocab = 1000) {
  return static_cast<TokenId>(XXH3_64bits(tokens.data(), tokens.size_bytes()) % vocab);
}

inline std::vector<TokenId> iota_tokens(int n, TokenId start = 0) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

inline std::shared_ptr<Request> make_request(RequestId id, std::vector<TokenId> prompt,
                                             int max_tokens) {
  return std::make_shared<Request>(id, std::move(prompt), max_tokens);
}

struct Step {
  SchedulerOutput out;
  std::vector<std::shared_ptr<Request>> finished;
  const ScheduledRequest* find(RequestId id) const {
    for (const auto& s : out.scheduled)
      if (s.id == id) return &s;
    return nullptr;
  }
};

// schedule() + fake sampling + update_from_output().
inline Step run_step(Scheduler& s, int vocab = 1000) {
  Step st;
  st.out = s.schedule();
  std::vector<SampledToken> sampled;
  for (const auto& e : st.out.scheduled)
    if (e.sample) sampled.push_back({e.id, fake_next_token(s.find(e.id)->all_token_ids(), vocab)});
  st.finished = s.update_from_output(st.out, sampled);
  return st;
}

// Steps until nothing is left; returns the number of steps (fails the test after max_steps).
inline int run_to_completion(Scheduler& s, int max_steps = 100000) {
  int steps = 0;
  while (s.has_unfinished_requests()) {
    run_step(s);
    if (++steps > max_steps) {
      ADD_FAILURE() << "no completion after " << max_steps << " steps";
      break;
    }
  }
  return steps;
}

inline SchedulerConfig small_config(int num_blocks, int block_size = 4) {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.block_size = block_size;
  c.num_blocks = num_blocks;
  return c;
}

}  // namespace portllm::test
