// QK_NORM_ROPE_KV_WRITE: the attention block's per-token preparation in one launch instead of four
// (q norm, k norm, RoPE, KV write). At batch-1 decode each of those kernels moves a few kilobytes
// and costs its launch, fill and drain (1.5-2.6 us on the H200) plus the gap to the next kernel:
// ~10 us per layer that this kernel turns into one.
//
// A group of G lanes serves one head row (q, k or v of one token), N values per lane (16 bytes),
// so the row is in registers: the norm's sum of squares is a shuffle reduction inside the group,
// and RoPE's NeoX partner value (i + rot_dim/2) sits in lane l ^ (rot_dim/2/N) of the same group,
// one shuffle away; interleaved pairs sit inside a lane's vector. Each step rounds to the
// activation dtype where the unfused op would store, so the result equals RMS_NORM, RMS_NORM,
// ROPE, KV_WRITE run in turn. Portable CUDA C++ (no PTX): MUSA builds it.
#include <algorithm>
#include <cstdint>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr int kThreads = 128;

template <class T, class TC>
struct PrepParams {
  T* q;
  int64_t qs0, qs1;
  T* k;
  int64_t ks0, ks1;
  const T* v;
  int64_t vs0, vs1;
  const T* qw;  // norm weights, nullptr: no norm
  const T* kw;
  float eps, offset;
  const int32_t* pos;
  const float* cs;
  int64_t cs_ld;
  int half;  // rot_dim / 2
  bool inter;
  TC* kc;
  int64_t kc0, kc1, kc2;
  TC* vc;
  int64_t vc0, vc1, vc2;
  const int32_t* slots;
  int page;
  uint32_t hq, hk, rows;  // rows = tokens * (hq + 2 hk)
  int D;
  bool early_trigger;  // prep_trigger_early()
};

template <class T, class TC>
__global__ void __launch_bounds__(kThreads) qk_norm_rope_kv_write_kernel(PrepParams<T, TC> p, int G) {
  constexpr int N = kVec16<T>;
  const int lane = int(threadIdx.x) % G, rpb = kThreads / G, sub = int(threadIdx.x) / G;
  const uint32_t per_tok = p.hq + 2 * p.hk;
  const bool lane_in = lane * N < p.D;
  const int hn = p.half / N;  // lanes per rotary half (NeoX)
  // The successor may launch before this kernel's wait (early_trigger): see prep_trigger_early().
  if (p.early_trigger) gpu_allow_successor();
  bool waited = false;
  // The loop bound is uniform over the block, so every lane reaches every shuffle and the wait.
  for (uint32_t base = blockIdx.x * uint32_t(rpb); base < p.rows; base += gridDim.x * uint32_t(rpb)) {
    const uint32_t r = base + uint32_t(sub);
    const bool ok = r < p.rows;
    const uint32_t t = ok ? r / per_tok : 0, j = ok ? r - t * per_tok : 0;
    const int kind = j < p.hq ? 0 : j < p.hq + p.hk ? 1 : 2;  // q, k, v
    const uint32_t h = kind == 0 ? j : kind == 1 ? j - p.hq : j - p.hq - p.hk;
    T* row = kind == 0 ? p.q + (int64_t(t) * p.qs0 + int64_t(h) * p.qs1)
                       : kind == 1 ? p.k + (int64_t(t) * p.ks0 + int64_t(h) * p.ks1) : nullptr;
    const T* src = kind == 2 ? p.v + (int64_t(t) * p.vs0 + int64_t(h) * p.vs1) : row;
    const bool live = ok && lane_in, rot_row = live && kind != 2;
    // Every global read of the row is issued before any arithmetic (a decode step is latency,
    // not bandwidth): the position and slot, then the row, its norm weights and cos/sin.
    const int32_t position = ok ? p.pos[t] : 0, slot = ok ? p.slots[t] : -1;
    const float* cs = p.cs + int64_t(position) * p.cs_ld;
    const bool neox_lane = p.half > 0 && !p.inter && lane < 2 * hn;
    const bool inter_lane = p.half > 0 && p.inter && lane * N < 2 * p.half;
    const int c0 = p.inter ? lane * N / 2 : (lane & (hn - 1)) * N;  // this lane's cos/sin offset
    float x[N], w[N], c[N], sn[N];
    // The position, slot, norm weights and cos/sin are no kernel's output (the step's metadata and
    // weights, programmatic_launch.cuh): on the first row they are read before the wait, so only
    // the row's own load follows it.
    if (p.qw != nullptr && rot_row) load_vec<T, N>((kind == 0 ? p.qw : p.kw) + lane * N, w);
    if (rot_row && neox_lane) {
      load_vec<float, N>(cs + c0, c);
      load_vec<float, N>(cs + p.half + c0, sn);
    } else if (rot_row && inter_lane) {
      load_vec<float, N / 2>(cs + c0, c);
      load_vec<float, N / 2>(cs + p.half + c0, sn);
    }
    if (!waited) {
      gpu_wait_for_predecessor();  // launched programmatically: q, k, v come from the qkv projection
      if (!p.early_trigger) gpu_allow_successor();
      waited = true;
    }
    if (live) load_vec<T, N>(src + lane * N, x);
    else {
#pragma unroll
      for (int e = 0; e < N; ++e) x[e] = 0.f;
    }
    if (p.qw != nullptr) {
      float ss = 0.f;
#pragma unroll
      for (int e = 0; e < N; ++e) ss += x[e] * x[e];
      for (int m = G >> 1; m > 0; m >>= 1) ss += gpu_shfl_xor(ss, m);
      if (rot_row) {
        const float inv = rsqrtf(ss / float(p.D) + p.eps);
#pragma unroll
        for (int e = 0; e < N; ++e) x[e] = round_to<T>(x[e] * inv * (p.offset + w[e]));
      }
    }
    if (p.half > 0 && !p.inter) {
      float y[N];  // the partner half's values
#pragma unroll
      for (int e = 0; e < N; ++e) y[e] = gpu_shfl_xor(x[e], hn);
      if (rot_row && neox_lane) {
        const bool lo = lane < hn;
#pragma unroll
        for (int e = 0; e < N; ++e) x[e] = round_to<T>(lo ? x[e] * c[e] - y[e] * sn[e] : x[e] * c[e] + y[e] * sn[e]);
      }
    } else if (rot_row && inter_lane) {
#pragma unroll
      for (int e = 0; e < N / 2; ++e) {
        const float x1 = x[2 * e], x2 = x[2 * e + 1];
        x[2 * e] = round_to<T>(x1 * c[e] - x2 * sn[e]);
        x[2 * e + 1] = round_to<T>(x2 * c[e] + x1 * sn[e]);
      }
    }
    if (!live) continue;
    if (kind != 2) store_vec<T, N>(row + lane * N, x);
    if (kind == 0 || slot < 0) continue;  // q rows stay; padding tokens write no cache
    const int64_t blk = slot / p.page, off = slot % p.page;
    TC* dst = kind == 1 ? p.kc + (blk * p.kc0 + off * p.kc1 + int64_t(h) * p.kc2)
                        : p.vc + (blk * p.vc0 + off * p.vc1 + int64_t(h) * p.vc2);
    store_vec<TC, N>(dst + lane * N, x);
  }
}

