// BATCHED_MATMUL cases, laid out as MLA's absorption uses the op: the batch is a head, so out and
// x are column blocks of a [M, B * cols] tensor (x's blocks wider than K, as q_nope sits inside a
// head's nope|rope columns) and W is either a contiguous [B, N, K] stack (W_UK^T) or a run of N
// rows starting P rows into each batch's block of a [B * (P + N), K] matrix (W_UV inside kv_b).
// Batch strides therefore differ from rows * cols. B in {1, 3, 16}, M in {1, 5, 33}, odd N/K.
#include <cmath>
#include <limits>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"

namespace portllm::conformance {

namespace {
struct Shape {
  int B, M, N, K;
  int x_pad;  // extra columns per batch in x (batch stride K + x_pad)
  int w_skip;  // W rows skipped per batch (0: contiguous [B, N, K])
};

// A [d0, d1, d2] view of t starting `off` elements in, with strides {s0, s1, 1}.
Tensor view3d(const Tensor& t, int64_t off, int64_t d0, int64_t d1, int64_t d2, int64_t s0, int64_t s1) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + off * int64_t(dtype_size(t.dtype));
  v.ndim = 3;
  v.shape = {d0, d1, d2, 0, 0};
  v.strides = {s0, s1, 1, 0, 0};
  return v;
}

OpCase batched_case(DType act, DType wt, Shape s) {
  CaseRng r(uint64_t(s.B * 7919 + s.M * 1009 + s.N * 31 + s.K + int(wt)));
  OpCase c;
  c.op = Op::BATCHED_MATMUL;
  c.name = fmt::format("B={} M={} N={} K={} w={} x_pad={} w_skip={}", s.B, s.M, s.N, s.K, dtype_name(wt), s.x_pad,
                       s.w_skip);
  const int64_t xs = s.K + s.x_pad, wrows = s.w_skip + s.N;
  const double wscale = 1.0 / std::sqrt(double(s.K));
  c.tensors = {CaseRng::filled(act, {s.M, int64_t(s.B) * s.N}, std::numeric_limits<double>::quiet_NaN()),
               r.tensor(act, {s.M, s.B * xs}), r.tensor(wt, {s.B * wrows, s.K}, -wscale, wscale)};
  c.outputs = {0};
  c.tol = std::max(default_tolerance(act), default_tolerance(wt));
  c.invoke = [s, xs, wrows](const std::vector<Tensor>& t, const ArgsSink& sink) {
    BatchedMatmulArgs a{view3d(t[0], 0, s.B, s.M, s.N, s.N, int64_t(s.B) * s.N),
                        view3d(t[1], 0, s.B, s.M, s.K, xs, s.B * xs),
                        view3d(t[2], int64_t(s.w_skip) * s.K, s.B, s.N, s.K, wrows * s.K, s.K)};
    sink(a.desc(), &a);
  };
  return c;
}

std::vector<OpCase> batched_matmul_cases(DType act) {
  const int NK[][2] = {{13, 7}, {31, 65}, {64, 48}, {100, 37}, {1, 9}};
  std::vector<OpCase> v;
  int i = 0;
  for (int B : {1, 3, 16})
    for (int M : {1, 5, 33}) {
      const int* nk = NK[i++ % 5];
      // Alternate the two W layouts; every other case also pads x's batch blocks.
      v.push_back(batched_case(act, act, Shape{B, M, nk[0], nk[1], i % 2 ? 3 : 0, i % 3 ? 5 : 0}));
    }
  // MLA-like: 16 heads, nope 24 of qk 40 -> R 48 (W_UK^T); R 48 -> v 24 out of 48 rows (W_UV).
  v.push_back(batched_case(act, act, Shape{16, 1, 48, 24, 16, 0}));
  v.push_back(batched_case(act, act, Shape{16, 7, 24, 48, 0, 24}));
  // The CPU path's mixed form: f32 activations with bf16 / f16 weights.
  if (act == DType::F32)
    for (DType wt : {DType::BF16, DType::F16}) v.push_back(batched_case(act, wt, Shape{3, 5, 31, 65, 3, 5}));
  return v;
}
}  // namespace

void register_batched_matmul_cases() { register_case_generator(Op::BATCHED_MATMUL, batched_matmul_cases); }

}  // namespace portllm::conformance
