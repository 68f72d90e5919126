// A conformance case: seeded host tensors (inputs, and outputs pre-filled with poison), which of
// them are outputs, a tolerance, and a function that turns the tensors (wherever they live) into
// the op's args and hands them to a sink (which checks supports() and runs a kernel).
// llama.cpp's test-backend-ops is the model.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace portllm::conformance {

using ArgsSink = std::function<void(const OpDesc& desc, const void* args)>;

struct OpCase {
  Op op = Op::COUNT;
  std::string name;             // shape and dtype summary, e.g. "R=7 D=13 act=bf16"
  std::vector<Tensor> tensors;  // host tensors, contiguous
  std::vector<int> outputs;     // indices into tensors compared against the reference
  double tol = 1e-5;            // max normalized error ||out - ref|| / ||ref||
  // The least memory traffic and the arithmetic the op needs (0 = not stated): `ops perf` turns
  // its timing into GB/s and TFLOP/s, to set against the device's measured limits.
  double bytes = 0, flops = 0;
  std::function<void(const std::vector<Tensor>& t, const ArgsSink& sink)> invoke;
  // Set by perf cases whose tensors are costly to seed (model-sized KV caches): they leave
  // tensors and invoke to build(), which `ops perf` calls only for a case its pattern selects.
  std::function<void(OpCase& self)> build;
};

// Makes `c` (name, bytes and flops already set) take its tensors, outputs, tolerance and invoke
// from make() when built.
void defer_tensors(OpCase& c, std::function<OpCase()> make);

// Case generators, one per op (ops/conformance/cases_*.cpp). `dtype` is the activation dtype
// the sweep asks for; a generator may return no cases for a dtype its op does not take.
using CaseGenerator = std::function<std::vector<OpCase>(DType act_dtype)>;
void register_case_generator(Op op, CaseGenerator gen);
const CaseGenerator* case_generator(Op op);
void register_builtin_case_generators();

// Perf cases: model-sized shapes (Qwen3-8B, Qwen3-30B-A3B, DeepSeek-V3 ...) that `ops perf` times
// instead of the op's largest conformance case. Never compared against the reference.
void register_perf_case_generator(Op op, CaseGenerator gen);
const CaseGenerator* perf_case_generator(Op op);

// Seeded random host tensors for case generators.
class CaseRng {
 public:
  explicit CaseRng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  double uniform(double lo, double hi);
  int64_t integer(int64_t lo, int64_t hi);  // inclusive
  Tensor tensor(DType dtype, std::vector<int64_t> shape, double lo = -1, double hi = 1);
  Tensor ints(std::vector<int32_t> values, std::vector<int64_t> shape);
  static Tensor filled(DType dtype, std::vector<int64_t> shape, double value);

 private:
  uint64_t next();
  uint64_t state_;
};

// Expert weights [E, N, K] of a MoE case: float `wt` uniform in +-1/sqrt(K); f8_e4m3 uniform in
// +-wmax with f32 scales per (bn x bk) block, [E, ceil(N / bn), ceil(K / bk)], in [0.5, 1.5] x
// 1/sqrt(K) / wmax, so the dequantized weights land in about the same range. scale is undefined
// for float weights.
struct ExpertWeights {
  Tensor w, scale;
};
ExpertWeights expert_weights(CaseRng& r, DType wt, int64_t E, int64_t N, int64_t K, int64_t bn, int64_t bk,
                             double wmax = 448);

// Default tolerance for outputs computed in `dtype`.
double default_tolerance(DType dtype);

}  // namespace portllm::conformance
