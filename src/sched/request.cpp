#include "sched/request.h"

namespace portllm {

Request::Request(RequestId id_, std::vector<TokenId> prompt, int max_tokens_)
    : id(id_),
      max_tokens(max_tokens_),
      all_token_ids_(std::move(prompt)),
      num_prompt_tokens_(static_cast<int>(all_token_ids_.size())) {}

std::string_view to_string(RequestStatus s) {
  switch (s) {
    case RequestStatus::WAITING: return "waiting";
    case RequestStatus::RUNNING: return "running";
    case RequestStatus::PREEMPTED: return "preempted";
    case RequestStatus::FINISHED_STOPPED: return "stop";
    case RequestStatus::FINISHED_LENGTH: return "length";
    case RequestStatus::FINISHED_ABORTED: return "abort";
  }
  return "?";
}

}  // namespace portllm
