// Row-wise and elementwise kernels: embedding / row gather, RMSNorm (plain and fused with the
// residual add; 2-D rows or 3-D strided head views), RoPE, SiLU-and-mul, add, argmax, softmax,
// plus the dtype conversion and bias broadcast the matmul path uses. Math is in float whatever
// the storage dtype; rounding points match the reference kernels (ops/ref). RMSNorm, RoPE and the
// elementwise ops take 16-byte accesses when the views allow it (vec_io.cuh, checked at launch)
// and scalar ones otherwise; their grids are one wave of the device and blocks loop.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
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
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
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
      launch_programmatic(s, embed_kernel<TT, TO>, dim3(unsigned(T)), dim3(256), 0, a.out.ptr<TO>(), a.out.strides[0],
                          a.table.ptr<TT>(), a.table.strides[0], a.ids.ptr<int32_t>(), a.table.size(0), H);
    });
  });
  check_launch("embed");
}

// ---- RMSNorm ----
// Rows are served by groups of G threads. Rows of at most 128 accesses (head-dim rows: q/k norm
// over [T, H, D] views, D <= 1024 in bf16) take G a power of two up to 32 and several rows per
// 128-thread block, reduced by shuffles inside the group; wider rows take the whole block (G =
// blockDim.x, a multiple of the warp; block reduction). Each thread holds NVT accesses of N values
// (N = 16 bytes' worth when the views allow it, else 1): access k of lane l covers values
// [(k * G + l) * N, +N), so a group's accesses are contiguous. All of a row's loads are in flight
// before anything is stored (a load-store loop serializes on possible aliasing of x and the
// residual: a 4096-wide decode row took ~7 us instead of ~2). Blocks loop over rows, the grid one
// wave of the device. fused: residual = round(residual + x) first, as the reference does.
// Row r of a view sits at (r / n1) * s0 + (r % n1) * s1 (n1 shared by all views of a call).
struct RowView {
  int64_t s0, s1;
};

