// CPU kernels for the hybrid-model ops on f32 activations and f32 state.
// - causal conv1d: (sequence, 64-channel block) work items; the window for early tokens reads
//   the carried state (or zeros), the state is read fully before it is overwritten.
// - gated delta rule: (sequence, value head) work items. Decode (and 1-token sequences) run the
//   recurrence directly on the slot's state: two passes over the [Dk, Dv] state per token.
//   Longer sequences use the chunked (WY / UT-transform) form in chunks of 64 tokens, so the
//   work is GEMMs (OpenBLAS, single-threaded per item):
//     with G_i = exp(cumsum of g up to i within the chunk) and S0 the state at the chunk start,
//     delta solves  delta_i + beta_i sum_{j<i} (G_i/G_j) (k_i.k_j) delta_j = beta_i (v_i - G_i S0^T k_i)
//     out_i = G_i S0^T q_i + sum_{j<=i} (G_i/G_j) (q_i.k_j) delta_j
//     S_end = G_L S0 + sum_j (G_L/G_j) k_j delta_j^T
//   which is the token recurrence S_i = e^{g_i} S_{i-1} + k_i delta_i^T unrolled over the chunk.
// - gated RMSNorm and the sigmoid gate: rows over the thread pool.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/simd.h"
#include "core/thread_pool.h"
#include "ops/op_args_hybrid.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
constexpr int64_t kChunk = 64;
constexpr int64_t kConvBlock = 64;

inline float silu(float x) { return x / (1.f + std::exp(-x)); }
inline float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }
inline float scalar(const Tensor& t, int64_t i) {
  float v;
  widen(t.dtype, static_cast<const char*>(t.data) + i * t.strides[0] * int64_t(dtype_size(t.dtype)), &v, 1);
  return v;
}

void causal_conv1d(const CausalConv1dArgs& a, Stream&) {
  const int64_t B = int64_t(a.host_state_slots.size()), C = a.x.size(1), K = a.weight.size(1);
  const int64_t blocks = (C + kConvBlock - 1) / kConvBlock;
  const auto& qsl = a.host_query_start_loc;
  const Tensor& st = a.conv_state;
  ThreadPool::global().parallel_for(B * blocks, [&](int64_t w0, int64_t w1, int) {
    std::vector<float> wf(size_t(kConvBlock * K)), hist(size_t((K - 1) * kConvBlock)), last(size_t((K - 1) * kConvBlock));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / blocks, c0 = (w % blocks) * kConvBlock, nc = std::min(kConvBlock, C - c0);
      const int64_t q0 = qsl[size_t(b)], n = qsl[size_t(b) + 1] - q0;
      const int64_t slot = a.host_state_slots[size_t(b)];
      float* sp = st.ptr<float>() + slot * st.strides[0] + c0;
      // Weights of this channel block, transposed to [K][nc] so the inner loop runs over channels.
      for (int64_t c = 0; c < nc; ++c) {
        float row[16];
        widen(a.weight.dtype, static_cast<const char*>(a.weight.data) + (c0 + c) * a.weight.strides[0] * int64_t(dtype_size(a.weight.dtype)), row, K);
        for (int64_t j = 0; j < K; ++j) wf[size_t(j * nc + c)] = row[j];
      }
      for (int64_t j = 0; j < K - 1; ++j) {
        float* h = hist.data() + j * nc;
        if (a.host_has_initial_state[size_t(b)]) std::memcpy(h, sp + j * st.strides[1], size_t(nc) * 4);
        else std::memset(h, 0, size_t(nc) * 4);
      }
      // input(p) for p in [-(K-1), n): history for p < 0, else x rows.
      auto input = [&](int64_t p) -> const float* {
        return p < 0 ? hist.data() + (K - 1 + p) * nc : a.x.ptr<float>() + (q0 + p) * a.x.strides[0] + c0;
      };
      for (int64_t t = 0; t < n; ++t) {
        float* o = a.out.ptr<float>() + (q0 + t) * a.out.strides[0] + c0;
        for (int64_t c = 0; c < nc; ++c) o[c] = 0.f;
        for (int64_t j = 0; j < K; ++j) {
          const float* in = input(t - (K - 1) + j);
          const float* wj = wf.data() + j * nc;
          for (int64_t c = 0; c < nc; ++c) o[c] += wj[c] * in[c];
        }
        if (a.silu)
          for (int64_t c = 0; c < nc; ++c) o[c] = silu(o[c]);
      }
      // New state: the last K-1 inputs (history included when n < K-1), gathered before the slot
      // is overwritten because they may come from the old state.
      for (int64_t j = 0; j < K - 1; ++j) std::memcpy(last.data() + j * nc, input(n - (K - 1) + j), size_t(nc) * 4);
      for (int64_t j = 0; j < K - 1; ++j) std::memcpy(sp + j * st.strides[1], last.data() + j * nc, size_t(nc) * 4);
    }
  });
}

