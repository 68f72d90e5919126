// Cases for the pointwise and row ops: odd sizes (5, 7, 13), head-shaped strided views, every
// activation dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// [T, H, D] view of columns col0.. of a 2-D [T, W] tensor: the heads of a fused projection.
Tensor heads_of(const Tensor& t, int64_t col0, int64_t H, int64_t D) {
  Tensor x = t.slice(1, col0, H * D);
  x.ndim = 3;
  x.shape = {t.shape[0], H, D, 0, 0};
  x.strides = {t.strides[0], D, 1, 0, 0};
  return x;
}

std::vector<OpCase> embed_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, H, V] : {std::tuple{1, 13, 7}, {5, 64, 100}, {13, 96, 33}}) {
    CaseRng r(uint64_t(T * 131 + H));
    OpCase c;
    c.op = Op::EMBED;
    c.name = fmt::format("T={} H={} V={}", T, H, V);
    std::vector<int32_t> ids;
    for (int i = 0; i < T; ++i) ids.push_back(int32_t(r.integer(0, V - 1)));
    c.tensors = {CaseRng::filled(act, {T, H}, kNaN), r.tensor(act, {V, H}), r.ints(ids, {T})};
    c.outputs = {0};
    c.tol = 0;  // a copy is exact
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      EmbedArgs a{t[0], t[1], t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> norm_cases(DType act, bool fused) {
  std::vector<OpCase> v;
  for (auto [R, D] : {std::pair{1, 13}, {7, 64}, {5, 128}, {13, 1000}, {3, 4096}, {3, 1001}, {2, 40000}}) {
    for (float offset : {0.f, 1.f}) {
      CaseRng r(uint64_t(R * 7 + D + (fused ? 1 : 0)));
      OpCase c;
      c.op = fused ? Op::ADD_RMS_NORM : Op::RMS_NORM;
      c.name = fmt::format("R={} D={} offset={}", R, D, offset);
      c.tol = default_tolerance(act);
      const float eps = 1e-6f;
      if (fused) {
        c.tensors = {r.tensor(act, {R, D}), CaseRng::filled(act, {R, D}, kNaN), r.tensor(act, {R, D}),
                     r.tensor(DType::BF16, {D}, 0.5, 1.5)};
        c.outputs = {0, 1};
        c.invoke = [eps, offset](const std::vector<Tensor>& t, const ArgsSink& sink) {
          AddRmsNormArgs a{t[0], t[1], t[2], t[3], eps, offset};
          sink(a.desc(), &a);
        };
      } else {
        c.tensors = {CaseRng::filled(act, {R, D}, kNaN), r.tensor(act, {R, D}), r.tensor(act, {D}, 0.5, 1.5)};
        c.outputs = {0};
        c.invoke = [eps, offset](const std::vector<Tensor>& t, const ArgsSink& sink) {
          RmsNormArgs a{t[0], t[1], t[2], eps, offset};
          sink(a.desc(), &a);
        };
      }
      v.push_back(std::move(c));
    }
  }
  // Views as the models pass them, on both GPU paths (16-byte vectors when the view is aligned,
  // scalar otherwise): q/k norm over [T, H, D] heads inside a fused qkv row, in place (rows not a
  // multiple of a block's rows; T x H large enough that blocks loop); rows strided inside a wider
  // row; heads at an odd column (scalar path); a 2-D output for a 3-D input.
  struct V { int T, H, D, col0, W; bool out2d; };
  for (V s : {V{5, 4, 128, 0, 1024, false}, V{3, 2, 64, 128, 384, false}, V{7, 3, 256, 256, 1280, false},
              V{1100, 32, 64, 0, 2112, false}, V{6, 3, 64, 1, 200, false}, V{4, 5, 40, 0, 240, true},
              V{9, 1, 1040, 8, 1056, false}, V{5, 2, 2056, 0, 4112, false}}) {
    CaseRng r(uint64_t(s.T * 13 + s.H * 5 + s.D + s.col0 + (fused ? 7 : 0)));
    OpCase c;
    c.op = fused ? Op::ADD_RMS_NORM : Op::RMS_NORM;
    c.name = fmt::format("view [T={} H={} D={}] at col {} of W={}{}", s.T, s.H, s.D, s.col0, s.W, s.out2d ? " out 2-D" : "");
    c.tol = default_tolerance(act);
    const float eps = 1e-6f;
    const int64_t col0 = s.col0, H = s.H, D = s.D;
    const bool out2d = s.out2d;
    const int64_t R = int64_t(s.T) * s.H;
    if (fused) {
      // x a strided view, the residual a strided view of another tensor, out contiguous or a view.
      c.tensors = {r.tensor(act, {s.T, s.W}), CaseRng::filled(act, {s.T, s.W}, kNaN), r.tensor(act, {s.T, s.W}),
                   r.tensor(DType::BF16, {s.D}, 0.5, 1.5), CaseRng::filled(act, {R, s.D}, kNaN)};
      c.outputs = {0, 1, 4};
      c.invoke = [eps, col0, H, D, out2d](const std::vector<Tensor>& t, const ArgsSink& sink) {
        AddRmsNormArgs a{heads_of(t[0], col0, H, D), out2d ? t[4] : heads_of(t[1], col0, H, D), heads_of(t[2], col0, H, D),
                         t[3], eps, 0.f};
        sink(a.desc(), &a);
      };
    } else {
      c.tensors = {r.tensor(act, {s.T, s.W}), r.tensor(act, {s.D}, 0.5, 1.5), CaseRng::filled(act, {R, s.D}, kNaN)};
      c.outputs = {0, 2};
      c.invoke = [eps, col0, H, D, out2d](const std::vector<Tensor>& t, const ArgsSink& sink) {
        Tensor x = heads_of(t[0], col0, H, D);
        RmsNormArgs a{out2d ? t[2] : x, x, t[1], eps, 0.f};
        sink(a.desc(), &a);
      };
    }
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> rope_cases(DType act) {
  std::vector<OpCase> v;
  struct S { int T, Hq, Hk, D, rot; bool inter; };
  for (S s : {S{1, 4, 2, 64, 64, false}, S{7, 8, 2, 128, 128, false}, S{5, 3, 1, 32, 8, false},
              S{13, 4, 4, 64, 16, true}, S{3, 16, 1, 192, 64, true}, S{2, 2, 2, 256, 64, false}}) {
    CaseRng r(uint64_t(s.T * 17 + s.D + s.rot));
    OpCase c;
    c.op = Op::ROPE;
    c.name = fmt::format("T={} Hq={} Hk={} D={} rot={} {}", s.T, s.Hq, s.Hk, s.D, s.rot, s.inter ? "interleaved" : "neox");
    c.tol = default_tolerance(act);
    const int max_pos = 64;
    std::vector<int32_t> pos;
    for (int i = 0; i < s.T; ++i) pos.push_back(int32_t(r.integer(0, max_pos - 1)));
    Tensor cs = r.tensor(DType::F32, {max_pos, s.rot});
    // Real tables hold cos/sin pairs of one angle; random values would also pass, but keep it real.
    for (int p = 0; p < max_pos; ++p)
      for (int i = 0; i < s.rot / 2; ++i) {
        double ang = p * std::pow(10000.0, -2.0 * i / s.rot);
        cs.ptr<float>()[p * s.rot + i] = float(std::cos(ang));
        cs.ptr<float>()[p * s.rot + s.rot / 2 + i] = float(std::sin(ang));
      }
    c.tensors = {r.tensor(act, {s.T, s.Hq, s.D}), r.tensor(act, {s.T, s.Hk, s.D}), r.ints(pos, {s.T}), cs};
    c.outputs = {0, 1};
    const int rot = s.rot;
    const bool inter = s.inter;
    c.invoke = [rot, inter](const std::vector<Tensor>& t, const ArgsSink& sink) {
      RopeArgs a{t[0], t[1], t[2], t[3], rot, inter};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  // q and k as head views of one fused qkv row, as the models pass them: aligned (16-byte vectors;
  // the 2048-token case makes blocks loop), and at an odd column (scalar path).
  struct Q { int T, Hq, Hk, D, rot, col0; bool inter; };
  for (Q s : {Q{2048, 16, 4, 128, 128, 0, false}, Q{9, 4, 2, 128, 64, 0, false}, Q{6, 3, 1, 64, 64, 8, true},
              Q{5, 4, 2, 64, 64, 1, false}, Q{5, 2, 1, 64, 32, 3, true}}) {
    CaseRng r(uint64_t(s.T * 19 + s.D + s.rot + s.col0));
    OpCase c;
    c.op = Op::ROPE;
    c.name = fmt::format("qkv views T={} Hq={} Hk={} D={} rot={} col0={} {}", s.T, s.Hq, s.Hk, s.D, s.rot, s.col0,
                         s.inter ? "interleaved" : "neox");
    c.tol = default_tolerance(act);
    const int max_pos = 4096;
    std::vector<int32_t> pos;
    for (int i = 0; i < s.T; ++i) pos.push_back(int32_t(r.integer(0, max_pos - 1)));
    Tensor cs = r.tensor(DType::F32, {max_pos, s.rot});
    for (int p = 0; p < max_pos; ++p)
      for (int i = 0; i < s.rot / 2; ++i) {
        double ang = p * std::pow(10000.0, -2.0 * i / s.rot);
        cs.ptr<float>()[p * s.rot + i] = float(std::cos(ang));
        cs.ptr<float>()[p * s.rot + s.rot / 2 + i] = float(std::sin(ang));
      }
    const int W = s.col0 + (s.Hq + 2 * s.Hk) * s.D;
    c.tensors = {r.tensor(act, {s.T, W}), r.ints(pos, {s.T}), cs};
    c.outputs = {0};
    const int rot = s.rot, col0 = s.col0, Hq = s.Hq, Hk = s.Hk, D = s.D;
    const bool inter = s.inter;
    c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
      RopeArgs a{heads_of(t[0], col0, Hq, D), heads_of(t[0], col0 + Hq * D, Hk, D), t[1], t[2], rot, inter};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> silu_mul_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, I] : {std::pair{1, 13}, {7, 172}, {5, 1024}, {13, 3000}}) {
    CaseRng r(uint64_t(T * 5 + I));
    OpCase c;
    c.op = Op::SILU_MUL;
    c.name = fmt::format("T={} I={}", T, I);
    c.tol = default_tolerance(act);
    c.tensors = {CaseRng::filled(act, {T, I}, kNaN), r.tensor(act, {T, I}, -4, 4), r.tensor(act, {T, I})};
    c.outputs = {0};
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      SiluMulArgs a{t[0], t[1], t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  // gate and up as the two halves of one gate_up row (the models' layout): I a multiple of 8
  // (16-byte vectors; 2500 rows make blocks loop over rows), and I = 100 (up at an 8-byte offset:
  // scalar path in bf16/f16).
  for (auto [T, I] : {std::pair{33, 1536}, {2500, 264}, {9, 100}}) {
    CaseRng r(uint64_t(T * 11 + I));
    OpCase c;
    c.op = Op::SILU_MUL;
    c.name = fmt::format("gate_up views T={} I={}", T, I);
    c.tol = default_tolerance(act);
    c.tensors = {CaseRng::filled(act, {T, I}, kNaN), r.tensor(act, {T, 2 * I}, -4, 4)};
    c.outputs = {0};
    const int64_t i = I;
    c.invoke = [i](const std::vector<Tensor>& t, const ArgsSink& sink) {
      SiluMulArgs a{t[0], t[1].slice(1, 0, i), t[1].slice(1, i, i)};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> add_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [R, C] : {std::pair{1, 7}, {5, 64}, {13, 4096}}) {
    CaseRng r(uint64_t(R + C));
    OpCase c;
    c.op = Op::ADD;
    c.name = fmt::format("R={} C={}", R, C);
    c.tol = default_tolerance(act);
    c.tensors = {CaseRng::filled(act, {R, C}, kNaN), r.tensor(act, {R, C}), r.tensor(act, {R, C})};
    c.outputs = {0};
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      AddArgs a{t[0], t[1], t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  // In place into a strided view (out = a): aligned columns, then columns at an odd offset.
  for (auto [R, C, col0] : {std::tuple{7, 512, 64}, {5, 96, 3}}) {
    CaseRng r(uint64_t(R * 3 + C + col0));
    OpCase c;
    c.op = Op::ADD;
    c.name = fmt::format("in place view R={} C={} col0={}", R, C, col0);
    c.tol = default_tolerance(act);
    c.tensors = {r.tensor(act, {R, C + col0 + 8}), r.tensor(act, {R, C})};
    c.outputs = {0};
    const int64_t cc = C, c0 = col0;
    c.invoke = [cc, c0](const std::vector<Tensor>& t, const ArgsSink& sink) {
      Tensor o = t[0].slice(1, c0, cc);
      AddArgs a{o, o, t[1]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> row_reduce_cases(DType act, Op op) {
  std::vector<OpCase> v;
  if (op == Op::ARGMAX && act != DType::F32) return v;  // logits are f32
  for (auto [R, N] : {std::pair{1, 13}, {5, 512}, {7, 32000}, {2, 151936}}) {
    CaseRng r(uint64_t(R * 3 + N));
    OpCase c;
    c.op = op;
    c.name = fmt::format("R={} N={}", R, N);
    if (op == Op::ARGMAX) {
      c.tensors = {CaseRng::filled(DType::I32, {R}, -1), r.tensor(act, {R, N}, -10, 10)};
      c.tol = 0;
      c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
        ArgmaxArgs a{t[0], t[1]};
        sink(a.desc(), &a);
      };
    } else {
      c.tensors = {CaseRng::filled(act, {R, N}, kNaN), r.tensor(act, {R, N}, -10, 10)};
      c.tol = default_tolerance(act);
      c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
        SoftmaxArgs a{t[0], t[1]};
        sink(a.desc(), &a);
      };
    }
    c.outputs = {0};
    v.push_back(std::move(c));
  }
  return v;
}
// Decode-graph inputs: ids at an offset, rows that feed, keep the staged id (-1), or point past
// the sampled ids (kept as well); the last case is a 256-sequence step's inputs with 128-entry
// block tables.
std::vector<OpCase> token_feed_cases(DType act) {
  std::vector<OpCase> v;
  if (act != DType::F32) return v;  // i32 only: one sweep
  for (auto [N, n, R, off] : {std::tuple{13, 5, 0, 0}, {1000, 64, 80, 7}, {9 * 256 + 256 * 128, 256, 256, 0}}) {
    CaseRng r(uint64_t(N * 5 + n));
    std::vector<int32_t> staged(static_cast<size_t>(N)), rows(static_cast<size_t>(n)), sampled(static_cast<size_t>(std::max(R, 1)));
    for (auto& x : staged) x = int32_t(r.integer(-1, 1 << 20));
    for (auto& x : sampled) x = int32_t(r.integer(0, 151935));
    for (auto& x : rows) {
      const int64_t k = r.integer(0, 9);
      x = int32_t(k == 0 ? -1 : k == 1 ? R + r.integer(0, 3) : r.integer(0, std::max(R - 1, 0)));
    }
    rows.front() = R - 1;  // the edges: the last sampled id, and the first row past them
    rows.back() = R;
    OpCase c;
    c.op = Op::TOKEN_FEED;
    c.name = fmt::format("N={} n={} R={} ids_offset={}", N, n, R, off);
    c.tensors = {CaseRng::filled(DType::I32, {N}, -7), r.ints(staged, {N}), r.ints(rows, {n}),
                 r.ints(sampled, {int64_t(sampled.size())})};
    c.outputs = {0};
    c.tol = 0;  // a copy is exact
    c.invoke = [R = R, off = off](const std::vector<Tensor>& t, const ArgsSink& sink) {
      TokenFeedArgs a{t[0], t[1], t[2], R > 0 ? t[3] : Tensor{}, off};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_basic_cases() {
  register_case_generator(Op::EMBED, embed_cases);
  register_case_generator(Op::RMS_NORM, [](DType d) { return norm_cases(d, false); });
  register_case_generator(Op::ADD_RMS_NORM, [](DType d) { return norm_cases(d, true); });
  register_case_generator(Op::ROPE, rope_cases);
  register_case_generator(Op::SILU_MUL, silu_mul_cases);
  register_case_generator(Op::ADD, add_cases);
  register_case_generator(Op::ARGMAX, [](DType d) { return row_reduce_cases(d, Op::ARGMAX); });
  register_case_generator(Op::SOFTMAX, [](DType d) { return row_reduce_cases(d, Op::SOFTMAX); });
  register_case_generator(Op::TOKEN_FEED, token_feed_cases);
}

}  // namespace portllm::conformance
