// CPU absorbed MLA attention over the paged latent cache (f32 queries; f32/f16/bf16/fp8 cache).
// All query heads share one latent vector per token, so a work item is (query token, chunk of
// heads): each cache entry is read and widened once and scored against every head of the
// chunk, with an online softmax per head.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/simd.h"
#include "core/thread_pool.h"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
constexpr int64_t kHeadChunk = 16;

void mla_attention(const MlaAttentionArgs& a, Stream&) {
  const int64_t B = a.seq_lens.size(0), H = a.q_latent.size(1), T = a.q_latent.size(0);
  const int64_t Dc = a.q_latent.size(2), Dr = a.q_pe.size(2), L = Dc + Dr;
  const Tensor& c = a.latent_cache;
  const int64_t page = c.size(1);
  const DType ct = c.dtype;
  const size_t es = dtype_size(ct);
  const int32_t* qsl = a.query_start_loc.ptr<int32_t>();
  const int32_t* lens = a.seq_lens.ptr<int32_t>();
  const int32_t* bt = a.block_tables.ptr<int32_t>();
  const int64_t bt_ld = a.block_tables.strides[0];
  // Token -> sequence, so work items can be (token, head chunk).
  std::vector<int32_t> seq_of(static_cast<size_t>(T), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = qsl[b]; t < qsl[b + 1]; ++t) seq_of[size_t(t)] = int32_t(b);
  const int64_t chunks = (H + kHeadChunk - 1) / kHeadChunk;
  ThreadPool::global().parallel_for(int64_t(qsl[B]) * chunks, [&](int64_t w0, int64_t w1, int) {
    std::vector<float> lat(static_cast<size_t>(L)), acc(static_cast<size_t>(kHeadChunk * Dc)), q(static_cast<size_t>(kHeadChunk * L));
    float m[kHeadChunk], l[kHeadChunk];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t t = w / chunks, h0 = (w % chunks) * kHeadChunk, nh = std::min(kHeadChunk, H - h0);
      const int64_t b = seq_of[size_t(t)], q_len = qsl[b + 1] - qsl[b];
      const int64_t pos = lens[b] - q_len + (t - qsl[b]);
      for (int64_t i = 0; i < nh; ++i) {
        const float* ql = a.q_latent.ptr<float>() + t * a.q_latent.strides[0] + (h0 + i) * a.q_latent.strides[1];
        const float* qp = a.q_pe.ptr<float>() + t * a.q_pe.strides[0] + (h0 + i) * a.q_pe.strides[1];
        for (int64_t d = 0; d < Dc; ++d) q[size_t(i * L + d)] = ql[d] * a.scale;
        for (int64_t d = 0; d < Dr; ++d) q[size_t(i * L + Dc + d)] = qp[d] * a.scale;
        m[i] = -std::numeric_limits<float>::infinity();
        l[i] = 0.f;
      }
      std::fill(acc.begin(), acc.begin() + nh * Dc, 0.f);
      for (int64_t p = 0; p <= pos; ++p) {
        const int64_t blk = bt[b * bt_ld + p / page];
        const char* e = static_cast<const char*>(c.data) + (blk * c.strides[0] + (p % page) * c.strides[1]) * int64_t(es);
        const float* lf;
        if (ct == DType::F32) lf = reinterpret_cast<const float*>(e);
        else { widen(ct, e, lat.data(), L); lf = lat.data(); }
        for (int64_t i = 0; i < nh; ++i) {
          const float s = dot_f32(q.data() + i * L, lf, L);
          float* ai = acc.data() + i * Dc;
          if (s > m[i]) {
            const float corr = std::exp(m[i] - s);
            l[i] *= corr;
            for (int64_t d = 0; d < Dc; ++d) ai[d] *= corr;
            m[i] = s;
          }
          const float pe = std::exp(s - m[i]);
          l[i] += pe;
          for (int64_t d = 0; d < Dc; ++d) ai[d] += pe * lf[d];
        }
      }
      for (int64_t i = 0; i < nh; ++i) {
        float* o = a.out.ptr<float>() + t * a.out.strides[0] + (h0 + i) * a.out.strides[1];
        const float inv = 1.f / l[i];
        for (int64_t d = 0; d < Dc; ++d) o[d] = acc[size_t(i * Dc + d)] * inv;
      }
    }
  });
}
}  // namespace

void register_mla_kernels() {
  auto ok = [](const OpDesc& d, const DeviceCaps& c) {
    const DType ct = d.dtype[2];
    return c.avx2 && d.dtype[0] == DType::F32 &&
           (ct == DType::F32 || ct == DType::BF16 || ct == DType::F16 || ct == DType::F8E4M3);
  };
  register_kernel<MlaAttentionArgs>(Op::MLA_ATTENTION, DeviceKind::CPU, "cpu.mla_attention", 10, ok, mla_attention);
}

}  // namespace portllm::cpu
