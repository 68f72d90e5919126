// Reference: paged KV write and causal GQA attention over the paged cache (double precision,
// two passes: max then exp-sum), one query at a time. Any float cache dtype; an fp8 one stores
// saturating at +-448 (store_satfinite).
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_args.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;

// Element of a 4-D cache [NB, page, H, D] at (slot, h, d).
double cache_at(const Tensor& c, int64_t slot, int64_t h, int64_t d) {
  const int64_t page = c.size(1);
  const int64_t off = (slot / page) * c.strides[0] + (slot % page) * c.strides[1] +
                      h * c.strides[2] + d * c.strides[3];
  return load(c.dtype, c.data, off);
}
void cache_put(const Tensor& c, int64_t slot, int64_t h, int64_t d, double v) {
  const int64_t page = c.size(1);
  store_satfinite(c.dtype, c.data,
        (slot / page) * c.strides[0] + (slot % page) * c.strides[1] + h * c.strides[2] + d * c.strides[3], v);
}

void kv_write(const KvWriteArgs& a, Stream&) {
  for (int64_t t = 0; t < a.k.size(0); ++t) {
    const int32_t slot = idx(a.slot_mapping, t);
    if (slot < 0) continue;
    for (int64_t h = 0; h < a.k.size(1); ++h) {
      for (int64_t d = 0; d < a.k.size(2); ++d) cache_put(a.k_cache, slot, h, d, at(a.k, t, h, d));
      for (int64_t d = 0; d < a.v.size(2); ++d) cache_put(a.v_cache, slot, h, d, at(a.v, t, h, d));
    }
  }
}

void attention(const AttentionArgs& a, Stream&) {
  const int64_t B = a.seq_lens.size(0), Hq = a.q.size(1), Hkv = a.k_cache.size(2);
  const int64_t Dk = a.q.size(2), Dv = a.v_cache.size(3), page = a.k_cache.size(1);
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = idx(a.query_start_loc, b), q1 = idx(a.query_start_loc, b + 1);
    const int64_t ctx = idx(a.seq_lens, b), q_len = q1 - q0;
    auto slot_of = [&](int64_t p) {
      const int32_t blk = static_cast<const int32_t*>(a.block_tables.data)[b * a.block_tables.strides[0] + p / page];
      return int64_t(blk) * page + p % page;
    };
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t pos = ctx - q_len + i;  // this query's position; it sees keys 0..pos
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        std::vector<double> s(static_cast<size_t>(pos + 1));
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t p = 0; p <= pos; ++p) {
          double dot = 0;
          const int64_t slot = slot_of(p);
          for (int64_t d = 0; d < Dk; ++d) dot += at(a.q, q0 + i, h, d) * cache_at(a.k_cache, slot, kh, d);
          s[size_t(p)] = dot * a.scale;
          m = std::max(m, s[size_t(p)]);
        }
        double sum = 0;
        for (auto& v : s) sum += (v = std::exp(v - m));
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t p = 0; p <= pos; ++p) acc += s[size_t(p)] * cache_at(a.v_cache, slot_of(p), kh, d);
          put(a.out, q0 + i, h, d, acc / sum);
        }
      }
    }
  }
}
}  // namespace

void register_attention_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  const auto C = DeviceKind::CPU;
  // A KV cache holds floats (f32/f16/bf16/f8_e4m3): an integer cache has no kernel anywhere, so
  // KvCache refuses it when the cache is made.
  auto float_cache = [](const OpDesc& d, const DeviceCaps&) { return dtype_is_float(d.dtype[2]); };
  register_kernel<KvWriteArgs>(Op::KV_WRITE, C, "ref.kv_write", P, float_cache, kv_write);
  register_kernel<AttentionArgs>(Op::ATTN_PREFILL, C, "ref.attn_prefill", P, any, attention);
  register_kernel<AttentionArgs>(Op::ATTN_DECODE, C, "ref.attn_decode", P, any, attention);
}

}  // namespace portllm::ref