template <class TA, class TW, bool kFused, int N, int NVT>
__global__ void __launch_bounds__(512) rms_norm_rows_kernel(TA* out, RowView ro, const TA* x, RowView rx, TA* res,
                                                            RowView rr, const TW* w, uint32_t n1, uint32_t R, int D,
                                                            int G, float eps, float offset) {
  __shared__ float red[32];
  const int nv = D / N;
  const int lane = int(threadIdx.x) % G, rpb = int(blockDim.x) / G, sub = int(threadIdx.x) / G;
  // Short rows keep their slice of the weight in registers across the row loop; mid-size slices
  // are loaded with the row (one round trip for a decode row instead of two), wide ones after the
  // reduction (registers).
  constexpr bool kHoist = NVT * N <= 16, kEarlyW = !kHoist && NVT * N <= 32;
  float wv[NVT][N];
  if constexpr (kHoist) {
#pragma unroll
    for (int k = 0; k < NVT; ++k)
      if ((k * G + lane) < nv) load_vec<TW, N>(w + (k * G + lane) * N, wv[k]);
  }
  gpu_wait_for_predecessor();  // launched programmatically: x and the residual are earlier kernels' outputs
  gpu_allow_successor();
  // The loop bound is uniform over the block, so every lane reaches the shuffles and barriers.
  for (uint32_t base = blockIdx.x * uint32_t(rpb); base < R; base += gridDim.x * uint32_t(rpb)) {
    const uint32_t r = base + uint32_t(sub);
    const bool ok = r < R;
    const uint32_t ra = r / n1, rb = r - ra * n1;
    const TA* xr = x + (int64_t(ra) * rx.s0 + int64_t(rb) * rx.s1);
    TA* orow = out + (int64_t(ra) * ro.s0 + int64_t(rb) * ro.s1);
    TA* rrow = kFused ? res + (int64_t(ra) * rr.s0 + int64_t(rb) * rr.s1) : nullptr;
    float v[NVT][N];
#pragma unroll
    for (int k = 0; k < NVT; ++k) {
      const int j = k * G + lane;
      if (ok && j < nv) {
        load_vec<TA, N>(xr + j * N, v[k]);
        if constexpr (kFused) {
          float rv[N];
          load_vec<TA, N>(rrow + j * N, rv);
#pragma unroll
          for (int e = 0; e < N; ++e) v[k][e] += rv[e];
        }
        if constexpr (kEarlyW) load_vec<TW, N>(w + j * N, wv[k]);
      } else {
#pragma unroll
        for (int e = 0; e < N; ++e) v[k][e] = 0.f;
      }
    }
    float ss = 0;
#pragma unroll
    for (int k = 0; k < NVT; ++k) {
      const int j = k * G + lane;
      if (kFused && ok && j < nv) {
#pragma unroll
        for (int e = 0; e < N; ++e) v[k][e] = round_to<TA>(v[k][e]);  // the residual stream keeps the activation dtype
        store_vec<TA, N>(rrow + j * N, v[k]);
      }
#pragma unroll
      for (int e = 0; e < N; ++e) ss += v[k][e] * v[k][e];
    }
    if (G <= kWarpSize) {
      for (int m = G >> 1; m > 0; m >>= 1) ss += gpu_shfl_xor(ss, m);
    } else {
      ss = block_sum(ss, red);
    }
    const float inv = rsqrtf(ss / float(D) + eps);
#pragma unroll
    for (int k = 0; k < NVT; ++k) {
      const int j = k * G + lane;
      if (ok && j < nv) {
        float wk[N], o[N];
        if constexpr (kHoist || kEarlyW) {
#pragma unroll
          for (int e = 0; e < N; ++e) wk[e] = wv[k][e];
        } else {
          load_vec<TW, N>(w + j * N, wk);
        }
#pragma unroll
        for (int e = 0; e < N; ++e) o[e] = v[k][e] * inv * (offset + wk[e]);
        store_vec<TA, N>(orow + j * N, o);
      }
    }
  }
}

