// Reference: embedding, rope, silu_mul, add, argmax, softmax, token feed.
#include <cmath>
#include <limits>

#include "ops/op_args.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;
auto any = [](const OpDesc&, const DeviceCaps&) { return true; };

void embed(const EmbedArgs& a, Stream&) {
  const int64_t T = a.out.size(0), H = a.out.size(1), V = a.table.size(0);
  for (int64_t t = 0; t < T; ++t) {
    int32_t id = idx(a.ids, t);
    for (int64_t h = 0; h < H; ++h) put(a.out, t, h, (id >= 0 && id < V) ? at(a.table, id, h) : 0.0);
  }
}

void rope(const RopeArgs& a, Stream&) {
  const int half = a.rot_dim / 2;
  auto apply = [&](const Tensor& x) {
    if (!x.defined()) return;
    for (int64_t t = 0; t < x.size(0); ++t) {
      const int32_t pos = idx(a.positions, t);
      for (int64_t h = 0; h < x.size(1); ++h) {
        for (int i = 0; i < half; ++i) {
          const double c = at(a.cos_sin, pos, i), s = at(a.cos_sin, pos, half + i);
          const int64_t i1 = a.interleaved ? 2 * i : i, i2 = a.interleaved ? 2 * i + 1 : i + half;
          const double x1 = at(x, t, h, i1), x2 = at(x, t, h, i2);
          put(x, t, h, i1, x1 * c - x2 * s);
          put(x, t, h, i2, x2 * c + x1 * s);
        }
      }
    }
  };
  apply(a.q);
  apply(a.k);
}

void silu_mul(const SiluMulArgs& a, Stream&) {
  for (int64_t t = 0; t < a.out.size(0); ++t)
    for (int64_t i = 0; i < a.out.size(1); ++i) {
      const double g = at(a.gate, t, i);
      put(a.out, t, i, g / (1.0 + std::exp(-g)) * at(a.up, t, i));
    }
}

void add(const AddArgs& a, Stream&) {
  for (int64_t r = 0; r < a.out.size(0); ++r)
    for (int64_t c = 0; c < a.out.size(1); ++c) put(a.out, r, c, at(a.a, r, c) + at(a.b, r, c));
}

void argmax(const ArgmaxArgs& a, Stream&) {
  for (int64_t r = 0; r < a.x.size(0); ++r) {
    int64_t best = 0;
    double bv = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < a.x.size(1); ++j) {
      double v = at(a.x, r, j);
      if (v > bv) { bv = v; best = j; }
    }
    static_cast<int32_t*>(a.out.data)[r * a.out.strides[0]] = int32_t(best);
  }
}

void softmax(const SoftmaxArgs& a, Stream&) {
  for (int64_t r = 0; r < a.x.size(0); ++r) {
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < a.x.size(1); ++j) m = std::max(m, at(a.x, r, j));
    for (int64_t j = 0; j < a.x.size(1); ++j) sum += std::exp(at(a.x, r, j) - m);
    for (int64_t j = 0; j < a.x.size(1); ++j) put(a.out, r, j, std::exp(at(a.x, r, j) - m) / sum);
  }
}
void token_feed(const TokenFeedArgs& a, Stream&) {
  const int64_t N = a.out.numel(), n = a.rows.numel(), R = a.sampled.defined() ? a.sampled.numel() : 0;
  for (int64_t k = 0; k < N; ++k) a.out.ptr<int32_t>()[k] = idx(a.staged, k);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t r = idx(a.rows, i);
    if (r >= 0 && r < R) a.out.ptr<int32_t>()[a.ids_offset + i] = idx(a.sampled, r);
  }
}
}  // namespace

void register_elementwise_ref() {
  const auto C = DeviceKind::CPU;
  register_kernel<EmbedArgs>(Op::EMBED, C, "ref.embed", P, any, embed);
  register_kernel<RopeArgs>(Op::ROPE, C, "ref.rope", P, any, rope);
  register_kernel<SiluMulArgs>(Op::SILU_MUL, C, "ref.silu_mul", P, any, silu_mul);
  register_kernel<AddArgs>(Op::ADD, C, "ref.add", P, any, add);
  register_kernel<ArgmaxArgs>(Op::ARGMAX, C, "ref.argmax", P, any, argmax);
  register_kernel<SoftmaxArgs>(Op::SOFTMAX, C, "ref.softmax", P, any, softmax);
  register_kernel<TokenFeedArgs>(Op::TOKEN_FEED, C, "ref.token_feed", P, any, token_feed);
}

}  // namespace portllm::ref
