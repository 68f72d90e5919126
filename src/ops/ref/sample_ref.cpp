// Reference SAMPLE: the definition in ops/op_args_sample.h written out plainly (full sort of each
// row in rank order, double sums), independent of the CPU kernel's partial selection.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ops/op_args_sample.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"
#include "ops/sample_math.h"

namespace portllm::ref {

namespace {

int32_t first_max(const std::vector<float>& l) {
  int32_t best = 0;
  for (int32_t i = 1; i < int32_t(l.size()); ++i)
    if (l[size_t(i)] > l[size_t(best)]) best = i;
  return best;
}

int32_t sample_one(std::vector<float>& l, const SampleRowParams& p) {
  if (p.temperature < sampling::kSamplingEps) return first_max(l);
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : l) mx = std::max(mx, x);  // std::max skips a NaN x here (x compared second)
  if (!std::isfinite(mx)) return first_max(l);
  const float inv_t = 1.0f / p.temperature;
  std::vector<int32_t> rank;
  for (int32_t i = 0; i < int32_t(l.size()); ++i)
    if (std::isfinite(l[size_t(i)])) rank.push_back(i);
  std::sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
    return l[size_t(a)] != l[size_t(b)] ? l[size_t(a)] > l[size_t(b)] : a < b;
  });
  auto rel = [&](int32_t i) { return std::exp(double((l[size_t(i)] - mx) * inv_t)); };
  if (p.min_p > 0) std::erase_if(rank, [&](int32_t i) { return !(rel(i) >= double(p.min_p)); });
  if (p.top_k > 0 && size_t(p.top_k) < rank.size()) rank.resize(size_t(p.top_k));
  if (p.top_p < 1.f) {
    double total = 0;
    for (int32_t i : rank) total += rel(i);
    double cum = 0;
    size_t keep = 0;
    while (keep < rank.size() && (keep == 0 || cum < double(p.top_p) * total)) cum += rel(rank[keep++]);
    rank.resize(keep);
  }
  if (rank.empty()) return first_max(l);
  std::sort(rank.begin(), rank.end());
  double total = 0;
  for (int32_t i : rank) total += rel(i);
  const double target = sampling::uniform_at(p.seed(), p.counter()) * total;
  double cum = 0;
  int32_t last = rank.back();
  for (int32_t i : rank) {
    const double r = rel(i);
    cum += r;
    if (cum > target) return i;
    if (r > 0) last = i;
  }
  return last;
}

void sample(const SampleArgs& a, Stream&) {
  const int64_t B = a.logits.size(0), V = a.logits.size(1);
  for (int64_t r = 0; r < B; ++r) {
    const SampleRowParams p = a.row_params(r);
    int32_t* out = static_cast<int32_t*>(a.out.data) + r * a.out.strides[0];
    if (p.flags & kSampleSkipRow) {
      *out = -1;
      continue;
    }
    float* row = static_cast<float*>(a.logits.data) + r * a.logits.strides[0];
    std::vector<float> l(row, row + V);
    if (a.adj_offsets.defined()) {
      const int32_t* off = static_cast<const int32_t*>(a.adj_offsets.data);
      const int32_t* e = static_cast<const int32_t*>(a.adj.data);
      for (int32_t kind = kAdjBias; kind <= kAdjCount; ++kind)
        for (int32_t i = off[r]; i < off[r + 1]; ++i) {
          const int32_t id = e[i * kSampleAdjWords], k = e[i * kSampleAdjWords + 1], pay = e[i * kSampleAdjWords + 2];
          if (k != kind || id < 0 || id >= V) continue;
          float& x = l[size_t(id)];
          if (kind == kAdjBias) x += sampling::bits_float(uint32_t(pay));
          else if (kind == kAdjMask) x = -std::numeric_limits<float>::infinity();
          else if (kind == kAdjRepetition) x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
          else x -= p.frequency_penalty * float(pay) + p.presence_penalty;
        }
    }
    *out = sample_one(l, p);
    std::copy(l.begin(), l.end(), row);
  }
}

}  // namespace

void register_sample_ref() {
  register_kernel<SampleArgs>(Op::SAMPLE, DeviceKind::CPU, "ref.sample", KernelInfo::kReferencePriority,
                              [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; }, sample);
}

}  // namespace portllm::ref
