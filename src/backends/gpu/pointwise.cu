// Row-wise and elementwise kernels: embedding / row gather, RMSNorm (plain and fused with the
// residual add; 2-D rows or 3-D strided head views), RoPE, SiLU-and-mul, add, argmax, softmax,
// plus the dtype conversion and bias broadcast the matmul path uses. Math is in float whatever
// the storage dtype; rounding points match the reference kernels (ops/ref).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

RowsDesc rows_of(const Tensor& t) {
  if (t.ndim <= 1) return {1, t.ndim == 1 ? t.shape[0] : 1, 0};
  if (t.ndim == 2) return {1, t.strides[0], 0};
  if (t.ndim == 3) return {t.shape[1], t.strides[0], t.strides[1]};
  if (t.is_contiguous()) return {1, t.shape[t.ndim - 1], 0};
  fail("row op on a strided tensor of more than 3 dims");
}

namespace {
constexpr auto kKind = kGpuKind;

Rows to_rows(const Tensor& t) {
  RowsDesc d = rows_of(t);
  return Rows{d.n1, d.s0, d.s1};
}
gpuStream_t st(Stream& s) { return native_stream(s); }
unsigned grid_for(int64_t n, int threads) { return unsigned(std::min<int64_t>((n + threads - 1) / threads, 65535 * 8)); }

// ---- embedding / row gather ----
template <class TT, class TO>
__global__ void embed_kernel(TO* out, int64_t out_ld, const TT* table, int64_t table_ld, const int32_t* ids,
                             int64_t V, int64_t H) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  const bool ok = id >= 0 && id < V;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
    out[t * out_ld + h] = cvt<TO>(ok ? ld(table, int64_t(id) * table_ld + h) : 0.f);
}

void embed(const EmbedArgs& a, Stream& s) {
  const int64_t T = a.out.size(0), H = a.out.size(1);
  if (T == 0) return;
  dispatch_float(a.table.dtype, [&](auto tt) {
    dispatch_float(a.out.dtype, [&](auto to) {
      using TT = typename decltype(tt)::type;
      using TO = typename decltype(to)::type;
      embed_kernel<TT, TO><<<unsigned(T), 256, 0, st(s)>>>(a.out.ptr<TO>(), a.out.strides[0], a.table.ptr<TT>(),
                                                           a.table.strides[0], a.ids.ptr<int32_t>(), a.table.size(0), H);
    });
  });
  check_launch("embed");
}

// ---- RMSNorm ----
// One block per row. fused: residual = round(residual + x) first, as the reference does.
// Rows wider than 8192: a loop over the row (twice).
template <class TA, class TW, bool kFused>
__global__ void rms_norm_kernel(TA* out, Rows ro, const TA* x, Rows rx, TA* res, Rows rr, const TW* w, int64_t D,
                                float eps, float offset) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  const TA* xr = x + rx.off(r);
  TA* orow = out + ro.off(r);
  TA* rrow = kFused ? res + rr.off(r) : nullptr;
  float ss = 0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    float v = ld(xr, j);
    if (kFused) {
      TA sum = cvt<TA>(ld(rrow, j) + v);
      rrow[j] = sum;
      v = ld(&sum, 0);
    }
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss, red) / float(D) + eps);
  const TA* src = kFused ? rrow : xr;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) orow[j] = cvt<TA>(ld(src, j) * inv * (offset + ld(w, j)));
}

// The row held in registers: each thread loads its EPT elements (threads apart, so a warp's
// loads coalesce) before anything is stored, so all of a row's loads are in flight at once; a
// load-store loop serializes on possible aliasing between x and the residual and made a 4096-wide
// decode row take ~7 us instead of ~2.
template <class TA, class TW, bool kFused, int EPT>
__global__ void rms_norm_reg_kernel(TA* out, Rows ro, const TA* x, Rows rx, TA* res, Rows rr, const TW* w, int D,
                                    float eps, float offset) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  const TA* xr = x + rx.off(r);
  TA* orow = out + ro.off(r);
  TA* rrow = kFused ? res + rr.off(r) : nullptr;
  float v[EPT];