// Whether the successor (the attention) may launch before this kernel's wait: its blocks then
// take their compute units and read the step's metadata and earlier steps' KV tiles while the qkv
// GEMV still drains, instead of after this kernel's wait. The attention reads, before its own
// wait, nothing the qkv GEMV or this kernel writes, and its wait covers this kernel, which
// finishes only after its own wait on the GEMV. PORTLLM_PREP_EARLY_TRIGGER=0: after the wait, for
// measuring. Read once.
bool prep_trigger_early() {
  static const bool v = env_switch("PORTLLM_PREP_EARLY_TRIGGER", {"0", "1"}, 1) == 1;
  return v;
}

// What the kernel takes, from the descriptor: one group of at most a warp per head row (D / N
// lanes, a power of two up to 32), q/k/v of one head dim, norm weights in the activation dtype,
// rotary halves of whole lanes (NeoX: a power-of-two count of them, for the shuffle partner).
bool supports(const OpDesc& d, const DeviceCaps&) {
  const DType act = d.dtype[0];
  if (!is_gpu_float(act) || !is_gpu_cache(d.dtype[2]) || d.dtype[1] != act) return false;
  const int64_t n = 16 / int64_t(dtype_size(act)), D = d.dim[0], rot = d.dim[1];
  if (D != d.dim[3] || D % n != 0 || D / n > 32 || rot < 0 || rot > D || d.dim[2] <= 0) return false;
  if (rot == 0) return true;
  const int64_t half = rot / 2;
  if (rot % 2 != 0 || half % n != 0) return false;
  if (!(d.flags & 1u)) {
    const int64_t hn = half / n;
    if ((hn & (hn - 1)) != 0) return false;
  }
  return true;
}

