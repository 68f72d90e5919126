// Reference absorbed MLA attention over the paged latent cache: double precision, two passes
// (max, then exp-sum), one query head at a time.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_args_moe.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;

void mla_attention(const MlaAttentionArgs& a, Stream&) {
  const int64_t B = a.seq_lens.size(0), H = a.q_latent.size(1);
  const int64_t Dc = a.q_latent.size(2), Dr = a.q_pe.size(2), page = a.latent_cache.size(1);
  const Tensor& c = a.latent_cache;
  auto cache_at = [&](int64_t slot, int64_t d) {
    return load(c.dtype, c.data, (slot / page) * c.strides[0] + (slot % page) * c.strides[1] + d * c.strides[3]);
  };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = idx(a.query_start_loc, b), q_len = idx(a.query_start_loc, b + 1) - q0;
    const int64_t ctx = idx(a.seq_lens, b);
    auto slot_of = [&](int64_t p) {
      const int32_t blk = static_cast<const int32_t*>(a.block_tables.data)[b * a.block_tables.strides[0] + p / page];
      return int64_t(blk) * page + p % page;
    };
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t pos = ctx - q_len + i;
      for (int64_t h = 0; h < H; ++h) {
        std::vector<double> s(static_cast<size_t>(pos + 1));
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t p = 0; p <= pos; ++p) {
          const int64_t slot = slot_of(p);
          double dot = 0;
          for (int64_t d = 0; d < Dc; ++d) dot += at(a.q_latent, q0 + i, h, d) * cache_at(slot, d);
          for (int64_t d = 0; d < Dr; ++d) dot += at(a.q_pe, q0 + i, h, d) * cache_at(slot, Dc + d);
          s[size_t(p)] = dot * a.scale;
          m = std::max(m, s[size_t(p)]);
        }
        double sum = 0;
        for (auto& v : s) sum += (v = std::exp(v - m));
        for (int64_t d = 0; d < Dc; ++d) {
          double acc = 0;
          for (int64_t p = 0; p <= pos; ++p) acc += s[size_t(p)] * cache_at(slot_of(p), d);
          put(a.out, q0 + i, h, d, acc / sum);
        }
      }
    }
  }
}
}  // namespace

void register_mla_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  register_kernel<MlaAttentionArgs>(Op::MLA_ATTENTION, DeviceKind::CPU, "ref.mla_attention", P, any, mla_attention);
}

}  // namespace portllm::ref
