// Cases for the pointwise and row ops: odd sizes (5, 7, 13), head-shaped strided views, every
// activation dtype.
#include <cmath>
#include <limits>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

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
  for (auto [R, D] : {std::pair{1, 13}, {7, 64}, {5, 128}, {13, 1000}, {3, 4096}}) {
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
}

}  // namespace portllm::conformance
