// Request lifecycle: abort mid-generation frees KV blocks, every block is free after requests
// finish, invalid requests are rejected with portllm::Error before anything is queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "engine_test_util.h"

namespace portllm::test {
namespace {

void wait_idle(Engine& e) {
  for (int i = 0; i < 2000; ++i) {
    auto s = e.stats();
    if (s.num_running == 0 && s.num_waiting == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(EngineLifecycle, AbortMidGenerationFreesBlocks) {
  auto e = Engine::create(small_config());
  const auto prompts = story_prompts(*e);
  std::mutex mu;
  std::condition_variable cv;
  int tokens = 0;
  bool done = false;
  std::optional<FinishReason> reason;
  RequestInput in = greedy(prompts[1], 400);
  uint64_t id = e->add_request(in, [&](const RequestOutput& o) {
    std::lock_guard<std::mutex> lk(mu);
    tokens += int(o.token_ids.size());
    if (o.finished) {
      done = true;
      reason = o.finish_reason;
    }
    cv.notify_all();
  });
  // Another request keeps running while the first is aborted.
  Collector other;
  other.submit(*e, greedy(prompts[0], 30));
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return tokens >= 5; });
  }
  e->abort(id);
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done; });
  }
  EXPECT_EQ(reason, FinishReason::Abort);
  EXPECT_LT(tokens, 400);
  const auto res = other.wait();
  EXPECT_EQ(res[0][0].ids.size(), 30u);
  EXPECT_EQ(res[0][0].reason, FinishReason::Length);
  wait_idle(*e);
  const EngineStats st = e->stats();
  EXPECT_EQ(st.num_free_kv_blocks, st.num_kv_blocks);
  EXPECT_EQ(st.num_running + st.num_waiting, 0);
  e->abort(id);        // already finished: ignored
  e->abort(987654);    // unknown: ignored
}

TEST(EngineLifecycle, AbortWhileWaitingAndNSamples) {
  EngineConfig c = small_config();
  c.max_num_seqs = 1;  // the second request waits behind the first
  auto e = Engine::create(c);
  const auto prompts = story_prompts(*e);
  Collector col;
  col.submit(*e, greedy(prompts[0], 50));
  RequestInput n3 = greedy(prompts[3], 50);
  n3.params.n = 3;
  const uint64_t waiting = col.submit(*e, n3);
  e->abort(waiting);
  const auto res = col.wait();
  EXPECT_EQ(res[0][0].reason, FinishReason::Length);
  ASSERT_EQ(res[1].size(), 3u);
  for (auto& s : res[1]) EXPECT_EQ(s.reason, FinishReason::Abort);
  wait_idle(*e);
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
}

TEST(EngineLifecycle, ShutdownAbortsInFlight) {
  auto e = Engine::create(small_config());
  Collector col;
  col.submit(*e, greedy(story_prompts(*e)[0], 400));
  e->shutdown();
  const auto res = col.wait();
  EXPECT_TRUE(res[0][0].reason == FinishReason::Abort || res[0][0].reason == FinishReason::Length);
  EXPECT_THROW(e->add_request(greedy({1, 2, 3}, 5), nullptr), Error);
  e->shutdown();  // idempotent
}

