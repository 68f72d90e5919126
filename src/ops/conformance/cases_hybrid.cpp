// Cases for the hybrid-model ops: causal conv1d with state and the gated delta rule over ragged
// batches (odd channel counts and head dims, GQA-like q/k head sharing, sequences shorter than
// the conv window and longer than a 64-token chunk, with and without initial state, slots in
// shuffled order with stale contents that must not be read, spare slots that must not be
// written), single-step decode, gated RMSNorm and the sigmoid output gate on strided views.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/conformance/cases.h"
#include "ops/op_args_hybrid.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// [T, heads, dim] view of columns [col0, col0 + heads * dim) of a [T, W] tensor.
Tensor heads(const Tensor& t, int64_t col0, int64_t h, int64_t d) {
  Tensor v = t.slice(1, col0, h * d);
  v.ndim = 3;
  v.shape = {t.shape[0], h, d, 0, 0};
  v.strides = {t.strides[0], d, 1, 0, 0};
  return v;
}

struct Batch {
  std::vector<int32_t> qsl{0}, slots, init;
  int num_slots = 0, max_q = 0;
};

// Sequences get distinct slots out of B + 2, in shuffled order (two spare slots nobody owns).
Batch make_batch(CaseRng& r, const std::vector<int>& q_lens, const std::vector<int>& init) {
  Batch b;
  const int B = int(q_lens.size());
  b.num_slots = B + 2;
  std::vector<int32_t> perm(size_t(b.num_slots));
  std::iota(perm.begin(), perm.end(), 0);
  for (int i = b.num_slots - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(r.integer(0, i))]);
  for (int i = 0; i < B; ++i) {
    b.qsl.push_back(b.qsl.back() + q_lens[size_t(i)]);
    b.slots.push_back(perm[size_t(i)]);
    b.init.push_back(init[size_t(i)]);
    b.max_q = std::max(b.max_q, q_lens[size_t(i)]);
  }
  return b;
}

std::string lens_str(const std::vector<int>& q, const std::vector<int>& init) {
  std::string s;
  for (size_t i = 0; i < q.size(); ++i) s += fmt::format("{}{}{}", i ? "," : "", q[i], init[i] ? "+s" : "");
  return s;
}

struct ConvShape { int C, K; std::vector<int> q, init; };

std::vector<OpCase> conv_cases(DType act, bool decode) {
  std::vector<ConvShape> shapes;
  if (decode)
    shapes = {{13, 4, {1}, {1}}, {64, 4, {1, 1, 1}, {1, 0, 1}}, {136, 3, {1, 1}, {0, 0}},
              {8192, 4, {1, 1, 1, 1}, {1, 1, 0, 1}}};
  else
    shapes = {{13, 4, {5}, {0}},          {64, 4, {1, 7, 2}, {0, 1, 1}}, {136, 3, {13, 3, 1, 20}, {1, 0, 1, 0}},
              {7, 2, {4, 9}, {1, 1}},     {256, 4, {2, 65}, {1, 0}},      {1024, 4, {33}, {1}},
              {96, 4, {130, 1, 64}, {1, 1, 0}}};  // several 64-token chunks, chunk edges
  std::vector<OpCase> v;
  for (const ConvShape& s : shapes)
    for (DType wt : {DType::F32, DType::BF16}) {
      if (act != DType::F32 && wt != act) continue;
      CaseRng r(uint64_t(s.C * 31 + s.K * 7 + int(s.q.size()) + int(wt) + (decode ? 500 : 0)));
      Batch b = make_batch(r, s.q, s.init);
      const int T = b.qsl.back();
      OpCase c;
      c.op = decode ? Op::GDN_CONV_DECODE : Op::GDN_CONV;
      c.name = fmt::format("C={} K={} q={} w={}", s.C, s.K, lens_str(s.q, s.init), dtype_name(wt));
      c.tol = default_tolerance(act);
      // x is a strided view (the conv input is the leading columns of a wider projection).
      c.tensors = {CaseRng::filled(act, {T, s.C}, kNaN), r.tensor(act, {T, s.C + 5}, -2, 2),
                   r.tensor(wt, {s.C, s.K}, -0.7, 0.7), r.tensor(DType::F32, {b.num_slots, s.K - 1, s.C}, -2, 2),
                   r.ints(b.qsl, {int64_t(b.qsl.size())}), r.ints(b.slots, {int64_t(b.slots.size())}),
                   r.ints(b.init, {int64_t(b.init.size())})};
      c.outputs = {0, 3};
      const int C = s.C, max_q = b.max_q;
      c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
        CausalConv1dArgs a;
        a.out = t[0];
        a.x = t[1].slice(1, 0, C);
        a.weight = t[2];
        a.conv_state = t[3];
        a.query_start_loc = t[4];
        a.state_slots = t[5];
        a.has_initial_state = t[6];
        a.silu = true;
        a.max_q_len = max_q;
        a.host_query_start_loc = b.qsl;
        a.host_state_slots = b.slots;
        a.host_has_initial_state = b.init;
        sink(a.desc(decode ? Op::GDN_CONV_DECODE : Op::GDN_CONV), &a);
      };
      v.push_back(std::move(c));
    }
  return v;
}

