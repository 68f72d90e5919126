// build_forward_batch's layout (runtime/batch_builder.h) and the mixed-step attention split it
// enables (model/layers/attention.cpp): one-token sequences are laid out first, logits keep the
// caller's order, and a step that mixes decode tokens with prefill chunks gives the same logits
// as each sequence run on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.h"
#include "ops/ops.h"
#include "runtime/batch_builder.h"
#include "runtime/kv_cache.h"

#include "../common/model_fixtures.h"

namespace portllm {
namespace {

using testing::cpu;
using testing::fixture;

constexpr int64_t kPage = 16;

std::vector<int32_t> ints(const Tensor& t) {
  if (!t.defined()) return {};
  const int32_t* p = t.ptr<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

SeqWork work(std::vector<int32_t> tokens, int64_t start, std::vector<int32_t> blocks, SeqWork::Logits lg) {
  SeqWork w;
  w.tokens = std::move(tokens);
  w.start_pos = start;
  w.block_table = std::move(blocks);
  w.logits = lg;
  return w;
}

TEST(BatchBuilder, DecodeSequencesFirstLogitsInGivenOrder) {
  OpContext ctx{cpu()};
  using L = SeqWork::Logits;
  // Given order: a 3-token chunk, a decode token, a 2-token chunk (all logits), a decode token
  // without logits.
  const std::vector<SeqWork> seqs = {work({10, 11, 12}, 5, {0}, L::Last), work({20}, 7, {1}, L::Last),
                                     work({30, 31}, 0, {2}, L::All), work({40}, 3, {3}, L::None)};
  const ForwardBatch b = build_forward_batch(ctx, seqs, kPage);
  EXPECT_EQ(b.num_decode_seqs, 2);
  // Layout: sequences 1, 3, 0, 2.
  EXPECT_EQ(ints(b.token_ids), (std::vector<int32_t>{20, 40, 10, 11, 12, 30, 31}));
  EXPECT_EQ(ints(b.positions), (std::vector<int32_t>{7, 3, 5, 6, 7, 0, 1}));
  EXPECT_EQ(b.host_seq_lens, (std::vector<int32_t>{8, 4, 8, 2}));
  EXPECT_EQ(b.host_query_start_loc, (std::vector<int32_t>{0, 1, 2, 5, 7}));
  EXPECT_EQ(ints(b.block_tables), (std::vector<int32_t>{1, 3, 0, 2}));
  EXPECT_EQ(ints(b.slot_mapping), (std::vector<int32_t>{16 + 7, 48 + 3, 5, 6, 7, 32, 33}));
  // Logit rows in the given order: sequence 0's last row, sequence 1's row, sequence 2's rows.
  EXPECT_EQ(ints(b.logits_indices), (std::vector<int32_t>{4, 0, 5, 6}));
  // The prefill part [2, 4) as a batch of its own.
  EXPECT_EQ(ints(b.prefill_query_start_loc), (std::vector<int32_t>{0, 3, 5}));
  EXPECT_EQ(b.host_prefill_query_start_loc, (std::vector<int32_t>{0, 3, 5}));
  // The decode part's work order, longest context first: layout rows 0 (8 keys), 1 (4).
  EXPECT_EQ(ints(b.decode_order), (std::vector<int32_t>{0, 1}));
}

TEST(BatchBuilder, DecodeOrderLongestContextFirstTiesInBatchOrder) {
  OpContext ctx{cpu()};
  using L = SeqWork::Logits;
  const ForwardBatch d = build_forward_batch(ctx,
                                             {work({1}, 4, {0}, L::Last), work({2}, 30, {1, 2}, L::Last),
                                              work({3}, 9, {3}, L::Last), work({4}, 4, {4}, L::Last)},
                                             kPage);
  EXPECT_EQ(ints(d.decode_order), (std::vector<int32_t>{1, 2, 0, 3}));
  const int32_t lens[] = {5, 7, 7, 1, 9};
  EXPECT_EQ(ops::longest_first(lens, 5), (std::vector<int32_t>{4, 1, 2, 0, 3}));
  EXPECT_TRUE(ops::longest_first(lens, 0).empty());
  // A step without decode sequences has no work order.
  EXPECT_FALSE(build_forward_batch(ctx, {work({1, 2}, 0, {0}, L::Last)}, kPage).decode_order.defined());
}

TEST(BatchBuilder, UnmixedStepsKeepTheirOrder) {
  OpContext ctx{cpu()};
  using L = SeqWork::Logits;
  const ForwardBatch d = build_forward_batch(ctx, {work({1}, 4, {0}, L::Last), work({2}, 9, {1}, L::Last)}, kPage);
  EXPECT_EQ(d.num_decode_seqs, 2);
  EXPECT_EQ(ints(d.token_ids), (std::vector<int32_t>{1, 2}));
  EXPECT_FALSE(d.prefill_query_start_loc.defined());
  EXPECT_TRUE(d.host_prefill_query_start_loc.empty());
  const ForwardBatch p = build_forward_batch(ctx, {work({1, 2}, 0, {0}, L::Last), work({3, 4}, 0, {1}, L::Last)}, kPage);
  EXPECT_EQ(p.num_decode_seqs, 0);
  EXPECT_EQ(ints(p.logits_indices), (std::vector<int32_t>{1, 3}));
  EXPECT_FALSE(p.prefill_query_start_loc.defined());
}

// A mixed step (a prefill chunk over a cached prefix, a new prompt, two decode tokens, given in
// an interleaved order) against each sequence stepped alone, on the same cache contents.
void expect_mixed_step_matches_single_steps(const std::string& model_name) {
  OpContext ctx{cpu()};
  ModelLoadOptions lo;
  lo.path = fixture(model_name);
  std::unique_ptr<Model> model = load_model(lo, ctx);
  KvCacheConfig kc;
  kc.page_size = kPage;
  kc.num_blocks = 16;
  kc.num_state_slots = 4;
  KvCache mixed(ctx, model->cache_spec(), kc), single(ctx, model->cache_spec(), kc);
  const bool stateful = mixed.has_state_layers();
  const int64_t V = model->config().vocab_size;
  auto forward = [&](const std::vector<SeqWork>& seqs, KvCache& cache) {
    const ForwardBatch b = build_forward_batch(ctx, seqs, kPage);
    Tensor logits = ctx.device->empty(DType::F32, {int64_t(b.num_logits()), V});
    model->forward(ctx, b, cache.layers(), logits);
    return std::vector<float>(logits.ptr<float>(), logits.ptr<float>() + logits.numel());
  };
  auto toks = [](int n, int seed) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(int32_t((seed * 37 + i * 11 + 3) % 200));
    return t;
  };
  using L = SeqWork::Logits;
  auto slotted = [&](SeqWork w, int slot) {  // hybrid models: sequence s keeps its state in slot s
    w.state_slot = stateful ? slot : -1;
    return w;
  };
  // Cached prefixes: sequence 0 has 20 tokens, 1 has 9, 2 has 13 (blocks 4 s ..).
  const std::vector<SeqWork> prefix = {slotted(work(toks(20, 0), 0, {0, 1}, L::None), 0),
                                       slotted(work(toks(9, 1), 0, {4}, L::None), 1),
                                       slotted(work(toks(13, 2), 0, {8}, L::None), 2)};
  forward(prefix, mixed);
  forward(prefix, single);
  const std::vector<SeqWork> step = {slotted(work(toks(6, 3), 13, {8, 9}, L::Last), 2),  // chunk over a prefix
                                     slotted(work({7}, 20, {0, 1}, L::Last), 0),         // decode
                                     slotted(work(toks(5, 4), 0, {12}, L::Last), 3),     // new prompt
                                     slotted(work({9}, 9, {4}, L::Last), 1)};            // decode
  const std::vector<float> got = forward(step, mixed);
  ASSERT_EQ(got.size(), size_t(4 * V));
  for (size_t s = 0; s < step.size(); ++s) {
    const std::vector<float> want = forward({step[s]}, single);
    float diff = 0.f;
    for (int64_t j = 0; j < V; ++j) diff = std::max(diff, std::fabs(got[s * size_t(V) + size_t(j)] - want[size_t(j)]));
    EXPECT_LT(diff, 1e-4f) << model_name << " sequence " << s;
  }
}

TEST(BatchBuilder, MixedStepMatchesSingleStepsDense) { expect_mixed_step_matches_single_steps("qwen3-tiny"); }
TEST(BatchBuilder, MixedStepMatchesSingleStepsHybrid) { expect_mixed_step_matches_single_steps("qwen35text-tiny"); }

}  // namespace
}  // namespace portllm
