#include "ops/op_skip.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace portllm {

namespace {
static_assert(int(Op::COUNT) <= 64, "one bit per op");

bool writes_indices(Op op) {
  return op == Op::MOE_ROUTE_SOFTMAX || op == Op::MOE_ROUTE_GROUPED || op == Op::MOE_PERMUTE || op == Op::SAMPLE ||
         op == Op::ARGMAX;
}

uint64_t parse(const char* v) {
  uint64_t mask = 0;
  std::string_view rest = v ? v : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    const auto op = op_from_name(name);
    if (!op) PL_THROW("PORTLLM_SKIP_OPS: '{}' is not an op name (see `portllm ops support`)", name);
    if (writes_indices(*op))
      PL_THROW("PORTLLM_SKIP_OPS: {} writes indices that later kernels follow; it cannot be skipped", name);
    mask |= uint64_t(1) << int(*op);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (mask)
    std::fprintf(stderr, "warning: PORTLLM_SKIP_OPS=%s: these ops run no kernel; outputs are wrong (timing only)\n", v);
  return mask;
}

uint64_t mask() {
  static const uint64_t m = parse(std::getenv("PORTLLM_SKIP_OPS"));
  return m;
}
}  // namespace

bool op_skipping_enabled() { return mask() != 0; }
bool op_skipped(Op op) { return (mask() >> int(op)) & 1u; }

}  // namespace portllm