// Per-(sequence, head) inputs of the rule, normalized as the op defines.
struct RuleIo {
  const GatedDeltaRuleArgs& a;
  int64_t Dk, Dv, r;
  float A;
  float dt;
  int64_t h;
  void qk(int64_t t, float* q, float* k) const {
    const int64_t kh = h / r;
    const float* qs = a.q.ptr<float>() + t * a.q.strides[0] + kh * a.q.strides[1];
    const float* ks = a.k.ptr<float>() + t * a.k.strides[0] + kh * a.k.strides[1];
    float qq = 0.f, kk = 0.f;
    for (int64_t i = 0; i < Dk; ++i) {
      qq += qs[i] * qs[i];
      kk += ks[i] * ks[i];
    }
    const float qn = (a.l2norm_qk ? 1.f / std::sqrt(qq + 1e-6f) : 1.f) * a.scale;
    const float kn = a.l2norm_qk ? 1.f / std::sqrt(kk + 1e-6f) : 1.f;
    for (int64_t i = 0; i < Dk; ++i) {
      q[i] = qs[i] * qn;
      k[i] = ks[i] * kn;
    }
  }
  const float* v(int64_t t) const { return a.v.ptr<float>() + t * a.v.strides[0] + h * a.v.strides[1]; }
  float* out(int64_t t) const { return a.out.ptr<float>() + t * a.out.strides[0] + h * a.out.strides[1]; }
  float beta(int64_t t) const { return 1.f / (1.f + std::exp(-a.b.ptr<float>()[t * a.b.strides[0] + h])); }
  float g(int64_t t) const { return -A * softplus(a.a.ptr<float>()[t * a.a.strides[0] + h] + dt); }
};

// One token of the recurrence on S [Dk, Dv] (row stride ld).
void recurrent_step(const RuleIo& io, int64_t t, float* S, int64_t ld, float* q, float* k, float* kv) {
  const int64_t Dk = io.Dk, Dv = io.Dv;
  io.qk(t, q, k);
  const float decay = std::exp(io.g(t)), beta = io.beta(t);
  std::fill(kv, kv + Dv, 0.f);
  for (int64_t i = 0; i < Dk; ++i) {
    const float ki = k[i];
    const float* s = S + i * ld;
    for (int64_t j = 0; j < Dv; ++j) kv[j] += ki * s[j];
  }
  const float* v = io.v(t);
  for (int64_t j = 0; j < Dv; ++j) kv[j] = beta * (v[j] - decay * kv[j]);
  float* o = io.out(t);
  std::fill(o, o + Dv, 0.f);
  for (int64_t i = 0; i < Dk; ++i) {
    const float ki = k[i], qi = q[i];
    float* s = S + i * ld;
    for (int64_t j = 0; j < Dv; ++j) {
      s[j] = decay * s[j] + ki * kv[j];
      o[j] += qi * s[j];
    }
  }
}

struct ChunkScratch {
  std::vector<float> Q, Kx, V, KK, QK, rhs, gc, bt, tmp;
  void size(int64_t Dk, int64_t Dv) {
    Q.resize(size_t(kChunk * Dk));
    Kx.resize(size_t(kChunk * Dk));
    V.resize(size_t(kChunk * Dv));
    KK.resize(size_t(kChunk * kChunk));
    QK.resize(size_t(kChunk * kChunk));
    rhs.resize(size_t(kChunk * Dv));
    gc.resize(size_t(kChunk));
    bt.resize(size_t(kChunk));
    tmp.resize(size_t(kChunk * std::max(Dk, Dv)));
  }
};

