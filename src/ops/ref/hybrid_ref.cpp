// Reference: the hybrid-model ops (causal conv1d with state, gated delta rule, gated RMSNorm,
// sigmoid gate) in double precision, one token at a time. The gated delta rule is the plain
// token-by-token recurrence (transformers' torch_recurrent_gated_delta_rule); chunked kernels
// are checked against it.
#include <cmath>
#include <vector>

#include "ops/op_args_hybrid.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;

double at_off(const Tensor& t, int64_t off) { return load(t.dtype, t.data, off); }
double vec(const Tensor& t, int64_t i) { return load(t.dtype, t.data, i * t.strides[0]); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }  // torch's threshold 20

void causal_conv1d(const CausalConv1dArgs& a, Stream&) {
  const int64_t B = a.query_start_loc.size(0) - 1, C = a.x.size(1), K = a.weight.size(1);
  const Tensor& st = a.conv_state;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = idx(a.query_start_loc, b), n = idx(a.query_start_loc, b + 1) - q0;
    const int64_t slot = idx(a.state_slots, b);
    const bool init = idx(a.has_initial_state, b) != 0;
    // The sequence's input extended on the left by K-1 carried (or zero) steps.
    std::vector<double> ext(size_t((K - 1 + n) * C), 0.0);
    if (init)
      for (int64_t j = 0; j < K - 1; ++j)
        for (int64_t c = 0; c < C; ++c)
          ext[size_t(j * C + c)] = at_off(st, slot * st.strides[0] + j * st.strides[1] + c * st.strides[2]);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < C; ++c) ext[size_t((K - 1 + t) * C + c)] = at(a.x, q0 + t, c);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        for (int64_t j = 0; j < K; ++j) s += at(a.weight, c, j) * ext[size_t((t + j) * C + c)];
        put(a.out, q0 + t, c, a.silu ? silu(s) : s);
      }
    for (int64_t j = 0; j < K - 1; ++j)
      for (int64_t c = 0; c < C; ++c)
        store(st.dtype, st.data, slot * st.strides[0] + j * st.strides[1] + c * st.strides[2],
              ext[size_t((n + j) * C + c)]);
  }
}

void gated_delta_rule(const GatedDeltaRuleArgs& a, Stream&) {
  const int64_t B = a.query_start_loc.size(0) - 1;
  const int64_t Hk = a.q.size(1), Dk = a.q.size(2), Hv = a.v.size(1), Dv = a.v.size(2);
  const int64_t r = Hv / Hk;
  const Tensor& st = a.state;
  auto s_off = [&](int64_t slot, int64_t h, int64_t i, int64_t j) {
    return slot * st.strides[0] + h * st.strides[1] + i * st.strides[2] + j * st.strides[3];
  };
  std::vector<double> S(static_cast<size_t>(Dk * Dv)), q(static_cast<size_t>(Dk)), k(static_cast<size_t>(Dk)), kv(static_cast<size_t>(Dv));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = idx(a.query_start_loc, b), n = idx(a.query_start_loc, b + 1) - q0;
    const int64_t slot = idx(a.state_slots, b);
    const bool init = idx(a.has_initial_state, b) != 0;
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t kh = h / r;
      for (int64_t i = 0; i < Dk; ++i)
        for (int64_t j = 0; j < Dv; ++j) S[size_t(i * Dv + j)] = init ? at_off(st, s_off(slot, h, i, j)) : 0.0;
      const double A = std::exp(vec(a.A_log, h)), dt = vec(a.dt_bias, h);
      for (int64_t t = q0; t < q0 + n; ++t) {
        double qq = 0, kk = 0;
        for (int64_t i = 0; i < Dk; ++i) {
          q[size_t(i)] = at(a.q, t, kh, i);
          k[size_t(i)] = at(a.k, t, kh, i);
          qq += q[size_t(i)] * q[size_t(i)];
          kk += k[size_t(i)] * k[size_t(i)];
        }
        const double qn = a.l2norm_qk ? 1.0 / std::sqrt(qq + 1e-6) : 1.0;
        const double kn = a.l2norm_qk ? 1.0 / std::sqrt(kk + 1e-6) : 1.0;
        for (int64_t i = 0; i < Dk; ++i) {
          q[size_t(i)] *= qn * a.scale;
          k[size_t(i)] *= kn;
        }
        const double beta = 1.0 / (1.0 + std::exp(-at(a.b, t, h)));
        const double decay = std::exp(-A * softplus(at(a.a, t, h) + dt));
        for (auto& s : S) s *= decay;
        for (int64_t j = 0; j < Dv; ++j) {
          double m = 0;
          for (int64_t i = 0; i < Dk; ++i) m += S[size_t(i * Dv + j)] * k[size_t(i)];
          kv[size_t(j)] = beta * (at(a.v, t, h, j) - m);
        }
        for (int64_t i = 0; i < Dk; ++i)
          for (int64_t j = 0; j < Dv; ++j) S[size_t(i * Dv + j)] += k[size_t(i)] * kv[size_t(j)];
        for (int64_t j = 0; j < Dv; ++j) {
          double o = 0;
          for (int64_t i = 0; i < Dk; ++i) o += S[size_t(i * Dv + j)] * q[size_t(i)];
          put(a.out, t, h, j, o);
        }
      }
      for (int64_t i = 0; i < Dk; ++i)
        for (int64_t j = 0; j < Dv; ++j) store(st.dtype, st.data, s_off(slot, h, i, j), S[size_t(i * Dv + j)]);
    }
  }
}

void gated_rms_norm(const GatedRmsNormArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  for (int64_t r = 0; r < a.x.num_rows(); ++r) {
    const int64_t xo = a.x.row_offset(r), zo = a.z.row_offset(r), oo = a.out.row_offset(r);
    double ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += at_off(a.x, xo + j) * at_off(a.x, xo + j);
    const double inv = 1.0 / std::sqrt(ss / double(D) + a.eps);
    for (int64_t j = 0; j < D; ++j) {
      const double w = a.weight_offset + load(a.weight.dtype, a.weight.data, j);
      store(a.out.dtype, a.out.data, oo + j, at_off(a.x, xo + j) * inv * w * silu(at_off(a.z, zo + j)));
    }
  }
}

void sigmoid_mul(const SigmoidMulArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  for (int64_t r = 0; r < a.x.num_rows(); ++r) {
    const int64_t xo = a.x.row_offset(r), go = a.gate.row_offset(r), oo = a.out.row_offset(r);
    const bool per_row = a.gate.size(-1) == 1;
    for (int64_t j = 0; j < D; ++j)
      store(a.out.dtype, a.out.data, oo + j,
            at_off(a.x, xo + j) / (1.0 + std::exp(-at_off(a.gate, go + (per_row ? 0 : j)))));
  }
}
}  // namespace

void register_hybrid_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  const auto C = DeviceKind::CPU;
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV, C, "ref.causal_conv1d", P, any, causal_conv1d);
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV_DECODE, C, "ref.causal_conv1d", P, any, causal_conv1d);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE, C, "ref.gated_delta_rule", P, any, gated_delta_rule);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE_DECODE, C, "ref.gated_delta_rule", P, any, gated_delta_rule);
  register_kernel<GatedRmsNormArgs>(Op::GATED_RMS_NORM, C, "ref.gated_rms_norm", P, any, gated_rms_norm);
  register_kernel<SigmoidMulArgs>(Op::SIGMOID_MUL, C, "ref.sigmoid_mul", P, any, sigmoid_mul);
}

}  // namespace portllm::ref
