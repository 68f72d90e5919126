#include "ops/sample_row.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/sample_math.h"

namespace portllm::sampling {

void apply_adjustments(std::span<float> l, const SampleRowParams& p, std::span<const int32_t> e) {
  const int64_t V = int64_t(l.size());
  const size_t n = e.size() / kSampleAdjWords;
  for (int32_t kind = kAdjBias; kind <= kAdjCount; ++kind)
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = e[i * kSampleAdjWords], k = e[i * kSampleAdjWords + 1], pay = e[i * kSampleAdjWords + 2];
      if (k != kind || id < 0 || id >= V) continue;
      float& x = l[size_t(id)];
      switch (kind) {
        case kAdjBias: x += bits_float(uint32_t(pay)); break;
        case kAdjMask: x = -std::numeric_limits<float>::infinity(); break;
        case kAdjRepetition: x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty; break;
        default: x -= p.frequency_penalty * float(pay) + p.presence_penalty; break;
      }
    }
}

int32_t argmax_first(std::span<const float> l) {
  size_t best = 0;
  for (size_t i = 1; i < l.size(); ++i)
    if (l[i] > l[best]) best = i;
  return int32_t(best);
}

namespace {
// The shortest rank prefix of ids whose rel mass reaches target (at least one id), leaving ids
// with that prefix in rank order. Only as much of the rank order as the prefix needs is built:
// the next-best chunk is selected (nth_element) and sorted, four times larger each round, so a
// sharp distribution costs one small sort instead of a sort of the whole vocabulary, and the
// prefix is the one a full sort would give.
template <class Better>
void keep_top_p_prefix(std::vector<int32_t>& ids, const std::vector<double>& rel_of, double target, Better better) {
  const size_t n = ids.size();
  size_t sorted = 0, keep = 0, chunk = 64;
  double cum = 0;
  while (true) {
    const size_t upto = std::min(n, sorted + chunk);
    if (upto < n) std::nth_element(ids.begin() + ptrdiff_t(sorted), ids.begin() + ptrdiff_t(upto), ids.end(), better);
    std::sort(ids.begin() + ptrdiff_t(sorted), ids.begin() + ptrdiff_t(upto), better);
    while (keep < upto && (keep == 0 || cum < target)) cum += rel_of[size_t(ids[keep++])];
    sorted = upto;
    if (keep < sorted || sorted == n) break;  // reached inside this chunk, or no ids left
    chunk *= 4;
  }
  ids.resize(keep);
}
}  // namespace

void filter_candidates(std::span<const float> l, float temperature, float min_p, int top_k, float top_p,
                       std::vector<int32_t>& ids, std::vector<double>& rel_out) {
  ids.clear();
  rel_out.clear();
  const int64_t V = int64_t(l.size());
  ids.reserve(size_t(V));  // no regrowth: every step of a 150k-entry push_back series is a fresh mapping
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : l)
    if (x > mx) mx = x;
  if (!std::isfinite(mx)) return;
  const float inv_t = 1.0f / temperature;
  // rel by id, computed once per candidate that needs it: here when min-p filters, else after
  // top-k (per-thread, kept across rows like ids). The exponent in float (as every backend
  // computes it), the exponential in double.
  thread_local std::vector<double> rel_of;
  if (rel_of.size() < size_t(V)) rel_of.resize(size_t(V));
  auto rel = [&](int32_t i) { return std::exp(double((l[size_t(i)] - mx) * inv_t)); };
  const bool by_min_p = min_p > 0;  // false for a NaN min_p too
  for (int64_t i = 0; i < V; ++i) {
    if (!std::isfinite(l[size_t(i)])) continue;
    if (by_min_p) {
      const double r = rel(int32_t(i));
      if (!(r >= double(min_p))) continue;
      rel_of[size_t(i)] = r;
    }
    ids.push_back(int32_t(i));
  }
  // Rank order: larger logit first, lower id first on ties.
  auto better = [&](int32_t a, int32_t b) {
    const float x = l[size_t(a)], y = l[size_t(b)];
    return x != y ? x > y : a < b;
  };
  bool reordered = false;  // ids are in id order until a selection or sort moves them
  if (top_k > 0 && int64_t(top_k) < int64_t(ids.size())) {
    std::nth_element(ids.begin(), ids.begin() + top_k, ids.end(), better);
    ids.resize(size_t(top_k));
    reordered = true;
  }
  if (!by_min_p)
    for (int32_t id : ids) rel_of[size_t(id)] = rel(id);
  if (top_p < 1.0f && !ids.empty()) {
    // The mass is summed in the ids' current order (op_args_sample.h allows any summation order).
    double total = 0;
    for (int32_t id : ids) total += rel_of[size_t(id)];
    keep_top_p_prefix(ids, rel_of, double(top_p) * total, better);
    reordered = true;
  }
  if (reordered) std::sort(ids.begin(), ids.end());  // the draw walks survivors by id
  rel_out.reserve(ids.size());
  for (int32_t id : ids) rel_out.push_back(rel_of[size_t(id)]);
}

int32_t pick_candidate(std::span<const int32_t> ids, std::span<const double> rel, double u) {
  if (ids.empty()) return -1;
  double total = 0;
  for (double x : rel) total += x;
  const double target = u * total;
  double cum = 0;
  size_t last = ids.size() - 1;  // rounding left no crossing: the last survivor with mass
  for (size_t i = 0; i < ids.size(); ++i) {
    cum += rel[i];
    if (cum > target) return ids[i];
    if (rel[i] > 0) last = i;
  }
  return ids[last];
}

int32_t sample_adjusted_row(std::span<const float> row, float temperature, float min_p, int top_k, float top_p,
                            double u) {
  if (temperature < kSamplingEps) return argmax_first(row);
  // Per-thread buffers kept across rows: vocabulary-sized vectors allocated per row were mapped
  // and unmapped by malloc each time, and page faults serialize the threads of a batch.
  thread_local std::vector<int32_t> ids;
  thread_local std::vector<double> rel;
  filter_candidates(row, temperature, min_p, top_k, top_p, ids, rel);
  const int32_t t = pick_candidate(ids, rel, u);
  return t >= 0 ? t : argmax_first(row);
}

}  // namespace portllm::sampling
