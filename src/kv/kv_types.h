// Integer vocabulary shared by the KV cache and the scheduler. These layers never see tensors:
// a block is an index into the backend's paged KV tensors, a token is a vocabulary id.
#pragma once
#include <cstdint>

namespace portllm {

using TokenId = int32_t;
using BlockId = int32_t;
// The engine maps its external (string) request ids onto these; integers keep kv/ and sched/
// cheap to hash and trivially copyable.
using RequestId = uint64_t;

}  // namespace portllm