TEST(EngineLifecycle, InvalidRequestsAreRejected) {
  EngineConfig c = small_config();
  c.num_kv_blocks = 8;  // 128 tokens at page size 16
  c.page_size = 16;
  auto e = Engine::create(c);
  auto expect_error = [&](RequestInput in, const char* needle) {
    try {
      e->add_request(in, nullptr);
      ADD_FAILURE() << "accepted a request that should fail with '" << needle << "'";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  RequestInput empty;
  expect_error(empty, "empty");
  expect_error(greedy({1, 600, 3}, 5), "outside the vocabulary");
  expect_error(greedy({1, -1}, 5), "outside the vocabulary");
  expect_error(greedy({1, 2}, 511), "exceeds the maximum context length");
  expect_error(greedy({1, 2}, 200), "KV blocks");
  RequestInput bad = greedy({1, 2}, 5);
  bad.params.top_p = 0;
  expect_error(bad, "top_p");
  bad = greedy({1, 2}, 5);
  bad.params.temperature = -1;
  expect_error(bad, "temperature");
  bad = greedy({1, 2}, 5);
  bad.params.n = 0;
  expect_error(bad, "n must be");
  bad.params.n = 1025;
  expect_error(bad, "n must be in [1, 1024]");
  bad = greedy({1, 2}, 5);
  bad.params.max_tokens = 0;
  expect_error(bad, "max_tokens");
  bad = greedy({1, 2}, 5);
  bad.params.logprobs = 50;
  expect_error(bad, "logprobs");
  bad = greedy({1, 2}, 5);
  bad.params.stop = {""};
  expect_error(bad, "stop");
  EXPECT_EQ(e->stats().num_waiting, 0);
  // Fixture without tokenizer: text prompts are refused, token ids work.
  auto f = Engine::create(small_config(fixture_dir("qwen3-tiny")));
  EXPECT_FALSE(f->has_tokenizer());
  RequestInput text;
  text.prompt = "hello";
  EXPECT_THROW(f->add_request(text, nullptr), Error);
  const auto ok = run_all(*f, {greedy({1, 2, 3}, 4)});
  EXPECT_EQ(ok[0].ids.size(), 4u);
  EXPECT_TRUE(ok[0].text.empty());
}

TEST(EngineLifecycle, ManyConcurrentRequestsAllBlocksFree) {
  auto e = Engine::create(small_config());
  const auto prompts = varied_prompts(40, 3, 60, 512, 7);
  std::vector<RequestInput> ins;
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestInput in;
    in.prompt_ids = prompts[i];
    in.params.temperature = 0.8f;
    in.params.seed = i;
    in.params.max_tokens = 5 + int(i % 17);
    in.params.ignore_eos = true;
    ins.push_back(in);
  }
  const auto res = run_all(*e, ins);
  for (size_t i = 0; i < res.size(); ++i) EXPECT_EQ(int(res[i].ids.size()), ins[i].params.max_tokens);
  wait_idle(*e);
  const EngineStats st = e->stats();
  EXPECT_EQ(st.num_free_kv_blocks, st.num_kv_blocks);
  EXPECT_EQ(st.requests_finished, 40);
  EXPECT_GT(st.generation_tokens_total, 0);
}

// The loop's per-step account: one step computes the prompt and samples the first token, each
// later step one more token, so a lone request of max_tokens 6 takes 6 steps; their phases took
// measurable time.
TEST(EngineLifecycle, StepTimesCountEveryStep) {
  auto e = Engine::create(small_config());
  const auto prompts = story_prompts(*e);
  const auto out = run_all(*e, {greedy(prompts[0], 6)});
  ASSERT_EQ(out[0].ids.size(), 6u);
  wait_idle(*e);
  const EngineStats st = e->stats();
  EXPECT_EQ(st.steps, 6);
  EXPECT_GT(st.schedule_s, 0.0);
  EXPECT_GT(st.outputs_s, 0.0);
  EXPECT_GT(st.forward_s + st.sample_s, 0.0);
}

// A held intake schedules nothing (no output, nothing waiting or running) until it is released;
// then every request runs, and an abort sent while held reaches its request. Shutdown with the
// intake still held aborts what it holds.
TEST(EngineLifecycle, HeldIntakeStartsNothingUntilReleased) {
  auto e = Engine::create(small_config());
  const auto prompts = story_prompts(*e);
  Collector col;
  std::atomic<int> updates{0};
  {
    IntakeHold hold(*e);
    for (int i = 0; i < 3; ++i) col.submit(*e, greedy(prompts[size_t(i)], 20));
    const uint64_t aborted = e->add_request(greedy(prompts[3], 20), [&](const RequestOutput& o) {
      if (o.finished) {
        EXPECT_EQ(o.finish_reason, FinishReason::Abort);
      }
      ++updates;
    });
    e->abort(aborted);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const EngineStats st = e->stats();
    EXPECT_EQ(st.num_waiting + st.num_running, 0);
    EXPECT_EQ(st.prompt_tokens_total, 0);
    EXPECT_EQ(updates.load(), 0);
  }
  const auto res = col.wait();
  for (auto& r : res) {
    EXPECT_EQ(r[0].ids.size(), 20u);
    EXPECT_EQ(r[0].reason, FinishReason::Length);
  }
  wait_idle(*e);
  EXPECT_GT(updates.load(), 0);

  auto held = Engine::create(small_config());
  Collector left;
  held->hold_intake(true);
  left.submit(*held, greedy(prompts[0], 20));
  held->shutdown();
  EXPECT_EQ(left.wait()[0][0].reason, FinishReason::Abort);
}

}  // namespace
}  // namespace portllm::test
