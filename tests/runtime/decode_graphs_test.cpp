// Decode graphs without a GPU (runtime/decode_graphs.h). The CPU cannot capture, but everything a
// replay reads can be checked here: which batch sizes and cache layouts take graphs, the static
// inputs DecodeGraphs::stage() fills (against build_forward_batch, the eager path, for an MLA and
// a hybrid model), and the staged batch run eagerly on the CPU, padding included, against eager
// steps. Replay itself is compared with eager decoding on a GPU by `scripts/gpu-check.sh graphs`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.h"
#include "runtime/batch_builder.h"
#include "runtime/decode_graphs.h"
#include "runtime/kv_cache.h"

#include "../common/model_fixtures.h"

namespace portllm {
namespace {

using testing::cpu;
using testing::fixture;

constexpr int64_t kPage = 16, kMaxModelLen = 64, kBlocksPerSeq = kMaxModelLen / kPage;

LayerCacheSpec spec_of(LayerCacheSpec::Kind k) {
  LayerCacheSpec s;
  s.kind = k;
  return s;
}

std::vector<int32_t> ints(const Tensor& t) {
  if (!t.defined()) return {};
  const int32_t* p = t.ptr<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

TEST(DecodeGraphs, DefaultSizesStopAtMaxNumSeqs) {
  EXPECT_EQ(DecodeGraphs::default_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(DecodeGraphs::default_sizes(20), (std::vector<int>{1, 2, 4, 8, 16}));
  const auto all = DecodeGraphs::default_sizes(1024);
  EXPECT_EQ(all.front(), 1);
  EXPECT_EQ(all.back(), 256);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST(DecodeGraphs, EveryCacheKindTakesGraphs) {
  using K = LayerCacheSpec::Kind;
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::PagedKV), spec_of(K::PagedKV)}));
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::PagedKV), spec_of(K::None)}));
  // MLA and Gated DeltaNet kernels plan from max_q_len / max_seq_len and read per-sequence data
  // (and state slots) on the device, so a replay with new inputs is right.
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::PagedLatent), spec_of(K::PagedLatent)}));
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::Recurrent), spec_of(K::PagedKV)}));
  EXPECT_FALSE(DecodeGraphs::supported({spec_of(K(99))}));  // an unknown kind stays eager
}

// A model on the CPU with two identical caches: one for eager steps, one for staged graph inputs.
struct Fixture {
  OpContext ctx{cpu()};
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> eager_cache, graph_cache;
  bool stateful = false;

  explicit Fixture(const std::string& name) {
    ModelLoadOptions lo;
    lo.path = fixture(name);
    model = load_model(lo, ctx);
    KvCacheConfig kc;
    kc.page_size = kPage;
    kc.num_blocks = 4 * kBlocksPerSeq;
    kc.num_state_slots = 4;
    eager_cache = std::make_unique<KvCache>(ctx, model->cache_spec(), kc);
    graph_cache = std::make_unique<KvCache>(ctx, model->cache_spec(), kc);
    stateful = eager_cache->has_state_layers();
  }
  int64_t vocab() const { return model->config().vocab_size; }
  std::vector<float> forward(const ForwardBatch& b, KvCache& cache) {
    Tensor logits = ctx.device->empty(DType::F32, {int64_t(b.num_logits()), vocab()});
    model->forward(ctx, b, cache.layers(), logits);
    return std::vector<float>(logits.ptr<float>(), logits.ptr<float>() + logits.numel());
  }
};

// Sequence s owns blocks [4 s, 4 s + 4) in a scrambled order (kernels must go through the
// table) and state slot 3 - s.
SeqWork seq(int s, std::vector<int32_t> tokens, int64_t start, bool stateful) {
  static_assert(kBlocksPerSeq == 4, "j * 3 % 4 permutes a sequence's blocks");
  SeqWork w;
  w.tokens = std::move(tokens);
  w.start_pos = start;
  for (int64_t j = 0; j < (start + int64_t(w.tokens.size()) + kPage - 1) / kPage; ++j)
    w.block_table.push_back(int32_t(s * kBlocksPerSeq + j * 3 % kBlocksPerSeq));
  w.state_slot = stateful ? 3 - s : -1;
  return w;
}

