// One generation request as the scheduler sees it: token ids and counters, no text.
//
// num_tokens() = prompt + outputs. Each step the scheduler moves num_computed_tokens toward
// num_tokens(); when a step reaches num_tokens() the engine samples one token, which
// update_from_output appends, so a decode step is just "one token left to compute".
#pragma once
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_types.h"

namespace portllm {

enum class RequestStatus {
  WAITING,           // never admitted yet
  RUNNING,           // holds KV blocks (and a state slot if it needs one)
  PREEMPTED,         // was running, lost its blocks, waits to be recomputed
  FINISHED_STOPPED,  // sampled a stop token
  FINISHED_LENGTH,   // reached max_tokens
  FINISHED_ABORTED,  // aborted by the client / engine
};

inline bool is_finished(RequestStatus s) {
  return s == RequestStatus::FINISHED_STOPPED || s == RequestStatus::FINISHED_LENGTH ||
         s == RequestStatus::FINISHED_ABORTED;
}
std::string_view to_string(RequestStatus s);

// Stands for a sampled token not yet read back (async scheduling); never a real id, so a block
// hash over it could never match a prompt (and none is taken: see Scheduler::add_output_placeholders).
inline constexpr TokenId kPlaceholderToken = -1;

struct Request {
  Request(RequestId id, std::vector<TokenId> prompt, int max_tokens);

  RequestId id;
  int max_tokens;                       // output tokens at most
  std::vector<TokenId> stop_token_ids;  // sampling one of these finishes the request (EOS...)
  bool needs_state_slot = false;        // hybrid / recurrent model: needs a StateSlotPool slot
  std::optional<uint64_t> cache_salt;   // prefix-cache separation key (adapter, tenant)

  // Maintained by the scheduler.
  RequestStatus status = RequestStatus::WAITING;
  int num_computed_tokens = 0;  // tokens whose K/V is in this request's blocks
  int num_cached_tokens = -1;   // prompt tokens served by the prefix cache at first admission
  int num_preemptions = 0;
  uint64_t arrival = 0;         // admission order key, set by add_request
  // Async scheduling (Scheduler::add_output_placeholders): outputs appended as kPlaceholderToken
  // before their step's token is known.
  int num_placeholders = 0;

  int num_prompt_tokens() const { return num_prompt_tokens_; }
  int num_tokens() const { return static_cast<int>(all_token_ids_.size()); }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  std::span<const TokenId> all_token_ids() const { return all_token_ids_; }
  std::span<const TokenId> prompt_token_ids() const {
    return std::span<const TokenId>(all_token_ids_).first(num_prompt_tokens_);
  }
  std::span<const TokenId> output_token_ids() const {
    return std::span<const TokenId>(all_token_ids_).subspan(num_prompt_tokens_);
  }
  void append_output(TokenId t) { all_token_ids_.push_back(t); }
  void set_token(int index, TokenId t) { all_token_ids_.at(size_t(index)) = t; }

  SeqView kv_view() const { return {id, all_token_ids_, num_computed_tokens, cache_salt}; }

 private:
  std::vector<TokenId> all_token_ids_;  // prompt followed by outputs, contiguous for hashing
  int num_prompt_tokens_;
};

}  // namespace portllm