// One chunk of L tokens starting at row t0, state S [Dk, Dv] (row stride ld) updated in place.
void chunk_step(const RuleIo& io, int64_t t0, int64_t L, float* S, int64_t ld, ChunkScratch& w) {
  const int64_t Dk = io.Dk, Dv = io.Dv;
  float *Q = w.Q.data(), *Kx = w.Kx.data(), *V = w.V.data(), *KK = w.KK.data(), *QK = w.QK.data();
  float *rhs = w.rhs.data(), *gc = w.gc.data(), *bt = w.bt.data(), *tmp = w.tmp.data();
  float acc = 0.f;
  for (int64_t i = 0; i < L; ++i) {
    io.qk(t0 + i, Q + i * Dk, Kx + i * Dk);
    std::memcpy(V + i * Dv, io.v(t0 + i), size_t(Dv) * 4);
    acc += io.g(t0 + i);
    gc[i] = acc;
    bt[i] = io.beta(t0 + i);
  }
  // KK = K K^T, QK = Q K^T (only the lower triangles are used).
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(L), int(L), int(Dk), 1.f, Kx, int(Dk), Kx, int(Dk), 0.f, KK, int(L));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(L), int(L), int(Dk), 1.f, Q, int(Dk), Kx, int(Dk), 0.f, QK, int(L));
  // rhs = beta_i v_i - beta_i G_i (S0^T k_i): tmp = K S0 first.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(L), int(Dv), int(Dk), 1.f, Kx, int(Dk), S, int(ld), 0.f, tmp, int(Dv));
  for (int64_t i = 0; i < L; ++i) {
    const float G = std::exp(gc[i]);
    for (int64_t j = 0; j < Dv; ++j) rhs[i * Dv + j] = bt[i] * (V[i * Dv + j] - G * tmp[i * Dv + j]);
  }
  // Forward substitution (unit lower-triangular system): rhs becomes delta.
  for (int64_t i = 1; i < L; ++i) {
    float* di = rhs + i * Dv;
    for (int64_t j = 0; j < i; ++j) {
      const float m = bt[i] * std::exp(gc[i] - gc[j]) * KK[i * L + j];
      const float* dj = rhs + j * Dv;
      for (int64_t c = 0; c < Dv; ++c) di[c] -= m * dj[c];
    }
  }
  // out = diag(G) Q S0 + (QK o decay, lower incl. diagonal) delta.
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) QK[i * L + j] = j <= i ? QK[i * L + j] * std::exp(gc[i] - gc[j]) : 0.f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(L), int(Dv), int(Dk), 1.f, Q, int(Dk), S, int(ld), 0.f, tmp, int(Dv));
  for (int64_t i = 0; i < L; ++i) {
    const float G = std::exp(gc[i]);
    for (int64_t j = 0; j < Dv; ++j) tmp[i * Dv + j] *= G;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(L), int(Dv), int(L), 1.f, QK, int(L), rhs, int(Dv), 1.f, tmp, int(Dv));
  for (int64_t i = 0; i < L; ++i) std::memcpy(io.out(t0 + i), tmp + i * Dv, size_t(Dv) * 4);
  // S = G_L S0 + (diag(G_L / G_j) K)^T delta.
  const float gl = gc[L - 1];
  for (int64_t i = 0; i < L; ++i) {
    const float f = std::exp(gl - gc[i]);
    for (int64_t c = 0; c < Dk; ++c) Kx[i * Dk + c] *= f;
  }
  const float GL = std::exp(gl);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(Dk), int(Dv), int(L), 1.f, Kx, int(Dk), rhs, int(Dv), GL, S, int(ld));
}

