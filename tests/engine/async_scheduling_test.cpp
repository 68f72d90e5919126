// Async scheduling (EngineConfig::async_scheduling): decode step n + 1 is scheduled and launched
// before step n is read back. On the CPU every op runs at launch, so nothing overlaps here, but
// the engine takes the GPU's path: placeholder tokens in the scheduler, the next step's ids fed
// from the previous step's device output, the sampler split into launch and finish, finishes
// that land while a step is in flight. Its outputs must equal the synchronous loop's token for
// token, and it must schedule steps ahead where they qualify (and only there).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "engine_test_util.h"

namespace portllm::test {
namespace {

struct EngineRun {
  std::vector<std::vector<SampleOut>> results;
  EngineStats stats;
};

EngineRun run(EngineConfig cfg, std::optional<bool> async, const std::function<std::vector<RequestInput>(Engine&)>& make) {
  cfg.async_scheduling = async;
  auto e = Engine::create(cfg);
  Collector c;
  for (const RequestInput& in : make(*e)) c.submit(*e, in);
  EngineRun r;
  r.results = c.wait();
  r.stats = e->stats();
  EXPECT_EQ(r.stats.num_free_kv_blocks, r.stats.num_kv_blocks) << (async.value_or(false) ? "async" : "sync or default");
  return r;
}

void expect_same(const EngineRun& sync, const EngineRun& async) {
  ASSERT_EQ(sync.results.size(), async.results.size());
  for (size_t i = 0; i < sync.results.size(); ++i) {
    ASSERT_EQ(sync.results[i].size(), async.results[i].size());
    for (size_t k = 0; k < sync.results[i].size(); ++k) {
      const SampleOut &a = sync.results[i][k], &b = async.results[i][k];
      EXPECT_EQ(a.ids, b.ids) << "request " << i << " sample " << k;
      EXPECT_EQ(a.text, b.text) << "request " << i << " sample " << k;
      EXPECT_EQ(a.reason, b.reason) << "request " << i << " sample " << k;
      EXPECT_EQ(a.stop_reason, b.stop_reason) << "request " << i << " sample " << k;
      EXPECT_EQ(a.error, "");
      EXPECT_EQ(b.error, "");
    }
  }
  EXPECT_EQ(sync.stats.generation_tokens_total, async.stats.generation_tokens_total);
  EXPECT_EQ(sync.stats.steps_ahead, 0);
}

// Greedy and seeded random rows with different lengths, stop strings and stop ids: requests
// finish at different steps, some by a token the host only sees after the next step is launched.
std::vector<RequestInput> mixed(Engine& e) {
  std::vector<RequestInput> ins;
  const auto prompts = story_prompts(e);
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestInput in = greedy(prompts[i], 6 + 7 * int(i));
    if (i % 3 == 1) {
      in.params.temperature = 0.8f;
      in.params.top_p = 0.9f;
      in.params.seed = 1000 + i;
    } else if (i % 3 == 2) {
      in.params.temperature = 1.0f;
      in.params.top_k = 20;
      in.params.min_p = 0.05f;
      in.params.seed = 2000 + i;
    }
    if (i == 4) in.params.stop = {" the", "."};
    if (i == 6) {  // EOS (id 2) made the top choice, masked for 3 tokens: stops at the 4th
      in.params.ignore_eos = false;
      in.params.min_tokens = 3;
      in.params.logit_bias = {{2, 100.f}};
    }
    ins.push_back(in);
  }
  return ins;
}

TEST(AsyncScheduling, SameTokensAsTheSynchronousLoop) {
  const EngineRun sync = run(small_config(), false, mixed), async = run(small_config(), true, mixed);
  expect_same(sync, async);
  EXPECT_GT(async.stats.steps_ahead, 0);
  ASSERT_EQ(async.results[6][0].ids.size(), 4u);
  EXPECT_EQ(async.results[6][0].reason, FinishReason::Stop);
  EXPECT_EQ(async.results[4][0].reason, FinishReason::Stop);
  // Left unset, the CPU keeps the synchronous loop (its ops run at launch: nothing to overlap).
  const EngineRun dflt = run(small_config(), std::nullopt, mixed);
  expect_same(sync, dflt);
  EXPECT_EQ(dflt.stats.steps_ahead, 0);
}

TEST(AsyncScheduling, HybridAndMoeModels) {
  // Recurrent state slots (qwen35text) and routed experts (qwen3moe) behind the same engine path.
  for (const char* name : {"qwen35text-tiny", "qwen3moe-tiny"}) {
    EngineConfig cfg = small_config(fixture_dir(name));
    if (std::string(name) == "qwen35text-tiny") cfg.enable_prefix_caching = false;
    auto make = [](Engine& e) {
      std::vector<RequestInput> ins;
      const auto prompts = varied_prompts(6, 3, 20, e.model_config().vocab_size, 7);
      for (size_t i = 0; i < prompts.size(); ++i) {
        RequestInput in = greedy(prompts[i], 4 + 5 * int(i));
        if (i % 2) {
          in.params.temperature = 0.7f;
          in.params.seed = 30 + i;
        }
        ins.push_back(in);
      }
      return ins;
    };
    SCOPED_TRACE(name);
    const EngineRun sync = run(cfg, false, make), async = run(cfg, true, make);
    expect_same(sync, async);
    EXPECT_GT(async.stats.steps_ahead, 0);
  }
}

TEST(AsyncScheduling, PenaltiesLogprobsAndSiblingsWaitForTheirTokens) {
  // A row whose next draw needs its last token on the host (penalties, logprobs) keeps every step
  // synchronous while it runs; n > 1 siblings start only after sample 0's first token.
  auto make = [](Engine& e) {
    std::vector<RequestInput> ins;
    const auto prompts = story_prompts(e);
    RequestInput a = greedy(prompts[0], 20);
    a.params.repetition_penalty = 1.3f;
    RequestInput b = greedy(prompts[1], 12);
    b.params.presence_penalty = 0.5f;
    b.params.frequency_penalty = 0.3f;
    RequestInput c = greedy(prompts[2], 15);
    c.params.logprobs = 2;
    return std::vector<RequestInput>{a, b, c};
  };
  const EngineRun sync = run(small_config(), false, make), async = run(small_config(), true, make);
  expect_same(sync, async);
  EXPECT_EQ(async.stats.steps_ahead, 0);

  auto siblings = [](Engine& e) {
    RequestInput in = greedy(story_prompts(e)[3], 25);
    in.params.n = 3;
    in.params.temperature = 0.9f;
    in.params.seed = 77;
    return std::vector<RequestInput>{in};
  };
  const EngineRun s2 = run(small_config(), false, siblings), a2 = run(small_config(), true, siblings);
  expect_same(s2, a2);
  EXPECT_GT(a2.stats.steps_ahead, 0);
}

TEST(AsyncScheduling, AbortWhileAStepIsInFlight) {
  // Request 0's callback aborts request 1 after 5 tokens: the abort is taken between launching a
  // step and reading it back. The other requests run on as in the synchronous loop.
  EngineConfig cfg = small_config();
  cfg.async_scheduling = true;
  auto e = Engine::create(cfg);
  const auto prompts = story_prompts(*e);
  Collector c;
  std::atomic<uint64_t> victim{0};
  std::atomic<bool> fired{false};
  int seen = 0;
  victim = c.submit(*e, greedy(prompts[1], 200));  // before request 0 can call back
  RequestInput first = greedy(prompts[0], 30);
  e->add_request(first, [&](const RequestOutput& o) {
    seen += int(o.token_ids.size());
    if (seen >= 5 && !fired.exchange(true)) e->abort(victim.load());
  });
  for (size_t i = 2; i < prompts.size(); ++i) c.submit(*e, greedy(prompts[i], 40));
  const auto got = c.wait();
  EXPECT_TRUE(fired.load());
  ASSERT_EQ(got[0][0].reason, FinishReason::Abort);
  EXPECT_LT(got[0][0].ids.size(), 200u);
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i][0].reason, FinishReason::Length);
    const auto alone = run_all(*e, {greedy(prompts[i + 1], 40)});
    EXPECT_EQ(got[i][0].ids, alone[0].ids) << "request " << i + 1;
  }
  EXPECT_GT(e->stats().steps_ahead, 0);
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
}

}  // namespace
}  // namespace portllm::test