#pragma unroll
  for (int k = 0; k < EPT; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    v[k] = j < D ? ld(xr, j) : 0.f;
    if (kFused && j < D) v[k] += ld(rrow, j);
  }
  float ss = 0;
#pragma unroll
  for (int k = 0; k < EPT; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    if (kFused && j < D) {
      const TA sum = cvt<TA>(v[k]);  // the residual stream keeps the activation dtype
      rrow[j] = sum;
      v[k] = ld(&sum, 0);
    }
    ss += v[k] * v[k];
  }
  const float inv = rsqrtf(block_sum(ss, red) / float(D) + eps);
#pragma unroll
  for (int k = 0; k < EPT; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    if (j < D) orow[j] = cvt<TA>(v[k] * inv * (offset + ld(w, j)));
  }
}

template <bool kFused>
void rms_norm_launch(const Tensor& out, const Tensor& x, const Tensor& res, const Tensor& w, float eps, float off,
                     Stream& s) {
  const int64_t R = x.num_rows(), D = x.size(-1);
  if (R == 0) return;
  // Rows up to 8192 wide stay in registers: about 8 elements per thread, whole warps.
  const int threads = int(std::min<int64_t>(1024, std::max<int64_t>(kWarpSize, (D / 8 + kWarpSize - 1) / kWarpSize * kWarpSize)));
  const int64_t ept = (D + threads - 1) / threads;
  dispatch_float(x.dtype, [&](auto ta) {
    dispatch_float(w.dtype, [&](auto tw) {
      using TA = typename decltype(ta)::type;
      using TW = typename decltype(tw)::type;
      TA* o = out.ptr<TA>();
      const TA* xp = x.ptr<TA>();
      TA* rp = kFused ? res.ptr<TA>() : nullptr;
      const Rows rr = kFused ? to_rows(res) : Rows{};
      const TW* wp = w.ptr<TW>();
      auto reg = [&](auto ept_tag) {
        constexpr int E = decltype(ept_tag)::value;
        rms_norm_reg_kernel<TA, TW, kFused, E>
            <<<unsigned(R), threads, 0, st(s)>>>(o, to_rows(out), xp, to_rows(x), rp, rr, wp, int(D), eps, off);
      };
      if (ept <= 1) reg(std::integral_constant<int, 1>{});
      else if (ept <= 2) reg(std::integral_constant<int, 2>{});
      else if (ept <= 4) reg(std::integral_constant<int, 4>{});
      else if (ept <= 8) reg(std::integral_constant<int, 8>{});
      else
        rms_norm_kernel<TA, TW, kFused><<<unsigned(R), 256, 0, st(s)>>>(o, to_rows(out), xp, to_rows(x), rp, rr, wp, D,
                                                                         eps, off);
    });
  });
  check_launch("rms_norm");
}

void rms_norm(const RmsNormArgs& a, Stream& s) { rms_norm_launch<false>(a.out, a.x, Tensor(), a.weight, a.eps, a.weight_offset, s); }
void add_rms_norm(const AddRmsNormArgs& a, Stream& s) {
  rms_norm_launch<true>(a.out, a.x, a.residual, a.weight, a.eps, a.weight_offset, s);
}

// ---- RoPE ----
template <class T>
__global__ void rope_kernel(T* q, int64_t qs0, int64_t qs1, int hq, T* k, int64_t ks0, int64_t ks1, int hk,
                            const int32_t* pos, const float* cs, int64_t cs_ld, int half, bool inter) {
  const int64_t t = blockIdx.x;
  const float* row = cs + int64_t(pos[t]) * cs_ld;
  const int total = (hq + hk) * half;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    T* v = h < hq ? q + t * qs0 + int64_t(h) * qs1 : k + t * ks0 + int64_t(h - hq) * ks1;
    const int i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
    const float x1 = ld(v, i1), x2 = ld(v, i2), c = row[i], sn = row[half + i];
    v[i1] = cvt<T>(x1 * c - x2 * sn);
    v[i2] = cvt<T>(x2 * c + x1 * sn);
  }
}