struct RuleShape { int Hk, Hv, Dk, Dv; std::vector<int> q, init; };

std::vector<OpCase> rule_cases(DType act, bool decode) {
  std::vector<RuleShape> shapes;
  if (decode)
    shapes = {{1, 1, 16, 16, {1}, {1}},          {2, 4, 32, 32, {1, 1, 1}, {1, 0, 1}},
              {3, 3, 13, 7, {1, 1}, {0, 1}},      {4, 8, 128, 128, {1, 1}, {1, 1}},
              {2, 6, 64, 96, {1, 1, 1, 1}, {1, 1, 0, 1}}};
  else
    shapes = {{1, 1, 16, 16, {5}, {0}},           {2, 4, 16, 16, {7, 1, 13}, {0, 1, 1}},
              {2, 4, 32, 24, {65, 3}, {1, 0}},     {1, 3, 13, 7, {130}, {1}},
              {4, 8, 128, 128, {70, 1}, {0, 1}},   {2, 2, 64, 64, {64, 128, 2}, {1, 0, 1}},
              {1, 2, 96, 32, {200}, {0}}};
  std::vector<OpCase> v;
  for (const RuleShape& s : shapes) {
    CaseRng r(uint64_t(s.Hk * 131 + s.Hv * 17 + s.Dk * 3 + s.Dv + int(s.q.size()) + (decode ? 900 : 0)));
    Batch b = make_batch(r, s.q, s.init);
    const int T = b.qsl.back();
    const int qkv_w = 2 * s.Hk * s.Dk + s.Hv * s.Dv;
    OpCase c;
    c.op = decode ? Op::GDN_RULE_DECODE : Op::GDN_RULE;
    c.name = fmt::format("Hk={} Hv={} Dk={} Dv={} q={}", s.Hk, s.Hv, s.Dk, s.Dv, lens_str(s.q, s.init));
    c.tol = std::max(1e-4, default_tolerance(act));
    // Realistic ranges: A = exp(A_log) in (0.1, 16), dt_bias around 1, state entries O(1).
    c.tensors = {CaseRng::filled(act, {T, s.Hv, s.Dv}, kNaN), r.tensor(act, {T, qkv_w}, -1, 1),
                 r.tensor(act, {T, 2 * s.Hv}, -3, 3),       r.tensor(DType::F32, {s.Hv}, -2.3, 2.7),
                 r.tensor(DType::F32, {s.Hv}, 0, 2),
                 r.tensor(DType::F32, {b.num_slots, s.Hv, s.Dk, s.Dv}, -1, 1),
                 r.ints(b.qsl, {int64_t(b.qsl.size())}), r.ints(b.slots, {int64_t(b.slots.size())}),
                 r.ints(b.init, {int64_t(b.init.size())})};
    c.outputs = {0, 5};
    const RuleShape sh = s;
    c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
      GatedDeltaRuleArgs a;
      a.out = t[0];
      a.q = heads(t[1], 0, sh.Hk, sh.Dk);
      a.k = heads(t[1], int64_t(sh.Hk) * sh.Dk, sh.Hk, sh.Dk);
      a.v = heads(t[1], 2 * int64_t(sh.Hk) * sh.Dk, sh.Hv, sh.Dv);
      a.b = t[2].slice(1, 0, sh.Hv);
      a.a = t[2].slice(1, sh.Hv, sh.Hv);
      a.A_log = t[3];
      a.dt_bias = t[4];
      a.state = t[5];
      a.query_start_loc = t[6];
      a.state_slots = t[7];
      a.has_initial_state = t[8];
      a.scale = float(1.0 / std::sqrt(double(sh.Dk)));
      a.max_q_len = b.max_q;
      a.host_query_start_loc = b.qsl;
      a.host_state_slots = b.slots;
      a.host_has_initial_state = b.init;
      sink(a.desc(decode ? Op::GDN_RULE_DECODE : Op::GDN_RULE), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> gated_norm_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, H, D] : {std::tuple{1, 1, 13}, {5, 4, 16}, {7, 3, 128}, {13, 32, 128}}) {
    for (DType wt : {DType::F32, DType::BF16}) {
      if (act != DType::F32 && wt != act) continue;
      CaseRng r(uint64_t(T * 7 + H * 3 + D + int(wt)));
      OpCase c;
      c.op = Op::GATED_RMS_NORM;
      c.name = fmt::format("T={} H={} D={} w={}", T, H, D, dtype_name(wt));
      c.tol = default_tolerance(act);
      // x: [T, H, D] contiguous; z: the tail columns of a wider projection row.
      c.tensors = {CaseRng::filled(act, {T, H, D}, kNaN), r.tensor(act, {T, H, D}, -2, 2),
                   r.tensor(act, {T, H * D + 9}, -4, 4), r.tensor(wt, {D}, 0.5, 1.5)};
      c.outputs = {0};
      const int64_t h = H, d = D;
      c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
        GatedRmsNormArgs a{t[0], t[1], heads(t[2], 9, h, d), t[3], 1e-6f, 0.f};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  return v;
}

std::vector<OpCase> sigmoid_mul_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, H, D] : {std::tuple{1, 1, 7}, {5, 4, 32}, {13, 16, 256}, {3, 24, 256}}) {
    CaseRng r(uint64_t(T * 11 + H + D));
    OpCase c;
    c.op = Op::SIGMOID_MUL;
    c.name = fmt::format("T={} H={} D={}", T, H, D);
    c.tol = default_tolerance(act);
    // Gated attention: per head, q_proj produces [query (D) | gate (D)]; the gate is a strided view.
    c.tensors = {CaseRng::filled(act, {T, H, D}, kNaN), r.tensor(act, {T, H, D}, -2, 2),
                 r.tensor(act, {T, H * 2 * D}, -6, 6)};
    c.outputs = {0};
    const int64_t h = H, d = D;
    c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
      Tensor gate = heads(t[2], d, h, d);
      gate.strides[1] = 2 * d;
      SigmoidMulArgs a{t[0], t[1], gate};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  // One gate per row (the shared-expert gate): gate [T, 1], in place on x.
  for (auto [T, H] : {std::pair{1, 13}, {7, 64}, {13, 2048}}) {
    CaseRng r(uint64_t(T * 5 + H + 77));
    OpCase c;
    c.op = Op::SIGMOID_MUL;
    c.name = fmt::format("T={} H={} per-row gate, in place", T, H);
    c.tol = default_tolerance(act);
    c.tensors = {r.tensor(act, {T, H}, -2, 2), r.tensor(act, {T, 1}, -6, 6)};
    c.outputs = {0};
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      SigmoidMulArgs a{t[0], t[0], t[1]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_hybrid_cases() {
  register_case_generator(Op::GDN_CONV, [](DType d) { return conv_cases(d, false); });
  register_case_generator(Op::GDN_CONV_DECODE, [](DType d) { return conv_cases(d, true); });
  register_case_generator(Op::GDN_RULE, [](DType d) { return rule_cases(d, false); });
  register_case_generator(Op::GDN_RULE_DECODE, [](DType d) { return rule_cases(d, true); });
  register_case_generator(Op::GATED_RMS_NORM, gated_norm_cases);
  register_case_generator(Op::SIGMOID_MUL, sigmoid_mul_cases);
}

}  // namespace portllm::conformance
