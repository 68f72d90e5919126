// CPU kernels for the cheap per-row ops on f32 activations: embedding, RMSNorm (plain and fused
// with the residual add), RoPE, the attention preparation (q/k norm + RoPE + KV write in one pass
// over each token's heads), SiLU-and-mul, add, argmax, and the token feed of a step's inputs. Rows
// are spread over the thread pool.
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/simd.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
float* row(const Tensor& t, int64_t r) { return t.ptr<float>() + t.row_offset(r); }

void embed(const EmbedArgs& a, Stream&) {
  const int64_t H = a.out.size(1), V = a.table.size(0);
  const size_t es = dtype_size(a.table.dtype);
  ThreadPool::global().parallel_for(a.out.size(0), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const int32_t id = a.ids.ptr<int32_t>()[t];
      if (id < 0 || id >= V) { std::memset(row(a.out, t), 0, size_t(H) * 4); continue; }
      widen(a.table.dtype, static_cast<const char*>(a.table.data) + id * a.table.strides[0] * int64_t(es), row(a.out, t), H);
    }
  }, grain_for(4 * H));
}

void norm_row(float* out, const float* x, const float* w, int64_t D, float eps, float off) {
  double ss = 0;
  for (int64_t j = 0; j < D; ++j) ss += double(x[j]) * x[j];
  const float inv = float(1.0 / std::sqrt(ss / double(D) + eps));
  for (int64_t j = 0; j < D; ++j) out[j] = x[j] * inv * (off + w[j]);
}

template <class Fn>
void with_f32_weight(const Tensor& w, Fn fn) {
  if (w.dtype == DType::F32) return fn(w.ptr<float>());
  std::vector<float> tmp(static_cast<size_t>(w.numel()));
  widen(w.dtype, w.data, tmp.data(), w.numel());
  fn(tmp.data());
}

void rms_norm(const RmsNormArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  with_f32_weight(a.weight, [&](const float* w) {
    ThreadPool::global().parallel_for(a.x.num_rows(), [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) norm_row(row(a.out, r), row(a.x, r), w, D, a.eps, a.weight_offset);
    }, grain_for(4 * D));
  });
}

void add_rms_norm(const AddRmsNormArgs& a, Stream&) {
  const int64_t D = a.x.size(-1);
  with_f32_weight(a.weight, [&](const float* w) {
    ThreadPool::global().parallel_for(a.x.num_rows(), [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) {
        float* res = row(a.residual, r);
        const float* x = row(a.x, r);
        for (int64_t j = 0; j < D; ++j) res[j] += x[j];
        norm_row(row(a.out, r), res, w, D, a.eps, a.weight_offset);
      }
    }, grain_for(4 * D));
  });
}

// RoPE on one head row: pairs (i, i + half), or (2i, 2i + 1) when interleaved.
void rotate_row(float* v, const float* cs, int half, bool inter) {
  for (int i = 0; i < half; ++i) {
    const int i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
    const float x1 = v[i1], x2 = v[i2], c = cs[i], s = cs[half + i];
    v[i1] = x1 * c - x2 * s;
    v[i2] = x2 * c + x1 * s;
  }
}

void rope(const RopeArgs& a, Stream&) {
  const int half = a.rot_dim / 2;
  auto apply = [&](const Tensor& x) {
    if (!x.defined()) return;
    ThreadPool::global().parallel_for(x.size(0), [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) {
        const float* cs = a.cos_sin.ptr<float>() + int64_t(a.positions.ptr<int32_t>()[t]) * a.cos_sin.strides[0];
        for (int64_t h = 0; h < x.size(1); ++h)
          rotate_row(x.ptr<float>() + t * x.strides[0] + h * x.strides[1], cs, half, a.interleaved);
      }
    }, grain_for(4 * x.size(1) * x.size(2)));
  };
  apply(a.q);
  apply(a.k);
}

void qk_norm_rope_kv_write(const QkNormRopeKvWriteArgs& a, Stream&) {
  const int64_t D = a.q.size(2), Dv = a.v.size(2), page = a.k_cache.size(1);
  const int half = a.rot_dim / 2;
  const size_t es = dtype_size(a.k_cache.dtype);
  const bool norm = a.q_norm.defined();
  std::vector<float> wq, wk;  // f32 copies of the norm weights
  if (norm) {
    wq.resize(size_t(D));
    wk.resize(size_t(D));
    widen(a.q_norm.dtype, a.q_norm.data, wq.data(), D);
    widen(a.k_norm.dtype, a.k_norm.data, wk.data(), D);
  }
  ThreadPool::global().parallel_for(a.q.size(0), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* cs = a.cos_sin.ptr<float>() + int64_t(a.positions.ptr<int32_t>()[t]) * a.cos_sin.strides[0];
      auto prepare = [&](const Tensor& x, const std::vector<float>& w) {
        for (int64_t h = 0; h < x.size(1); ++h) {
          float* v = x.ptr<float>() + t * x.strides[0] + h * x.strides[1];
          if (norm) norm_row(v, v, w.data(), D, a.eps, a.weight_offset);
          rotate_row(v, cs, half, a.interleaved);
        }
      };
      prepare(a.q, wq);
      prepare(a.k, wk);
      const int32_t slot = a.slot_mapping.ptr<int32_t>()[t];
      if (slot < 0) continue;
      for (int64_t h = 0; h < a.k.size(1); ++h) {
        auto put = [&](const Tensor& src, const Tensor& cache, int64_t d) {
          char* dst = static_cast<char*>(cache.data) +
                      ((slot / page) * cache.strides[0] + (slot % page) * cache.strides[1] + h * cache.strides[2]) *
                          int64_t(es);
          convert_from_f32_satfinite(cache.dtype, src.ptr<float>() + t * src.strides[0] + h * src.strides[1], dst,
                                     size_t(d));
        };
        put(a.k, a.k_cache, D);
        put(a.v, a.v_cache, Dv);
      }
    }
  }, grain_for(4 * (a.q.size(1) + a.k.size(1)) * D + a.v.size(1) * Dv));
}

