// CPU paged attention (prefill and decode share one kernel) and KV write, for f32 queries and
// an f32/f16/bf16/fp8 cache (fp8 written saturating at +-448, convert_from_f32_satfinite; rows read
// in their dtype, simd.h's TypedRow). Work items are (sequence, query head) pairs spread over the thread
// pool; each query runs an online softmax over its causal window, reading keys through the
// block table one page at a time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/simd.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {

void kv_write(const KvWriteArgs& a, Stream&) {
  const int64_t T = a.k.size(0), H = a.k.size(1), Dk = a.k.size(2), Dv = a.v.size(2);
  const int64_t page = a.k_cache.size(1);
  const int32_t* slots = a.slot_mapping.ptr<int32_t>();
  const size_t es = dtype_size(a.k_cache.dtype);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t slot = slots[t];
    if (slot < 0) continue;
    for (int64_t h = 0; h < H; ++h) {
      auto write = [&](const Tensor& src, const Tensor& cache, int64_t D) {
        const float* s = src.ptr<float>() + t * src.strides[0] + h * src.strides[1];
        char* dst = static_cast<char*>(cache.data) +
                    ((slot / page) * cache.strides[0] + (slot % page) * cache.strides[1] + h * cache.strides[2]) * int64_t(es);
        convert_from_f32_satfinite(cache.dtype, s, dst, size_t(D));
      };
      write(a.k, a.k_cache, Dk);
      write(a.v, a.v_cache, Dv);
    }
  }
}

// The paged attention for a cache of dtype T: rows are read in place (TypedRow, simd.h).
template <DType T>
void attention_typed(const AttentionArgs& a) {
  const int64_t B = a.seq_lens.size(0), Hq = a.q.size(1), Hkv = a.k_cache.size(2);
  const int64_t Dk = a.q.size(2), Dv = a.v_cache.size(3), page = a.k_cache.size(1);
  const int64_t group = Hq / Hkv;
  const int64_t es = int64_t(dtype_size(T));
  const int32_t* qsl = a.query_start_loc.ptr<int32_t>();
  const int32_t* lens = a.seq_lens.ptr<int32_t>();
  const int32_t* bt = a.block_tables.ptr<int32_t>();
  const int64_t bt_stride = a.block_tables.strides[0];

  ThreadPool::global().parallel_for(B * Hq, [&](int64_t w0, int64_t w1, int) {
    std::vector<float> acc(static_cast<size_t>(Dv)), q(static_cast<size_t>(Dk));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / Hq, h = w % Hq, kh = h / group;
      const int64_t q0 = qsl[b], q_len = qsl[b + 1] - qsl[b], ctx = lens[b];
      for (int64_t i = 0; i < q_len; ++i) {
        const int64_t pos = ctx - q_len + i;
        const float* qp = a.q.ptr<float>() + (q0 + i) * a.q.strides[0] + h * a.q.strides[1];
        for (int64_t d = 0; d < Dk; ++d) q[size_t(d)] = qp[d] * a.scale;
        float m = -std::numeric_limits<float>::infinity(), l = 0.f;
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t p = 0; p <= pos; ++p) {
          const int64_t blk = bt[b * bt_stride + p / page], off = p % page;
          const char* kp = static_cast<const char*>(a.k_cache.data) +
                           (blk * a.k_cache.strides[0] + off * a.k_cache.strides[1] + kh * a.k_cache.strides[2]) * es;
          const char* vp = static_cast<const char*>(a.v_cache.data) +
                           (blk * a.v_cache.strides[0] + off * a.v_cache.strides[1] + kh * a.v_cache.strides[2]) * es;
          const float s = dot_row<T>(q.data(), kp, Dk);
          if (s > m) {
            const float corr = std::exp(m - s);
            l *= corr;
            for (int64_t d = 0; d < Dv; ++d) acc[size_t(d)] *= corr;
            m = s;
          }
          const float e = std::exp(s - m);
          l += e;
          axpy_row<T>(e, vp, acc.data(), Dv);
        }
        float* op = a.out.ptr<float>() + (q0 + i) * a.out.strides[0] + h * a.out.strides[1];
        for (int64_t d = 0; d < Dv; ++d) op[d] = acc[size_t(d)] / l;
      }
    }
  }, grain_for(int64_t(std::max(1, a.max_q_len)) * std::max(1, a.max_seq_len) * (Dk + Dv)));
}

void attention(const AttentionArgs& a, Stream&) {
  switch (a.k_cache.dtype) {
    case DType::F32: return attention_typed<DType::F32>(a);
    case DType::BF16: return attention_typed<DType::BF16>(a);
    case DType::F16: return attention_typed<DType::F16>(a);
    case DType::F8E4M3: return attention_typed<DType::F8E4M3>(a);
    default: PL_THROW("cpu.attn_paged: cache dtype {}", dtype_name(a.k_cache.dtype));  // refused by supports
  }
}

bool supports_cache(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F8E4M3; }
}  // namespace

void register_attention_kernels() {
  auto attn_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return c.avx2 && d.dtype[0] == DType::F32 && supports_cache(d.dtype[2]);
  };
  auto kv_ok = [](const OpDesc& d, const DeviceCaps& c) {
    return d.dtype[0] == DType::F32 && supports_cache(d.dtype[2]);
  };
  const auto C = DeviceKind::CPU;
  register_kernel<KvWriteArgs>(Op::KV_WRITE, C, "cpu.kv_write", 10, kv_ok, kv_write);
  register_kernel<AttentionArgs>(Op::ATTN_PREFILL, C, "cpu.attn_paged", 10, attn_ok, attention);
  register_kernel<AttentionArgs>(Op::ATTN_DECODE, C, "cpu.attn_paged", 10, attn_ok, attention);
}

}  // namespace portllm::cpu
