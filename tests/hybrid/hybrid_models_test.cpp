// Qwen3-Next / Qwen3.5 / Qwen3.5-MoE hybrids on the CPU against transformers' reference logits:
// whole prefill, chunked prefill (chunks of 3: chunked delta rule with carried conv and
// recurrent state) and token by token (the decode ops). Batched = sequential: several sequences
// in one ragged batch, each in its own state slot, one of them reusing a slot that holds a
// finished sequence's state (which has_initial_state = 0 must ignore).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "runtime/batch_builder.h"
#include "runtime/kv_cache.h"
#include "runtime/single_sequence.h"

#include "../common/fixture_parity.h"
#include "../common/model_fixtures.h"

using namespace portllm;
using namespace portllm::testing;

namespace {
const char* const kFixtures[] = {"qwen35text-tiny", "qwen3next-tiny", "qwen35moetext-tiny"};
}  // namespace

TEST(HybridModels, LayerKindsAndStateSpec) {
  OpContext ctx(cpu());
  ModelLoadOptions lo;
  lo.path = fixture("qwen3next-tiny");
  auto model = load_model(lo, ctx);
  auto spec = model->cache_spec();
  ASSERT_EQ(spec.size(), 4u);  // layer_types: linear, full, linear, full
  using K = LayerCacheSpec::Kind;
  EXPECT_EQ(spec[0].kind, K::Recurrent);
  EXPECT_EQ(spec[1].kind, K::PagedKV);
  EXPECT_EQ(spec[2].kind, K::Recurrent);
  EXPECT_EQ(spec[3].kind, K::PagedKV);
  // conv state [K-1, 2*Hk*Dk + Hv*Dv] = [3, 128]; delta-rule state [Hv, Dk, Dv] = [4, 16, 16].
  ASSERT_EQ(spec[0].state_shapes.size(), 2u);
  EXPECT_EQ(spec[0].state_shapes[0], (std::vector<int64_t>{3, 128}));
  EXPECT_EQ(spec[0].state_shapes[1], (std::vector<int64_t>{4, 16, 16}));
  EXPECT_EQ(spec[0].state_bytes(), (3 * 128 + 4 * 16 * 16) * 4);
  EXPECT_EQ(spec[1].num_kv_heads, 2);
  EXPECT_EQ(spec[1].head_dim_k, 32);
}

TEST(HybridModels, MatchTransformersWholePrefill) {
  for (const char* f : kFixtures) EXPECT_LE(max_logit_diff(f, 0), 1e-3) << f;
}

TEST(HybridModels, ChunkedPrefillMatches) {
  for (const char* f : kFixtures) EXPECT_LE(max_logit_diff(f, 3), 1e-3) << f;
}

TEST(HybridModels, TokenByTokenDecodeMatches) {
  for (const char* f : kFixtures) EXPECT_LE(max_logit_diff(f, 1), 1e-3) << f;
}

// Three sequences (prefixes of the reference tokens of different lengths) run together in
// ragged batches - prefill, then decode steps - must give the logits each gives alone. Slot 1
// first serves a throwaway sequence, so the real one that reuses it starts over stale state.
TEST(HybridModels, BatchedEqualsSequential) {
  for (const char* name : {"qwen35text-tiny", "qwen3next-tiny"}) {
    OpContext ctx(cpu());
    ModelLoadOptions lo;
    lo.path = fixture(name);
    auto model = load_model(lo, ctx);
    Reference ref = read_reference(lo.path);
    const int64_t V = model->config().vocab_size, page = 16;
    const std::vector<int> prompt = {5, 11, 2};
    const int decode_steps = 4;

    // Sequential: each sequence alone; last-token logits after its prompt and after each step.
    std::vector<std::vector<std::vector<float>>> want(prompt.size());
    for (size_t s = 0; s < prompt.size(); ++s) {
      SingleSequence seq(*model, ctx, 64, page);
      std::vector<int32_t> feed(ref.tokens.begin() + long(s), ref.tokens.begin() + long(s) + prompt[s]);
      for (int step = 0; step <= decode_steps; ++step) {
        Tensor l = seq.feed(feed, false);
        want[s].emplace_back(l.ptr<float>(), l.ptr<float>() + V);
        feed = {ref.tokens[size_t(s + prompt[s] + step)]};
      }
    }

    KvCacheConfig kc;
    kc.page_size = page;
    kc.num_blocks = 16;
    kc.num_state_slots = 3;
    KvCache cache(ctx, model->cache_spec(), kc);
    const std::vector<int32_t> slots = {2, 1, 0};
    // Dirty slot 1 with another sequence's state.
    {
      SeqWork junk;
      junk.tokens = {7, 8, 9, 10, 11, 12};
      junk.block_table = {15};
      junk.state_slot = 1;
      Tensor l = ctx.device->empty(DType::F32, {1, V});
      model->forward(ctx, build_forward_batch(ctx, {junk}, page), cache.layers(), l);
    }
    std::vector<int64_t> len(prompt.size(), 0);
    for (int step = 0; step <= decode_steps; ++step) {
      std::vector<SeqWork> work;
      for (size_t s = 0; s < prompt.size(); ++s) {
        SeqWork w;
        if (step == 0) w.tokens.assign(ref.tokens.begin() + long(s), ref.tokens.begin() + long(s) + prompt[s]);
        else w.tokens = {ref.tokens[size_t(s + prompt[s] + step - 1)]};
        w.start_pos = len[s];
        w.block_table = {int32_t(s * 4), int32_t(s * 4 + 1)};
        w.state_slot = slots[s];
        work.push_back(w);
        len[s] += int64_t(w.tokens.size());
      }
      ForwardBatch b = build_forward_batch(ctx, work, page);
      Tensor logits = ctx.device->empty(DType::F32, {int64_t(prompt.size()), V});
      model->forward(ctx, b, cache.layers(), logits);
      for (size_t s = 0; s < prompt.size(); ++s) {
        double diff = 0;
        for (int64_t j = 0; j < V; ++j)
          diff = std::max(diff, double(std::abs(logits.ptr<float>()[int64_t(s) * V + j] - want[s][size_t(step)][size_t(j)])));
        EXPECT_LE(diff, 1e-4) << name << " sequence " << s << " step " << step;
      }
    }
  }
}