// Any row width and any Rows views (the fallback): one block per row, a loop over the row (twice).
template <class TA, class TW, bool kFused>
__global__ void rms_norm_kernel(TA* out, Rows ro, const TA* x, Rows rx, TA* res, Rows rr, const TW* w, int64_t D,
                                float eps, float offset) {
  __shared__ float red[32];
  gpu_wait_for_predecessor();
  gpu_allow_successor();
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

// How a call's rows map onto groups (see rms_norm_rows_kernel); nvt = 0: the fallback kernel.
struct NormPlan {
  int nvt = 0, group = 0, threads = 0;
};
NormPlan plan_norm(int64_t nv) {
  NormPlan p;
  constexpr int kRowsBlock = kWarpSize > 128 ? kWarpSize : 128;
  if (nv <= 128) {
    p.nvt = nv >= 32 ? 4 : nv >= 16 ? 2 : 1;
    const int64_t per = (nv + p.nvt - 1) / p.nvt;
    p.group = 1;
    while (p.group < per) p.group *= 2;
    p.threads = kRowsBlock;
    return p;
  }
  for (int nvt : {4, 8}) {
    const int64_t threads = ((nv + nvt - 1) / nvt + kWarpSize - 1) / kWarpSize * kWarpSize;
    if (threads <= 512) {
      p.nvt = nvt;
      p.group = p.threads = int(threads);
      return p;
    }
  }
  return p;
}

template <bool kFused>
void rms_norm_launch(const Tensor& out, const Tensor& x, const Tensor& res, const Tensor& w, float eps, float off,
                     Stream& s) {
  const int64_t R = x.num_rows(), D = x.size(-1);
  if (R == 0) return;
  // One n1 for all views: a 2-D view (n1 = 1, row stride s0) reads as n1 rows of stride s0.
  const RowsDesc dx = rows_of(x), dout = rows_of(out), dres = kFused ? rows_of(res) : dx;
  int64_t n1 = 1;
  bool same_n1 = true;
  for (const RowsDesc& d : {dx, dout, dres}) {
    if (d.n1 == 1) continue;
    if (n1 == 1) n1 = d.n1;
    else if (n1 != d.n1) same_n1 = false;
  }
  auto view = [&](const RowsDesc& d) { return d.n1 == n1 ? RowView{d.s0, d.s1} : RowView{d.s0 * n1, d.s0}; };
  dispatch_float(x.dtype, [&](auto ta) {
    dispatch_float(w.dtype, [&](auto tw) {
      using TA = typename decltype(ta)::type;
      using TW = typename decltype(tw)::type;
      TA* o = out.ptr<TA>();
      const TA* xp = x.ptr<TA>();
      TA* rp = kFused ? res.ptr<TA>() : nullptr;
      const TW* wp = w.ptr<TW>();
      constexpr int V = kVec16<TA>;
      const bool vec = vec_view(x, V) && vec_view(out, V) && (!kFused || vec_view(res, V)) && vec_view(w, V);
      const int n = vec ? V : 1;
      const NormPlan p = plan_norm(D / n);
      if (p.nvt == 0 || !same_n1 || R >= (int64_t(1) << 31) || n1 >= (int64_t(1) << 31)) {
        const Rows rr = kFused ? to_rows(res) : Rows{};
        launch_programmatic(s, rms_norm_kernel<TA, TW, kFused>, dim3(unsigned(R)), dim3(256), 0, o, to_rows(out), xp,
                            to_rows(x), rp, rr, wp, D, eps, off);
        return;
      }
      const int64_t rows_per_block = p.threads / p.group;
      const unsigned grid = wave_grid(s, (R + rows_per_block - 1) / rows_per_block, p.threads);
      auto go = [&](auto n_tag, auto nvt_tag) {
        constexpr int kN = decltype(n_tag)::value, kNvt = decltype(nvt_tag)::value;
        launch_programmatic(s, rms_norm_rows_kernel<TA, TW, kFused, kN, kNvt>, dim3(grid), dim3(unsigned(p.threads)), 0,
                            o, view(dout), xp, view(dx), rp, view(dres), wp, uint32_t(n1), uint32_t(R), int(D), p.group,
                            eps, off);
      };
      auto with_n = [&](auto n_tag) {
        switch (p.nvt) {
          case 1: go(n_tag, std::integral_constant<int, 1>{}); break;
          case 2: go(n_tag, std::integral_constant<int, 2>{}); break;
          case 4: go(n_tag, std::integral_constant<int, 4>{}); break;
          default: go(n_tag, std::integral_constant<int, 8>{}); break;
        }
      };
      if (vec) with_n(std::integral_constant<int, V>{});
      else with_n(std::integral_constant<int, 1>{});
    });
  });
  check_launch("rms_norm");
}

void rms_norm(const RmsNormArgs& a, Stream& s) { rms_norm_launch<false>(a.out, a.x, Tensor(), a.weight, a.eps, a.weight_offset, s); }
void add_rms_norm(const AddRmsNormArgs& a, Stream& s) {
  rms_norm_launch<true>(a.out, a.x, a.residual, a.weight, a.eps, a.weight_offset, s);
}

// ---- RoPE ----
// Vector path: one thread per (token, head, N-value slice): N consecutive NeoX pairs (i, i + half),
// or the N/2 interleaved pairs inside N consecutive values; cos/sin read as f32 vectors (the rows
// of a token are shared by its heads, so they come from L1/L2). Tokens, heads and slices are one
// flat grid-stride index. Values past rot_dim are not touched.
template <class T, bool kInter>
__global__ void __launch_bounds__(256) rope_vec_kernel(T* q, int64_t qs0, int64_t qs1, uint32_t hq, T* k, int64_t ks0,
                                                       int64_t ks1, const int32_t* pos, const float* cs, int64_t cs_ld,
                                                       int half, uint32_t per_head, uint32_t per_tok, uint32_t n) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  constexpr int N = kVec16<T>;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t t = i / per_tok, rem = i - t * per_tok, h = rem / per_head, i0 = (rem - h * per_head) * N;
    T* v = h < hq ? q + (int64_t(t) * qs0 + int64_t(h) * qs1) : k + (int64_t(t) * ks0 + int64_t(h - hq) * ks1);
    const float* row = cs + int64_t(pos[t]) * cs_ld;
    if constexpr (!kInter) {
      float x1[N], x2[N], c[N], sn[N], o1[N], o2[N];
      load_vec<T, N>(v + i0, x1);
      load_vec<T, N>(v + i0 + half, x2);
      load_vec<float, N>(row + i0, c);
      load_vec<float, N>(row + half + i0, sn);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        o1[e] = x1[e] * c[e] - x2[e] * sn[e];
        o2[e] = x2[e] * c[e] + x1[e] * sn[e];
      }
      store_vec<T, N>(v + i0, o1);
      store_vec<T, N>(v + i0 + half, o2);
    } else {
      float xv[N], c[N / 2], sn[N / 2], o[N];
      load_vec<T, N>(v + i0, xv);
      load_vec<float, N / 2>(row + i0 / 2, c);
      load_vec<float, N / 2>(row + half + i0 / 2, sn);
#pragma unroll
      for (int e = 0; e < N / 2; ++e) {
        const float x1 = xv[2 * e], x2 = xv[2 * e + 1];
        o[2 * e] = x1 * c[e] - x2 * sn[e];
        o[2 * e + 1] = x2 * c[e] + x1 * sn[e];
      }
      store_vec<T, N>(v + i0, o);
    }
  }
}