// Prefill of lens[s] tokens per sequence, the same in both caches.
void prefill(Fixture& f, const std::vector<int>& lens) {
  std::vector<SeqWork> work;
  for (size_t s = 0; s < lens.size(); ++s) {
    std::vector<int32_t> toks;
    for (int i = 0; i < lens[s]; ++i) toks.push_back(int32_t((s * 37 + size_t(i) * 11 + 3) % 500));
    work.push_back(seq(int(s), toks, 0, f.stateful));
  }
  const ForwardBatch b = build_forward_batch(f.ctx, work, kPage);
  f.forward(b, *f.eager_cache);
  f.forward(b, *f.graph_cache);
}

// One decode step: sequence s at position pos[s] (pos 0: a one-token prompt, no initial state).
std::vector<SeqWork> decode_step(const Fixture& f, const std::vector<int64_t>& pos, int step) {
  std::vector<SeqWork> work;
  for (size_t s = 0; s < pos.size(); ++s)
    work.push_back(seq(int(s), {int32_t((s * 13 + size_t(step) * 7 + 1) % 500)}, pos[s], f.stateful));
  return work;
}

// stage() must hold what build_forward_batch uploads, row by row, plus inert padding rows.
void expect_same_inputs(const ForwardBatch& g, const ForwardBatch& e, int size) {
  const int n = e.num_seqs;
  ASSERT_EQ(g.num_seqs, size);
  ASSERT_EQ(g.num_tokens, size);
  EXPECT_EQ(g.max_q_len, 1);
  EXPECT_EQ(g.max_seq_len, kMaxModelLen);  // the capture-time upper bound
  EXPECT_TRUE(g.host_seq_lens.empty() && g.host_query_start_loc.empty() && g.host_positions.empty() &&
              g.host_state_slots.empty() && g.host_has_initial_state.empty())
      << "a captured batch must not carry host mirrors: a replay would not refresh them";
  auto ge = [](const Tensor& t) { return ints(t); };
  const auto ids = ge(g.token_ids), pos = ge(g.positions), slots = ge(g.slot_mapping), lens = ge(g.seq_lens),
             qsl = ge(g.query_start_loc), rows = ge(g.logits_indices), st = ge(g.state_slots),
             init = ge(g.has_initial_state), tables = ge(g.block_tables);
  const auto e_ids = ge(e.token_ids), e_pos = ge(e.positions), e_slots = ge(e.slot_mapping), e_lens = ge(e.seq_lens),
             e_qsl = ge(e.query_start_loc), e_rows = ge(e.logits_indices), e_st = ge(e.state_slots),
             e_init = ge(e.has_initial_state), e_tables = ge(e.block_tables);
  ASSERT_EQ(g.block_tables.size(1), kBlocksPerSeq);
  const int64_t ew = e.block_tables.size(1);
  for (int i = 0; i < size; ++i) {
    const size_t u = size_t(i);
    EXPECT_EQ(qsl[u], i);
    EXPECT_EQ(rows[u], i);
    if (i < n) {
      EXPECT_EQ(ids[u], e_ids[u]) << "row " << i;
      EXPECT_EQ(pos[u], e_pos[u]) << "row " << i;
      EXPECT_EQ(slots[u], e_slots[u]) << "row " << i;
      EXPECT_EQ(lens[u], e_lens[u]) << "row " << i;
      EXPECT_EQ(qsl[u + 1], e_qsl[u + 1]) << "row " << i;
      EXPECT_EQ(rows[u], e_rows[u]) << "row " << i;
      EXPECT_EQ(st[u], e_st[u]) << "row " << i;
      EXPECT_EQ(init[u], e_init[u]) << "row " << i;
      for (int64_t j = 0; j < kBlocksPerSeq; ++j)
        EXPECT_EQ(tables[u * kBlocksPerSeq + size_t(j)], j < ew ? e_tables[u * size_t(ew) + size_t(j)] : 0)
            << "row " << i << " block " << j;
    } else {  // padding: one cached position of block 0, no KV write, no state
      EXPECT_EQ(slots[u], -1);
      EXPECT_EQ(lens[u], 1);
      EXPECT_EQ(pos[u], 0);
      EXPECT_EQ(st[u], -1);
      EXPECT_EQ(init[u], 0);
      for (int64_t j = 0; j < kBlocksPerSeq; ++j) EXPECT_EQ(tables[u * kBlocksPerSeq + size_t(j)], 0);
    }
  }
  EXPECT_EQ(qsl[size_t(size)], size);
  // Every row is a decode, and the work order is the eager batch's with the padding rows last.
  EXPECT_EQ(g.num_decode_seqs, size);
  std::vector<int32_t> order = ge(e.decode_order);
  for (int i = n; i < size; ++i) order.push_back(i);
  EXPECT_EQ(ge(g.decode_order), order);
}