void gated_delta_rule(const GatedDeltaRuleArgs& a, Stream&) {
  const int64_t B = int64_t(a.host_state_slots.size());
  const int64_t Hk = a.q.size(1), Dk = a.q.size(2), Hv = a.v.size(1), Dv = a.v.size(2);
  const auto& qsl = a.host_query_start_loc;
  const Tensor& st = a.state;
  ThreadPool::global().parallel_for(B * Hv, [&](int64_t w0, int64_t w1, int) {
    std::vector<float> q(static_cast<size_t>(Dk)), k(static_cast<size_t>(Dk)), kv(static_cast<size_t>(Dv));
    ChunkScratch scratch;
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / Hv, h = w % Hv;
      const int64_t q0 = qsl[size_t(b)], n = qsl[size_t(b) + 1] - q0;
      float* S = st.ptr<float>() + a.host_state_slots[size_t(b)] * st.strides[0] + h * st.strides[1];
      const int64_t ld = st.strides[2];
      if (!a.host_has_initial_state[size_t(b)])
        for (int64_t i = 0; i < Dk; ++i) std::fill(S + i * ld, S + i * ld + Dv, 0.f);
      RuleIo io{a, Dk, Dv, Hv / Hk, std::exp(scalar(a.A_log, h)), scalar(a.dt_bias, h), h};
      if (n == 1) {
        recurrent_step(io, q0, S, ld, q.data(), k.data(), kv.data());
        continue;
      }
      scratch.size(Dk, Dv);
      for (int64_t c0 = 0; c0 < n; c0 += kChunk) chunk_step(io, q0 + c0, std::min(kChunk, n - c0), S, ld, scratch);
    }
  });
}

void gated_rms_norm(const GatedRmsNormArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  std::vector<float> w(static_cast<size_t>(D));
  widen(a.weight.dtype, a.weight.data, w.data(), D);
  for (auto& x : w) x += a.weight_offset;
  ThreadPool::global().parallel_for(a.x.num_rows(), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = a.x.ptr<float>() + a.x.row_offset(r);
      const float* z = a.z.ptr<float>() + a.z.row_offset(r);
      float* o = a.out.ptr<float>() + a.out.row_offset(r);
      double ss = 0;
      for (int64_t j = 0; j < D; ++j) ss += double(x[j]) * x[j];
      const float inv = float(1.0 / std::sqrt(ss / double(D) + a.eps));
      for (int64_t j = 0; j < D; ++j) o[j] = x[j] * inv * w[size_t(j)] * silu(z[j]);
    }
  }, 8);
}

void sigmoid_mul(const SigmoidMulArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  ThreadPool::global().parallel_for(a.x.num_rows(), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = a.x.ptr<float>() + a.x.row_offset(r);
      const float* g = a.gate.ptr<float>() + a.gate.row_offset(r);
      float* o = a.out.ptr<float>() + a.out.row_offset(r);
      if (a.gate.size(-1) == 1) {
        const float s = 1.f / (1.f + std::exp(-g[0]));
        for (int64_t j = 0; j < D; ++j) o[j] = x[j] * s;
      } else {
        for (int64_t j = 0; j < D; ++j) o[j] = x[j] / (1.f + std::exp(-g[j]));
      }
    }
  }, 8);
}

bool float_w(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }
}  // namespace

void register_hybrid_kernels() {
  const auto C = DeviceKind::CPU;
  auto conv_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return c.avx2 && d.dtype[0] == DType::F32 && float_w(d.dtype[1]) && d.dtype[2] == DType::F32 && d.dim[1] <= 16;
  };
  auto rule_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return c.avx2 && d.dtype[0] == DType::F32 && d.dtype[1] == DType::F32 && d.dtype[2] == DType::F32;
  };
  auto norm_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return c.avx2 && d.dtype[0] == DType::F32 && float_w(d.dtype[1]);
  };
  auto act_ok = [](const OpDesc& d, const DeviceCaps& c) { return c.avx2 && d.dtype[0] == DType::F32; };
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV, C, "cpu.causal_conv1d", 10, conv_ok, causal_conv1d);
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV_DECODE, C, "cpu.causal_conv1d", 10, conv_ok, causal_conv1d);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE, C, "cpu.gdn_rule_chunked", 10, rule_ok, gated_delta_rule);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE_DECODE, C, "cpu.gdn_rule_recurrent", 10, rule_ok, gated_delta_rule);
  register_kernel<GatedRmsNormArgs>(Op::GATED_RMS_NORM, C, "cpu.gated_rms_norm", 10, norm_ok, gated_rms_norm);
  register_kernel<SigmoidMulArgs>(Op::SIGMOID_MUL, C, "cpu.sigmoid_mul", 10, act_ok, sigmoid_mul);
}

}  // namespace portllm::cpu