void rope(const RopeArgs& a, Stream& s) {
  const int64_t ntok = a.q.size(0);
  if (ntok == 0) return;
  const bool has_k = a.k.defined();
  if (has_k && a.k.dtype != a.q.dtype) fail("rope: q and k dtypes differ");
  dispatch_float(a.q.dtype, [&](auto tq) {
    using T = typename decltype(tq)::type;
    rope_kernel<T><<<unsigned(ntok), 128, 0, st(s)>>>(
        a.q.ptr<T>(), a.q.strides[0], a.q.strides[1], int(a.q.size(1)), has_k ? a.k.ptr<T>() : nullptr,
        has_k ? a.k.strides[0] : 0, has_k ? a.k.strides[1] : 0, has_k ? int(a.k.size(1)) : 0,
        a.positions.ptr<int32_t>(), a.cos_sin.ptr<float>(), a.cos_sin.strides[0], a.rot_dim / 2, a.interleaved);
  });
  check_launch("rope");
}

// ---- elementwise ----
template <class T, bool kSilu>
__global__ void binary_kernel(T* out, int64_t ld_o, const T* a, int64_t ld_a, const T* b, int64_t ld_b, int64_t R,
                              int64_t C) {
  const int64_t n = R * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    const float x = ld(a, r * ld_a + c), y = ld(b, r * ld_b + c);
    out[r * ld_o + c] = cvt<T>(kSilu ? x / (1.f + __expf(-x)) * y : x + y);
  }
}

template <bool kSilu>
void binary(const Tensor& out, const Tensor& a, const Tensor& b, Stream& s) {
  const int64_t R = out.size(0), C = out.size(1);
  if (R * C == 0) return;
  dispatch_float(out.dtype, [&](auto tt) {
    using T = typename decltype(tt)::type;
    binary_kernel<T, kSilu><<<grid_for(R * C, 256), 256, 0, st(s)>>>(out.ptr<T>(), out.strides[0], a.ptr<T>(),
                                                                     a.strides[0], b.ptr<T>(), b.strides[0], R, C);
  });
  check_launch(kSilu ? "silu_mul" : "add");
}

void silu_mul(const SiluMulArgs& a, Stream& s) { binary<true>(a.out, a.gate, a.up, s); }
void add(const AddArgs& a, Stream& s) { binary<false>(a.out, a.a, a.b, s); }

// ---- argmax / softmax: one block per row ----
template <class T>
__global__ void argmax_kernel(int32_t* out, int64_t out_ld, const T* x, int64_t x_ld, int64_t N) {
  __shared__ float sv[1024];
  __shared__ int64_t si[1024];
  const T* row = x + int64_t(blockIdx.x) * x_ld;
  float best = -INFINITY;
  int64_t bi = N;  // "none yet": any real index wins
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    const float v = ld(row, j);
    if (v > best || bi == N) { best = v; bi = j; }
  }
  sv[threadIdx.x] = best;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w) {
      const float ov = sv[threadIdx.x + w];
      const int64_t oi = si[threadIdx.x + w];
      if (ov > sv[threadIdx.x] || (ov == sv[threadIdx.x] && oi < si[threadIdx.x])) {
        sv[threadIdx.x] = ov;
        si[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[int64_t(blockIdx.x) * out_ld] = int32_t(si[0] == N ? 0 : si[0]);
}

void argmax(const ArgmaxArgs& a, Stream& s) {
  const int64_t R = a.x.size(0);
  if (R == 0) return;
  dispatch_float(a.x.dtype, [&](auto tt) {
    using T = typename decltype(tt)::type;
    argmax_kernel<T><<<unsigned(R), 1024, 0, st(s)>>>(a.out.ptr<int32_t>(), a.out.strides[0], a.x.ptr<T>(),
                                                     a.x.strides[0], a.x.size(1));
  });
  check_launch("argmax");
}

template <class T>
__global__ void softmax_kernel(T* out, int64_t ld_o, const T* x, int64_t x_ld, int64_t N) {
  __shared__ float red[32];
  const T* row = x + int64_t(blockIdx.x) * x_ld;
  T* orow = out + int64_t(blockIdx.x) * ld_o;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, ld(row, j));
  m = block_max(m, red);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) sum += __expf(ld(row, j) - m);
  const float inv = 1.f / block_sum(sum, red);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) orow[j] = cvt<T>(__expf(ld(row, j) - m) * inv);
}