void expect_close(const std::vector<float>& g, const std::vector<float>& e, size_t n, const std::string& what) {
  ASSERT_GE(g.size(), n);
  ASSERT_GE(e.size(), n);
  double diff = 0;
  for (size_t i = 0; i < n; ++i) diff = std::max(diff, double(std::abs(g[i] - e[i])));
  EXPECT_LE(diff, 1e-5) << what;
}

// Decode steps of three sequences (one starting at its first token) through staged graph inputs
// vs build_forward_batch. `sizes` decides the padding: {1, 2, 4} pads 3 to 4, {1, 3} does not.
void run_steps(const std::string& name, const std::vector<int>& sizes) {
  Fixture f(name);
  prefill(f, {5, 17});
  std::vector<int64_t> pos = {5, 17, 0};
  DecodeGraphs graphs(*f.model, f.ctx, *f.graph_cache, sizes, kMaxModelLen);
  const int size = *std::lower_bound(graphs.sizes().begin(), graphs.sizes().end(), 3);
  for (int step = 0; step < 4; ++step) {
    const std::vector<SeqWork> work = decode_step(f, pos, step);
    ASSERT_TRUE(std::all_of(work.begin(), work.end(), [](const SeqWork& w) { return w.logits == SeqWork::Logits::Last; }));
    const ForwardBatch e = build_forward_batch(f.ctx, work, kPage);
    ForwardBatch g = graphs.stage(work);
    expect_same_inputs(g, e, size);
    if (f.stateful) {
      // The CPU's linear-attention kernels plan from host mirrors (GPU ones do not), and they have
      // no padding rows to skip, so that path runs unpadded with the eager mirrors.
      ASSERT_EQ(size, 3) << "pad only models whose CPU kernels need no mirrors";
      g.host_seq_lens = e.host_seq_lens;
      g.host_query_start_loc = e.host_query_start_loc;
      g.host_positions = e.host_positions;
      g.host_state_slots = e.host_state_slots;
      g.host_has_initial_state = e.host_has_initial_state;
    }
    const std::vector<float> ge = f.forward(g, *f.graph_cache), ee = f.forward(e, *f.eager_cache);
    expect_close(ge, ee, size_t(3 * f.vocab()), name + " step " + std::to_string(step));
    for (auto& p : pos) ++p;
  }
}

TEST(DecodeGraphs, MlaStagedInputsMatchEagerWithPadding) { run_steps("deepseekv2-tiny", {1, 2, 4}); }
TEST(DecodeGraphs, HybridStagedInputsMatchEager) { run_steps("qwen35text-tiny", {1, 3}); }

// The staged inputs of a hybrid model with padding (not run: see above) keep the state slots and
// initial-state flags of the real rows and give the padding rows none.
TEST(DecodeGraphs, HybridPaddedInputs) {
  Fixture f("qwen3next-tiny");
  DecodeGraphs graphs(*f.model, f.ctx, *f.graph_cache, {1, 2, 4}, kMaxModelLen);
  const std::vector<SeqWork> work = decode_step(f, {9, 0, 30}, 0);
  expect_same_inputs(graphs.stage(work), build_forward_batch(f.ctx, work, kPage), 4);
  // Fewer sequences reuse the same buffer: stale rows of the larger step must be overwritten.
  const std::vector<SeqWork> one = decode_step(f, {4}, 1);
  expect_same_inputs(graphs.stage(one), build_forward_batch(f.ctx, one, kPage), 1);
}

}  // namespace
}  // namespace portllm