// Views the kernel's 16-byte accesses need; otherwise the four unfused kernels run.
bool views_fit(const QkNormRopeKvWriteArgs& a, int n) {
  bool ok = vec_view(a.q, n) && vec_view(a.k, n) && vec_view(a.v, n) && vec_view(a.k_cache, n) &&
            vec_view(a.v_cache, n);
  if (a.q_norm.defined()) ok = ok && vec_view(a.q_norm, n) && vec_view(a.k_norm, n);
  if (a.rot_dim > 0)
    ok = ok && a.cos_sin.strides[0] % n == 0 && reinterpret_cast<uintptr_t>(a.cos_sin.data) % 16 == 0;
  return ok && a.q.size(0) * (a.q.size(1) + 2 * a.k.size(1)) < (int64_t(1) << 31);
}

void run_unfused(const QkNormRopeKvWriteArgs& a, Stream& s) {
  if (a.q_norm.defined()) {
    const RmsNormArgs qn{a.q, a.q, a.q_norm, a.eps, a.weight_offset}, kn{a.k, a.k, a.k_norm, a.eps, a.weight_offset};
    run_kernel("gpu.rms_norm", &qn, s);
    run_kernel("gpu.rms_norm", &kn, s);
  }
  const RopeArgs r{a.q, a.k, a.positions, a.cos_sin, a.rot_dim, a.interleaved};
  run_kernel("gpu.rope", &r, s);
  const KvWriteArgs w{a.k, a.v, a.k_cache, a.v_cache, a.slot_mapping};
  run_kernel("gpu.kv_write", &w, s);
}

void qk_norm_rope_kv_write(const QkNormRopeKvWriteArgs& a, Stream& s) {
  const int64_t T = a.q.size(0);
  if (T == 0) return;
  dispatch_float(a.q.dtype, [&](auto tq) {
    using T_ = typename decltype(tq)::type;
    constexpr int N = kVec16<T_>;
    if (!views_fit(a, N)) return run_unfused(a, s);
    dispatch_cache(a.k_cache.dtype, [&](auto tc) {
      using TC = typename decltype(tc)::type;
      PrepParams<T_, TC> p{};
      p.q = a.q.ptr<T_>();
      p.qs0 = a.q.strides[0];
      p.qs1 = a.q.strides[1];
      p.k = a.k.ptr<T_>();
      p.ks0 = a.k.strides[0];
      p.ks1 = a.k.strides[1];
      p.v = a.v.ptr<T_>();
      p.vs0 = a.v.strides[0];
      p.vs1 = a.v.strides[1];
      p.qw = a.q_norm.defined() ? a.q_norm.ptr<T_>() : nullptr;
      p.kw = a.q_norm.defined() ? a.k_norm.ptr<T_>() : nullptr;
      p.eps = a.eps;
      p.offset = a.weight_offset;
      p.pos = a.positions.ptr<int32_t>();
      p.cs = a.rot_dim > 0 ? a.cos_sin.ptr<float>() : nullptr;
      p.cs_ld = a.rot_dim > 0 ? a.cos_sin.strides[0] : 0;
      p.half = a.rot_dim / 2;
      p.inter = a.interleaved;
      p.kc = a.k_cache.ptr<TC>();
      p.kc0 = a.k_cache.strides[0];
      p.kc1 = a.k_cache.strides[1];
      p.kc2 = a.k_cache.strides[2];
      p.vc = a.v_cache.ptr<TC>();
      p.vc0 = a.v_cache.strides[0];
      p.vc1 = a.v_cache.strides[1];
      p.vc2 = a.v_cache.strides[2];
      p.slots = a.slot_mapping.ptr<int32_t>();
      p.page = int(a.k_cache.size(1));
      p.hq = uint32_t(a.q.size(1));
      p.hk = uint32_t(a.k.size(1));
      p.rows = uint32_t(T * (a.q.size(1) + 2 * a.k.size(1)));
      p.D = int(a.q.size(2));
      int G = 1;
      while (G * N < p.D) G *= 2;
      const int64_t rpb = kThreads / G;
      const unsigned grid = wave_grid(s, (int64_t(p.rows) + rpb - 1) / rpb, kThreads);
      p.early_trigger = prep_trigger_early();
      launch_programmatic(s, qk_norm_rope_kv_write_kernel<T_, TC>, dim3(grid), dim3(kThreads), 0, p, G);
    });
  });
  check_launch("qk_norm_rope_kv_write");
}
}  // namespace

void register_qk_norm_rope_kv_write_kernels() {
  register_kernel<QkNormRopeKvWriteArgs>(Op::QK_NORM_ROPE_KV_WRITE, kGpuKind, "gpu.qk_norm_rope_kv_write", 10, supports,
                                         qk_norm_rope_kv_write);
}

}  // namespace portllm::gpu
