// Teacher-forced parity of a fixture model on the CPU against transformers' logits, shared by the
// model tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/single_sequence.h"

#include "model_fixtures.h"

namespace portllm::testing {

// Max |logit - reference| feeding the reference tokens `chunk` at a time (0: all at once), with a
// KV cache of dtype kv; infinite when a logit is not finite.
inline double max_logit_diff(const std::string& name, int chunk, DType kv = DType::F32) {
  OpContext ctx(cpu());
  ModelLoadOptions lo;
  lo.path = fixture(name);
  auto model = load_model(lo, ctx);
  Reference ref = read_reference(lo.path);
  const int64_t T = int64_t(ref.tokens.size()), V = ref.logits.size(1);
  SingleSequence seq(*model, ctx, T, 16, kv);
  double diff = 0;
  const int64_t step = chunk > 0 ? chunk : T;
  for (int64_t s = 0; s < T; s += step) {
    const int64_t n = std::min(step, T - s);
    Tensor l = seq.feed(std::vector<int32_t>(ref.tokens.begin() + s, ref.tokens.begin() + s + n), true);
    for (int64_t i = 0; i < n * V; ++i) {
      const float g = l.ptr<float>()[i], r = ref.logits.ptr<float>()[s * V + i];
      diff = std::isfinite(g) ? std::max(diff, double(std::abs(g - r))) : INFINITY;
    }
  }
  return diff;
}

}  // namespace portllm::testing