// Fallback (any rot_dim, unaligned views): one block per token, scalar pairs.
template <class T>
__global__ void rope_kernel(T* q, int64_t qs0, int64_t qs1, int hq, T* k, int64_t ks0, int64_t ks1, int hk,
                            const int32_t* pos, const float* cs, int64_t cs_ld, int half, bool inter) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
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
  const int half = a.rot_dim / 2;
  const int64_t hq = a.q.size(1), hk = has_k ? a.k.size(1) : 0;
  dispatch_float(a.q.dtype, [&](auto tq) {
    using T = typename decltype(tq)::type;
    constexpr int N = kVec16<T>;
    const Tensor& cs = a.cos_sin;
    const int64_t per_head = a.interleaved ? a.rot_dim / N : half / N;
    const int64_t n = ntok * (hq + hk) * per_head;
    const bool vec = (a.interleaved ? a.rot_dim % N == 0 : half % N == 0) && half % 4 == 0 && vec_view(a.q, N) &&
                     (!has_k || vec_view(a.k, N)) && aligned16(cs.data) && cs.strides[0] % 4 == 0 && per_head > 0 &&
                     n < (int64_t(1) << 31);
    T* kp = has_k ? a.k.ptr<T>() : nullptr;
    const int64_t ks0 = has_k ? a.k.strides[0] : 0, ks1 = has_k ? a.k.strides[1] : 0;
    if (vec) {
      constexpr int kThreads = 256;
      const unsigned grid = wave_grid(s, (n + kThreads - 1) / kThreads, kThreads);
      auto go = [&](auto inter) {
        launch_programmatic(s, rope_vec_kernel<T, decltype(inter)::value>, dim3(grid), dim3(kThreads), 0, a.q.ptr<T>(),
                            a.q.strides[0], a.q.strides[1], uint32_t(hq), kp, ks0, ks1, a.positions.ptr<int32_t>(),
                            cs.ptr<float>(), cs.strides[0], half, uint32_t(per_head), uint32_t((hq + hk) * per_head),
                            uint32_t(n));
      };
      if (a.interleaved) go(std::true_type{});
      else go(std::false_type{});
    } else {
      launch_programmatic(s, rope_kernel<T>, dim3(unsigned(ntok)), dim3(128), 0, a.q.ptr<T>(), a.q.strides[0],
                          a.q.strides[1], int(hq), kp, ks0, ks1, int(hk), a.positions.ptr<int32_t>(), cs.ptr<float>(),
                          cs.strides[0], half, a.interleaved);
    }
  });
  check_launch("rope");
}

