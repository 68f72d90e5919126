// Op identifiers (from ops.def) and op descriptors: the part of a call that kernels' supports()
// predicates look at (dtypes, a few sizes, flags), hashed to cache the dispatch decision.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace portllm {

enum class Op : uint16_t {
#define PL_OP(name, desc) name,
#include "ops/ops.def"
#undef PL_OP
  COUNT
};

const char* op_name(Op op);
const char* op_description(Op op);
std::optional<Op> op_from_name(std::string_view name);

struct OpDesc {
  Op op = Op::COUNT;
  // Per-op meaning, documented in op_args.h: typically [0] activations, [1] weights, [2] cache.
  DType dtype[4] = {DType::F32, DType::F32, DType::F32, DType::F32};
  // Per-op sizes that kernels may constrain (head dim, page size, group size, ...).
  int64_t dim[4] = {0, 0, 0, 0};
  uint32_t flags = 0;

  uint64_t key() const;
  std::string str() const;
};

}  // namespace portllm