void silu_mul(const SiluMulArgs& a, Stream&) {
  const int64_t I = a.out.size(1);
  ThreadPool::global().parallel_for(a.out.size(0), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = row(a.out, t);
      const float *g = row(a.gate, t), *u = row(a.up, t);
      for (int64_t i = 0; i < I; ++i) o[i] = g[i] / (1.f + std::exp(-g[i])) * u[i];
    }
  }, grain_for(4 * I));
}

void add(const AddArgs& a, Stream&) {
  const int64_t C = a.out.size(1);
  for (int64_t r = 0; r < a.out.size(0); ++r) {
    float* o = row(a.out, r);
    const float *x = row(a.a, r), *y = row(a.b, r);
    for (int64_t c = 0; c < C; ++c) o[c] = x[c] + y[c];
  }
}

void argmax(const ArgmaxArgs& a, Stream&) {
  const int64_t N = a.x.size(1);
  for (int64_t r = 0; r < a.x.size(0); ++r) {
    const float* x = row(a.x, r);
    int64_t best = 0;
    for (int64_t j = 1; j < N; ++j)
      if (x[j] > x[best]) best = j;
    a.out.ptr<int32_t>()[r] = int32_t(best);
  }
}

void token_feed(const TokenFeedArgs& a, Stream&) {
  const int64_t n = a.rows.numel(), R = a.sampled.defined() ? a.sampled.numel() : 0;
  int32_t* out = a.out.ptr<int32_t>();
  std::memcpy(out, a.staged.data, a.out.nbytes());
  for (int64_t i = 0; i < n; ++i)
    if (const int32_t r = a.rows.ptr<int32_t>()[i]; r >= 0 && r < R) out[a.ids_offset + i] = a.sampled.ptr<int32_t>()[r];
}

bool f32_act(const OpDesc& d, const DeviceCaps& c) { return c.avx2 && d.dtype[0] == DType::F32; }
bool f32_act_float_w(const OpDesc& d, const DeviceCaps& c) {
  return f32_act(d, c) && (d.dtype[1] == DType::F32 || d.dtype[1] == DType::BF16 || d.dtype[1] == DType::F16);
}
}  // namespace

void register_pointwise_kernels() {
  const auto C = DeviceKind::CPU;
  auto embed_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return c.avx2 && d.dtype[1] == DType::F32 &&
           (d.dtype[0] == DType::F32 || d.dtype[0] == DType::BF16 || d.dtype[0] == DType::F16);
  };
  register_kernel<EmbedArgs>(Op::EMBED, C, "cpu.embed", 10, embed_ok, embed);
  register_kernel<RmsNormArgs>(Op::RMS_NORM, C, "cpu.rms_norm", 10, f32_act_float_w, rms_norm);
  register_kernel<AddRmsNormArgs>(Op::ADD_RMS_NORM, C, "cpu.add_rms_norm", 10, f32_act_float_w, add_rms_norm);
  register_kernel<RopeArgs>(Op::ROPE, C, "cpu.rope", 10, f32_act, rope);
  auto prep_ok = [](const OpDesc& d, const DeviceCaps& c) {
    auto float_t = [](DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; };
    return f32_act(d, c) && float_t(d.dtype[1]) && (float_t(d.dtype[2]) || d.dtype[2] == DType::F8E4M3);
  };
  register_kernel<QkNormRopeKvWriteArgs>(Op::QK_NORM_ROPE_KV_WRITE, C, "cpu.qk_norm_rope_kv_write", 10, prep_ok,
                                         qk_norm_rope_kv_write);
  register_kernel<SiluMulArgs>(Op::SILU_MUL, C, "cpu.silu_mul", 10, f32_act, silu_mul);
  register_kernel<AddArgs>(Op::ADD, C, "cpu.add", 10, f32_act, add);
  register_kernel<ArgmaxArgs>(Op::ARGMAX, C, "cpu.argmax", 10, f32_act, argmax);
  register_kernel<TokenFeedArgs>(Op::TOKEN_FEED, C, "cpu.token_feed", 10, [](const OpDesc&, const DeviceCaps&) { return true; },
                                 token_feed);
}

}  // namespace portllm::cpu
