// The routing math of MOE_ROUTE_SOFTMAX / MOE_ROUTE_GROUPED for one token, in double. Shared
// by the reference and the CPU kernel so both pick identical experts (a near-tie resolved
// differently would be a mismatch, not a rounding difference).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ops/op_args_moe.h"

namespace portllm::ref {

// logits[E] -> ids[top_k] (best first; ties: lower id), weights[top_k].
inline void moe_route_row(const MoeRouteArgs& a, const double* logits, const double* bias, int64_t E,
                          int32_t* ids, float* weights) {
  std::vector<double> score(static_cast<size_t>(E)), sel(static_cast<size_t>(E));
  if (a.scoring == MoeScoring::Sigmoid) {
    for (int64_t e = 0; e < E; ++e) score[size_t(e)] = 1.0 / (1.0 + std::exp(-logits[e]));
  } else {
    const double m = *std::max_element(logits, logits + E);
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += (score[size_t(e)] = std::exp(logits[e] - m));
    for (auto& s : score) s /= sum;
  }
  const double ninf = -std::numeric_limits<double>::infinity();
  for (int64_t e = 0; e < E; ++e) {
    const double v = score[size_t(e)] + (bias ? bias[e] : 0.0);
    sel[size_t(e)] = std::isnan(v) ? ninf : v;  // NaN ranks below every number (MoeRouteArgs)
  }
  // Best-first order of candidates with ties broken by lower index.
  auto best_first = [](const std::vector<double>& v) {
    std::vector<int64_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return v[size_t(x)] > v[size_t(y)]; });
    return order;
  };
  if (a.n_group > 1) {
    const int64_t G = a.n_group, per = E / G;
    std::vector<double> gscore(static_cast<size_t>(G));
    for (int64_t g = 0; g < G; ++g) {
      std::vector<double> grp(sel.begin() + g * per, sel.begin() + (g + 1) * per);
      std::sort(grp.begin(), grp.end(), std::greater<double>());
      gscore[size_t(g)] = a.group_score == MoeGroupScore::Top2Sum && per >= 2 ? grp[0] + grp[1] : grp[0];
    }
    const auto gorder = best_first(gscore);
    std::vector<bool> keep(static_cast<size_t>(G), false);
    for (int64_t i = 0; i < std::min<int64_t>(a.topk_group, G); ++i) keep[size_t(gorder[size_t(i)])] = true;
    for (int64_t e = 0; e < E; ++e)
      if (!keep[size_t(e / per)]) sel[size_t(e)] = ninf;
  }
  const auto order = best_first(sel);
  double sum = 0;
  for (int j = 0; j < a.top_k; ++j) sum += score[size_t(order[size_t(j)])];
  for (int j = 0; j < a.top_k; ++j) {
    const int64_t e = order[size_t(j)];
    ids[j] = int32_t(e);
    double w = score[size_t(e)];
    if (a.renormalize) w /= sum;
    weights[j] = float(w * a.scale);
  }
}

}  // namespace portllm::ref