void softmax(const SoftmaxArgs& a, Stream& s) {
  const int64_t R = a.x.size(0);
  if (R == 0) return;
  dispatch_float(a.x.dtype, [&](auto tt) {
    using T = typename decltype(tt)::type;
    softmax_kernel<T><<<unsigned(R), 1024, 0, st(s)>>>(a.out.ptr<T>(), a.out.strides[0], a.x.ptr<T>(), a.x.strides[0],
                                                      a.x.size(1));
  });
  check_launch("softmax");
}

// ---- conversion / bias broadcast (matmul helpers) ----
template <class TD, class TS>
__global__ void convert_kernel(TD* dst, int64_t dld, const TS* src, int64_t sld, int64_t R, int64_t C) {
  const int64_t n = R * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    dst[r * dld + c] = cvt<TD>(ld(src, r * sld + c));
  }
}

template <class TD, class TS>
__global__ void bias_fill_kernel(TD* dst, int64_t dld, const TS* bias, int64_t R, int64_t C) {
  const int64_t n = R * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    dst[r * dld + c] = cvt<TD>(ld(bias, c));
  }
}

bool float_act(const OpDesc& d, const DeviceCaps&) { return is_gpu_float(d.dtype[0]); }
bool float_act_w(const OpDesc& d, const DeviceCaps&) { return is_gpu_float(d.dtype[0]) && is_gpu_float(d.dtype[1]); }
}  // namespace

void launch_convert(void* dst, DType dst_t, const void* src, DType src_t, int64_t rows, int64_t cols, int64_t dst_ld,
                    int64_t src_ld, void* stream) {
  if (rows * cols == 0) return;
  dispatch_float(dst_t, [&](auto td) {
    dispatch_float(src_t, [&](auto ts) {
      using TD = typename decltype(td)::type;
      using TS = typename decltype(ts)::type;
      convert_kernel<TD, TS><<<grid_for(rows * cols, 256), 256, 0, gpuStream_t(stream)>>>(
          static_cast<TD*>(dst), dst_ld, static_cast<const TS*>(src), src_ld, rows, cols);
    });
  });
  check_launch("convert");
}

void launch_bias_fill(void* out, DType out_t, int64_t out_ld, const void* bias, DType bias_t, int64_t rows,
                      int64_t cols, void* stream) {
  if (rows * cols == 0) return;
  dispatch_float(out_t, [&](auto td) {
    dispatch_float(bias_t, [&](auto ts) {
      using TD = typename decltype(td)::type;
      using TS = typename decltype(ts)::type;
      bias_fill_kernel<TD, TS><<<grid_for(rows * cols, 256), 256, 0, gpuStream_t(stream)>>>(
          static_cast<TD*>(out), out_ld, static_cast<const TS*>(bias), rows, cols);
    });
  });
  check_launch("bias_fill");
}

void register_pointwise_kernels() {
  const auto K = kKind;
  register_kernel<EmbedArgs>(Op::EMBED, K, "gpu.embed", 10, float_act_w, embed);
  register_kernel<RmsNormArgs>(Op::RMS_NORM, K, "gpu.rms_norm", 10, float_act_w, rms_norm);
  register_kernel<AddRmsNormArgs>(Op::ADD_RMS_NORM, K, "gpu.add_rms_norm", 10, float_act_w, add_rms_norm);
  register_kernel<RopeArgs>(Op::ROPE, K, "gpu.rope", 10, float_act, rope);
  register_kernel<SiluMulArgs>(Op::SILU_MUL, K, "gpu.silu_mul", 10, float_act, silu_mul);
  register_kernel<AddArgs>(Op::ADD, K, "gpu.add", 10, float_act, add);
  register_kernel<ArgmaxArgs>(Op::ARGMAX, K, "gpu.argmax", 10, float_act, argmax);
  register_kernel<SoftmaxArgs>(Op::SOFTMAX, K, "gpu.softmax", 10, float_act, softmax);
}

}  // namespace portllm::gpu