// ---- elementwise (SILU_MUL, ADD) ----
// Rows on grid y (each block loops over rows, U rows' loads in flight per thread), N-value slices
// of a row on grid x; no index division. N = 16 bytes' worth when every view allows it, else 1.
template <bool kSilu>
__device__ __forceinline__ float binop(float x, float y) {
  return kSilu ? silu_times(x, y) : x + y;
}

template <class T, bool kSilu, int N, int U>
__global__ void __launch_bounds__(256) binary_kernel(T* out, int64_t ld_o, const T* a, int64_t ld_a, const T* b,
                                                     int64_t ld_b, int64_t R, int64_t CV) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= CV) return;
  const int64_t col = c * N, step = gridDim.y;
  for (int64_t r0 = blockIdx.y; r0 < R; r0 += step * U) {
    float x[U][N], y[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t r = r0 + u * step;
      if (r < R) {
        load_vec<T, N>(a + r * ld_a + col, x[u]);
        load_vec<T, N>(b + r * ld_b + col, y[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t r = r0 + u * step;
      if (r < R) {
        float o[N];
#pragma unroll
        for (int e = 0; e < N; ++e) o[e] = binop<kSilu>(x[u][e], y[u][e]);
        store_vec<T, N>(out + r * ld_o + col, o);
      }
    }
  }
}

template <bool kSilu>
void binary(const Tensor& out, const Tensor& a, const Tensor& b, Stream& s) {
  const int64_t R = out.size(0), C = out.size(1);
  if (R * C == 0) return;
  dispatch_float(out.dtype, [&](auto tt) {
    using T = typename decltype(tt)::type;
    constexpr int V = kVec16<T>, kThreads = 256, kU = 2;
    const bool vec = vec_view(out, V) && vec_view(a, V) && vec_view(b, V);
    const int64_t CV = vec ? C / V : C;
    const int64_t bx = (CV + kThreads - 1) / kThreads;
    // One wave of blocks in all, rows spread over grid y (each block then loops over its rows).
    const int64_t wave = wave_grid(s, int64_t(1) << 40, kThreads);
    const int64_t by = std::clamp<int64_t>(std::min<int64_t>((R + kU - 1) / kU, wave / bx), 1, 65535);
    const dim3 grid{unsigned(bx), unsigned(by)};
    auto go = [&](auto n_tag) {
      launch_programmatic(s, binary_kernel<T, kSilu, decltype(n_tag)::value, kU>, dim3(grid), dim3(kThreads), 0,
                          out.ptr<T>(), out.strides[0], a.ptr<T>(), a.strides[0], b.ptr<T>(), b.strides[0], R, CV);
    };
    if (vec) go(std::integral_constant<int, V>{});
    else go(std::integral_constant<int, 1>{});
  });
  check_launch(kSilu ? "silu_mul" : "add");
}

void silu_mul(const SiluMulArgs& a, Stream& s) { binary<true>(a.out, a.gate, a.up, s); }
void add(const AddArgs& a, Stream& s) { binary<false>(a.out, a.a, a.b, s); }

// ---- argmax / softmax: one block per row ----
template <class T>
__global__ void argmax_kernel(int32_t* out, int64_t out_ld, const T* x, int64_t x_ld, int64_t N) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
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
    launch_programmatic(s, argmax_kernel<T>, dim3(unsigned(R)), dim3(1024), 0, a.out.ptr<int32_t>(), a.out.strides[0],
                        a.x.ptr<T>(), a.x.strides[0], a.x.size(1));
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
