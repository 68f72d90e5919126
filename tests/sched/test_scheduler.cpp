#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "sched_test_util.h"

using namespace portllm;
using namespace portllm::test;

TEST(SchedulerConfig, RejectsDeadlockProneSettings) {
  SchedulerConfig c = small_config(16);
  EXPECT_NO_THROW(c.validate());
  auto bad = [&](auto edit) {
    SchedulerConfig x = c;
    edit(x);
    EXPECT_THROW(x.validate(), Error);
  };
  bad([](SchedulerConfig& x) { x.max_num_seqs = 0; });
  bad([](SchedulerConfig& x) { x.max_num_batched_tokens = x.max_num_seqs - 1; });
  bad([](SchedulerConfig& x) {
    x.enable_chunked_prefill = false;
    x.max_num_batched_tokens = x.max_model_len - 1;
  });
  bad([](SchedulerConfig& x) { x.block_size = 0; });
  bad([](SchedulerConfig& x) { x.num_blocks = 0; });
  bad([](SchedulerConfig& x) { x.num_state_slots = -1; });
  bad([](SchedulerConfig& x) { x.long_prefill_token_threshold = -1; });
  EXPECT_THROW(Scheduler{SchedulerConfig{}}, Error);  // num_blocks unset
}

TEST(Scheduler, RejectsRequestsThatCanNeverRun) {
  SchedulerConfig c = small_config(4, 4);  // 16 token slots
  c.max_model_len = 20;
  Scheduler s(c);
  EXPECT_THROW(s.add_request(make_request(1, {}, 4)), Error);                 // empty prompt
  EXPECT_THROW(s.add_request(make_request(2, iota_tokens(4), 0)), Error);     // max_tokens 0
  EXPECT_THROW(s.add_request(make_request(3, iota_tokens(10), 11)), Error);   // > max_model_len
  EXPECT_THROW(s.add_request(make_request(4, iota_tokens(10), 8)), Error);    // 17 slots > 16
  try {
    s.add_request(make_request(5, iota_tokens(10), 8));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV blocks"), std::string::npos) << e.what();
  }
  s.add_request(make_request(6, iota_tokens(10), 7));  // exactly 16 slots: fits
  EXPECT_THROW(s.add_request(make_request(6, iota_tokens(2), 1)), Error);    // duplicate id
  auto hybrid = make_request(7, iota_tokens(2), 1);
  hybrid->needs_state_slot = true;
  EXPECT_THROW(s.add_request(hybrid), Error);  // no state slots configured
  EXPECT_EQ(s.num_waiting(), 1);
  // The request that exactly fits runs to completion alone.
  run_to_completion(s);
  EXPECT_EQ(s.kv().num_free_blocks(), 4);
}

TEST(Scheduler, PrefillThenDecodeThenFinish) {
  Scheduler s(small_config(16));
  auto r = make_request(1, iota_tokens(10, 100), 3);
  s.add_request(r);

  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  const ScheduledRequest& e = st.out.scheduled[0];
  EXPECT_EQ(e.id, 1u);
  EXPECT_EQ(e.num_scheduled_tokens, 10);
  EXPECT_EQ(e.start_position, 0);
  EXPECT_EQ(e.token_ids, iota_tokens(10, 100));
  EXPECT_EQ(e.block_table.size(), 3u);
  EXPECT_TRUE(e.sample);
  EXPECT_EQ(e.state_slot, -1);
  EXPECT_EQ(r->num_output_tokens(), 1);
  EXPECT_EQ(r->num_cached_tokens, 0);
  EXPECT_EQ(r->status, RequestStatus::RUNNING);

  st = run_step(s);  // decode: feeds the sampled token at position 10
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  EXPECT_EQ(st.out.scheduled[0].start_position, 10);
  EXPECT_EQ(st.out.scheduled[0].token_ids, std::vector<TokenId>{r->output_token_ids()[0]});
  EXPECT_TRUE(st.out.scheduled[0].sample);

  st = run_step(s);
  ASSERT_EQ(st.finished.size(), 1u);
  EXPECT_EQ(st.finished[0], r);
  EXPECT_EQ(r->status, RequestStatus::FINISHED_LENGTH);
  EXPECT_EQ(r->num_output_tokens(), 3);
  EXPECT_EQ(r->num_computed_tokens, 12);  // the last sampled token is never fed back
  // Outputs follow the fake model from the prompt on.
  std::vector<TokenId> expect = iota_tokens(10, 100);
  for (int i = 0; i < 3; ++i) expect.push_back(fake_next_token(expect));
  EXPECT_EQ(std::vector<TokenId>(r->all_token_ids().begin(), r->all_token_ids().end()), expect);

  EXPECT_FALSE(s.has_unfinished_requests());
  EXPECT_EQ(s.kv().num_free_blocks(), 16);
  SchedulerOutput next = s.schedule();  // the runner learns about the finish next step
  EXPECT_TRUE(next.empty());
  EXPECT_EQ(next.finished_ids, std::vector<RequestId>{1});
}

TEST(Scheduler, ChunkedPrefillSplitsLongPromptsWithinBudget) {
  SchedulerConfig c = small_config(16);
  c.max_num_batched_tokens = 8;
  Scheduler s(c);
  auto r = make_request(1, iota_tokens(20), 2);
  s.add_request(r);
  std::vector<int> chunks, starts;
  std::vector<bool> samples;
  for (int i = 0; i < 3; ++i) {
    Step st = run_step(s);
    ASSERT_EQ(st.out.scheduled.size(), 1u);
    chunks.push_back(st.out.scheduled[0].num_scheduled_tokens);
    starts.push_back(st.out.scheduled[0].start_position);
    samples.push_back(st.out.scheduled[0].sample);
    // Blocks cover exactly the positions computed so far.
    EXPECT_EQ(int(st.out.scheduled[0].block_table.size()),
              (starts.back() + chunks.back() + 3) / 4);
  }
  EXPECT_EQ(chunks, (std::vector<int>{8, 8, 4}));
  EXPECT_EQ(starts, (std::vector<int>{0, 8, 16}));
  EXPECT_EQ(samples, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(r->num_output_tokens(), 1);
}

TEST(Scheduler, LongPrefillThresholdCapsEachRequest) {
  SchedulerConfig c = small_config(32);
  c.max_num_batched_tokens = 16;
  c.long_prefill_token_threshold = 5;
  Scheduler s(c);
  s.add_request(make_request(1, iota_tokens(12), 1));
  s.add_request(make_request(2, iota_tokens(12, 50), 1));
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 2u);
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 5);
  EXPECT_EQ(st.out.scheduled[1].num_scheduled_tokens, 5);
  EXPECT_EQ(st.out.total_num_scheduled_tokens, 10);
}

TEST(Scheduler, WithoutChunkingAPromptWaitsForAWholeStep) {
  SchedulerConfig c = small_config(64);
  c.enable_chunked_prefill = false;
  c.max_model_len = 40;
  c.max_num_batched_tokens = 40;
  Scheduler s(c);
  s.add_request(make_request(1, iota_tokens(30), 5));
  s.add_request(make_request(2, iota_tokens(20, 100), 5));
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);  // 30 + 20 > 40: the second waits whole
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 30);
  st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 2u);
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 1);
  EXPECT_EQ(st.out.scheduled[1].num_scheduled_tokens, 20);
}

TEST(Scheduler, DecodesComeFirstAndPrefillsGetTheRest) {
  SchedulerConfig c = small_config(64);
  c.max_num_batched_tokens = 10;
  Scheduler s(c);
  s.add_request(make_request(1, iota_tokens(40), 4));  // old, long prefill
  run_step(s);                                        // 10 of 40
  s.add_request(make_request(2, iota_tokens(3, 200), 4));
  // Let request 1 keep all budget until 2 is admitted: admission waits for budget.
  Step st = run_step(s);
  EXPECT_EQ(st.find(2), nullptr);
  st = run_step(s);
  st = run_step(s);  // request 1 completes its prompt (40), 2 still waiting (budget used)
  ASSERT_NE(st.find(1), nullptr);
  EXPECT_TRUE(st.find(1)->sample);
  // Now a decode (1) and a new prompt (2) share the step, decode first.
  st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 2u);
  EXPECT_EQ(st.out.scheduled[0].id, 1u);
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 1);
  EXPECT_EQ(st.out.scheduled[1].id, 2u);

  // A younger decoding request goes before an older request still prefilling.
  Scheduler t(c);
  t.add_request(make_request(1, iota_tokens(2), 20));
  run_step(t);  // 1 decoding from now on
  t.add_request(make_request(2, iota_tokens(2, 50), 20));
  run_step(t);  // 2 admitted; both decoding
  t.add_request(make_request(3, iota_tokens(30, 100), 2));
  st = run_step(t);  // 3 admitted with 8 tokens (10 - 2 decodes)
  ASSERT_NE(st.find(3), nullptr);
  EXPECT_EQ(st.find(3)->num_scheduled_tokens, 8);
  st = run_step(t);  // 1, 2 decode, 3 continues prefill with the rest
  ASSERT_EQ(st.out.scheduled.size(), 3u);
  EXPECT_EQ(st.out.scheduled[0].id, 1u);
  EXPECT_EQ(st.out.scheduled[1].id, 2u);
  EXPECT_EQ(st.out.scheduled[2].id, 3u);
  EXPECT_EQ(st.out.scheduled[2].num_scheduled_tokens, 8);
  EXPECT_EQ(st.out.total_num_scheduled_tokens, 10);
}

TEST(Scheduler, AdmitsFcfsWithoutOvertaking) {
  SchedulerConfig c = small_config(8, 4);  // 32 slots
  Scheduler s(c);
  s.add_request(make_request(1, iota_tokens(20), 4));   // 6 blocks at most
  s.add_request(make_request(2, iota_tokens(16, 100), 4));  // 5 blocks: does not fit beside 1
  s.add_request(make_request(3, iota_tokens(2, 300), 1));   // would fit, must not overtake 2
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  EXPECT_EQ(st.out.scheduled[0].id, 1u);
  EXPECT_EQ(s.num_waiting(), 2);
  EXPECT_EQ(s.waiting()[0]->id, 2u);
  run_to_completion(s);
  EXPECT_EQ(s.kv().num_free_blocks(), 8);
}

TEST(Scheduler, MaxNumSeqsLimitsRunningSet) {
  SchedulerConfig c = small_config(64);
  c.max_num_seqs = 2;
  Scheduler s(c);
  for (RequestId id = 1; id <= 3; ++id) s.add_request(make_request(id, iota_tokens(3, id * 10), 3));
  Step st = run_step(s);
  EXPECT_EQ(st.out.scheduled.size(), 2u);
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 1);
  run_step(s);
  st = run_step(s);  // 1 and 2 finish here
  EXPECT_EQ(st.finished.size(), 2u);
  st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  EXPECT_EQ(st.out.scheduled[0].id, 3u);
}

// Outputs of each request when it runs alone in a huge pool.
static std::vector<TokenId> solo_output(const std::vector<TokenId>& prompt, int max_tokens) {
  std::vector<TokenId> t = prompt;
  for (int i = 0; i < max_tokens; ++i) t.push_back(fake_next_token(t));
  return {t.begin() + prompt.size(), t.end()};
}

TEST(Scheduler, PreemptsYoungestByRecomputeAndStillCompletes) {
  SchedulerConfig c = small_config(6, 4);  // 24 slots
  c.enable_prefix_caching = false;
  Scheduler s(c);
  auto a = make_request(1, iota_tokens(6), 12);       // grows to 17 tokens = 5 blocks
  auto b = make_request(2, iota_tokens(6, 100), 12);
  auto c3 = make_request(3, iota_tokens(12, 200), 1);  // 3 blocks: waits behind a and b
  s.add_request(a);
  s.add_request(b);
  s.add_request(c3);
  Step st = run_step(s);  // a and b prefilled: 2 + 2 blocks
  ASSERT_EQ(st.out.scheduled.size(), 2u);
  EXPECT_EQ(s.waiting().front()->id, 3u);
  bool saw_preemption = false;
  for (int i = 0; i < 200 && s.has_unfinished_requests(); ++i) {
    st = run_step(s);
    if (!st.out.preempted_ids.empty()) {
      if (!saw_preemption) {
        // The younger request is the victim; it lost everything and waits in front.
        EXPECT_EQ(st.out.preempted_ids, std::vector<RequestId>{2});
        EXPECT_EQ(b->status, RequestStatus::PREEMPTED);
        EXPECT_EQ(b->num_computed_tokens, 0);
        EXPECT_TRUE(s.kv().block_table(2).empty());
        // In front of the request that arrived later but was never admitted.
        ASSERT_EQ(s.num_waiting(), 2);
        EXPECT_EQ(s.waiting()[0]->id, 2u);
        EXPECT_EQ(s.waiting()[1]->id, 3u);
        EXPECT_EQ(st.find(2), nullptr);
        ASSERT_NE(st.find(1), nullptr);
      }
      saw_preemption = true;
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_FALSE(s.has_unfinished_requests());
  EXPECT_GE(b->num_preemptions, 1);
  EXPECT_EQ(a->num_preemptions, 0);
  auto out_of = [](const std::shared_ptr<Request>& r) {
    return std::vector<TokenId>(r->output_token_ids().begin(), r->output_token_ids().end());
  };
  EXPECT_EQ(out_of(a), solo_output(iota_tokens(6), 12));
  EXPECT_EQ(out_of(b), solo_output(iota_tokens(6, 100), 12));  // recompute lost nothing
  EXPECT_EQ(out_of(c3), solo_output(iota_tokens(12, 200), 1));
  EXPECT_EQ(s.kv().num_free_blocks(), 6);
}

TEST(Scheduler, RecomputeAfterPreemptionSamplesOnlyAtTheEnd) {
  SchedulerConfig c = small_config(6, 4);
  c.enable_prefix_caching = false;
  c.max_num_batched_tokens = 8;
  Scheduler s(c);
  auto a = make_request(1, iota_tokens(6), 12);
  auto b = make_request(2, iota_tokens(6, 100), 12);
  s.add_request(a);
  s.add_request(b);
  bool checked = false;
  while (s.has_unfinished_requests()) {
    const int outputs_before = b->num_output_tokens();
    const bool was_preempted = b->status == RequestStatus::PREEMPTED;
    Step st = run_step(s);
    const ScheduledRequest* e = st.find(2);
    if (was_preempted && e) {
      // Re-admitted: recomputes prompt + outputs from position 0, in chunks of the budget.
      EXPECT_EQ(e->start_position, 0);
      EXPECT_EQ(e->sample, e->num_scheduled_tokens == 6 + outputs_before);
      checked = true;
    }
  }
  EXPECT_TRUE(checked);
}

TEST(Scheduler, OlderPrefillPreemptsYoungerScheduledDecode) {
  // The older request is still prefilling in chunks while a younger one decodes; when blocks run
  // out, the younger one is the victim even though the decode pass already scheduled it.
  SchedulerConfig c = small_config(5, 4);  // 20 slots
  c.enable_prefix_caching = false;
  c.max_num_batched_tokens = 4;
  c.long_prefill_token_threshold = 2;
  c.max_num_seqs = 2;
  Scheduler s(c);
  auto old_req = make_request(1, iota_tokens(16), 1);     // 4 blocks
  auto young = make_request(2, iota_tokens(1, 100), 12);  // grows to 3 blocks
  s.add_request(old_req);
  s.add_request(young);
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 2u);  // old: 2 tokens, young: its 1-token prompt
  bool saw = false;
  while (s.has_unfinished_requests()) {
    const bool young_decoding = young->status == RequestStatus::RUNNING &&
                                young->num_tokens() - young->num_computed_tokens == 1;
    const bool old_prefilling = old_req->num_computed_tokens < 16;
    st = run_step(s);
    EXPECT_LE(st.out.total_num_scheduled_tokens, 4);
    if (!st.out.preempted_ids.empty()) {
      EXPECT_EQ(st.out.preempted_ids, std::vector<RequestId>{2});
      EXPECT_EQ(st.find(2), nullptr);  // removed from the batch, its token budget refunded
      ASSERT_NE(st.find(1), nullptr);
      EXPECT_EQ(st.find(1)->num_scheduled_tokens, 2);
      if (young_decoding && old_prefilling) saw = true;
    }
  }
  EXPECT_TRUE(saw);
  EXPECT_EQ(old_req->num_preemptions, 0);
  EXPECT_EQ(old_req->status, RequestStatus::FINISHED_LENGTH);
  EXPECT_EQ(young->status, RequestStatus::FINISHED_LENGTH);
  EXPECT_EQ(std::vector<TokenId>(young->output_token_ids().begin(), young->output_token_ids().end()),
            solo_output(iota_tokens(1, 100), 12));
  EXPECT_EQ(s.kv().num_free_blocks(), 5);
}

TEST(Scheduler, AbortFreesBlocksAndForgetsTheRequest) {
  Scheduler s(small_config(16));
  auto a = make_request(1, iota_tokens(10), 50);
  auto b = make_request(2, iota_tokens(10, 100), 50);
  s.add_request(a);
  run_step(s);
  s.add_request(b);  // waiting
  EXPECT_GT(s.kv().usage(), 0.0);
  EXPECT_TRUE(s.abort(2));
  EXPECT_EQ(b->status, RequestStatus::FINISHED_ABORTED);
  EXPECT_EQ(s.num_waiting(), 0);
  EXPECT_TRUE(s.abort(1));
  EXPECT_EQ(a->status, RequestStatus::FINISHED_ABORTED);
  EXPECT_FALSE(s.abort(1));   // already gone
  EXPECT_FALSE(s.abort(77));  // unknown
  EXPECT_EQ(s.kv().num_free_blocks(), 16);
  EXPECT_EQ(s.kv().num_tracked_requests(), 0);
  EXPECT_FALSE(s.has_unfinished_requests());
  SchedulerOutput o = s.schedule();
  EXPECT_EQ(o.finished_ids, (std::vector<RequestId>{2, 1}));
}

TEST(Scheduler, AbortDuringAStepIsAppliedAfterIt) {
  Scheduler s(small_config(16));
  auto a = make_request(1, iota_tokens(10), 50);
  s.add_request(a);
  SchedulerOutput o = s.schedule();
  EXPECT_TRUE(s.abort(1));
  // The runner still owns the blocks of this step.
  EXPECT_EQ(a->status, RequestStatus::RUNNING);
  EXPECT_FALSE(s.kv().block_table(1).empty());
  std::vector<SampledToken> sampled = {{1, 5}};
  auto finished = s.update_from_output(o, sampled);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0], a);
  EXPECT_EQ(a->status, RequestStatus::FINISHED_ABORTED);
  EXPECT_EQ(s.kv().num_free_blocks(), 16);
}

TEST(Scheduler, AsyncPlaceholdersAreFedThenOverwritten) {
  // Async scheduling: step n + 1 is scheduled while step n runs. The token step n samples is a
  // placeholder in n + 1's feed, written over when n is updated; hashing a block waits for it.
  SchedulerConfig c = small_config(16);
  c.enable_prefix_caching = true;
  Scheduler s(c);
  auto a = make_request(1, iota_tokens(6), 4);
  auto b = make_request(2, iota_tokens(7, 50), 2);
  s.add_request(a);
  s.add_request(b);
  run_step(s);  // prefill: a and b have one output each
  const TokenId a1 = a->output_token_ids()[0];
  SchedulerOutput n = s.schedule();  // decode of both (n)
  ASSERT_EQ(n.scheduled.size(), 2u);
  EXPECT_THROW(s.schedule(), Error);  // not before the placeholders
  // b's sample in n is its last (max_tokens 2): it gets no placeholder and no step after n.
  EXPECT_EQ(s.add_output_placeholders(n), std::vector<RequestId>{1});
  EXPECT_EQ(a->output_token_ids().back(), kPlaceholderToken);
  SchedulerOutput n1 = s.schedule();
  ASSERT_EQ(n1.scheduled.size(), 1u);
  EXPECT_EQ(n1.scheduled[0].id, 1u);
  EXPECT_EQ(n1.scheduled[0].start_position, 7);
  EXPECT_EQ(n1.scheduled[0].token_ids, std::vector<TokenId>{kPlaceholderToken});
  EXPECT_EQ(s.steps_in_flight(), 2);
  // Block 1 (positions 4..7) ends with the placeholder: it is hashed only once 11 is written.
  auto fin = s.update_from_output(n, std::vector<SampledToken>{{1, 11}, {2, 22}});
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0], b);
  EXPECT_EQ(b->status, RequestStatus::FINISHED_LENGTH);
  EXPECT_EQ(std::vector<TokenId>(a->output_token_ids().begin(), a->output_token_ids().end()),
            (std::vector<TokenId>{a1, 11}));
  EXPECT_EQ(a->num_placeholders, 0);
  EXPECT_EQ(s.steps_in_flight(), 1);
  fin = s.update_from_output(n1, std::vector<SampledToken>{{1, 33}});
  EXPECT_TRUE(fin.empty());
  EXPECT_EQ(std::vector<TokenId>(a->output_token_ids().begin(), a->output_token_ids().end()),
            (std::vector<TokenId>{a1, 11, 33}));
  // The next step feeds 33 at position 8 and finishes a; its blocks go to the prefix cache.
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  EXPECT_EQ(st.out.scheduled[0].token_ids, std::vector<TokenId>{33});
  EXPECT_EQ(a->status, RequestStatus::FINISHED_LENGTH);
  auto probe = make_request(3, std::vector<TokenId>(a->all_token_ids().begin(), a->all_token_ids().begin() + 9), 1);
  s.add_request(probe);
  run_step(s);
  EXPECT_EQ(probe->num_cached_tokens, 8);  // two full blocks of a's tokens, the overwritten one included
}

TEST(Scheduler, AbortWhileTwoStepsAreInFlight) {
  Scheduler s(small_config(16));
  auto a = make_request(1, iota_tokens(5), 20);
  s.add_request(a);
  run_step(s);
  SchedulerOutput n = s.schedule();
  s.add_output_placeholders(n);
  SchedulerOutput n1 = s.schedule();
  EXPECT_TRUE(s.abort(1));  // deferred: both steps may still use the blocks
  EXPECT_EQ(a->status, RequestStatus::RUNNING);
  auto fin = s.update_from_output(n, std::vector<SampledToken>{{1, 7}});
  ASSERT_EQ(fin.size(), 1u);  // applied after the first update: only later steps reuse the blocks
  EXPECT_EQ(a->status, RequestStatus::FINISHED_ABORTED);
  EXPECT_TRUE(s.update_from_output(n1, std::vector<SampledToken>{{1, 8}}).empty());  // the token of a finished request is dropped
  EXPECT_EQ(s.steps_in_flight(), 0);
  EXPECT_EQ(s.kv().num_free_blocks(), 16);
  EXPECT_FALSE(s.has_unfinished_requests());
}

TEST(Scheduler, StopTokenAndEngineFinish) {
  Scheduler s(small_config(16));
  std::vector<TokenId> prompt = iota_tokens(5);
  auto a = make_request(1, prompt, 50);
  a->stop_token_ids = {fake_next_token(prompt)};  // the very first sample stops it
  auto b = make_request(2, iota_tokens(5, 9), 50);
  s.add_request(a);
  s.add_request(b);
  Step st = run_step(s);
  ASSERT_EQ(st.finished.size(), 1u);
  EXPECT_EQ(a->status, RequestStatus::FINISHED_STOPPED);
  EXPECT_EQ(a->num_output_tokens(), 1);  // the stop token is kept in the outputs
  EXPECT_TRUE(s.finish_request(2, RequestStatus::FINISHED_STOPPED));  // e.g. a stop string
  EXPECT_EQ(b->status, RequestStatus::FINISHED_STOPPED);
  EXPECT_THROW(s.finish_request(2, RequestStatus::RUNNING), Error);
  EXPECT_EQ(s.kv().num_free_blocks(), 16);
}

TEST(Scheduler, MissingOrUnexpectedSampleIsAnError) {
  Scheduler s(small_config(16));
  s.add_request(make_request(1, iota_tokens(10), 5));
  SchedulerOutput o = s.schedule();
  EXPECT_THROW(s.update_from_output(o, {}), Error);  // request would hang forever
  SchedulerConfig c = small_config(16);
  c.max_num_batched_tokens = 8;
  Scheduler u(c);
  u.add_request(make_request(1, iota_tokens(10), 5));
  SchedulerOutput p = u.schedule();  // 8 of 10: no sample
  std::vector<SampledToken> bogus = {{1, 3}};
  EXPECT_THROW(u.update_from_output(p, bogus), Error);
}

TEST(Scheduler, PrefixHitSkipsComputedTokens) {
  Scheduler s(small_config(32));
  std::vector<TokenId> system = iota_tokens(12, 500);  // 3 full blocks
  std::vector<TokenId> p1 = system, p2 = system;
  p1.insert(p1.end(), {1, 2, 3});
  p2.insert(p2.end(), {7, 8});
  auto a = make_request(1, p1, 2);
  s.add_request(a);
  run_to_completion(s);
  auto b = make_request(2, p2, 2);
  s.add_request(b);
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  EXPECT_EQ(st.out.scheduled[0].start_position, 12);
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 2);
  EXPECT_EQ(st.out.scheduled[0].token_ids, (std::vector<TokenId>{7, 8}));
  EXPECT_TRUE(st.out.scheduled[0].sample);
  EXPECT_EQ(b->num_cached_tokens, 12);
  EXPECT_EQ(s.kv().prefix_cache_hits(), 12);
  EXPECT_EQ(s.kv().prefix_cache_queries(), int64_t(p1.size() + p2.size()));
  run_to_completion(s);
  EXPECT_EQ(std::vector<TokenId>(b->output_token_ids().begin(), b->output_token_ids().end()),
            solo_output(p2, 2));

  // The same prompt again: at least its last token is computed.
  auto c = make_request(3, p2, 1);
  s.add_request(c);
  st = run_step(s);
  EXPECT_EQ(st.out.scheduled[0].start_position, 12);  // 14 tokens: block 3 is partial
  auto d = make_request(4, system, 1);
  s.add_request(d);
  st = run_step(s);
  ASSERT_NE(st.find(4), nullptr);
  EXPECT_EQ(st.find(4)->start_position, 8);  // 12 tokens all cached: recompute the last block
  EXPECT_EQ(st.find(4)->num_scheduled_tokens, 4);
}

TEST(Scheduler, ForkedChildSharesParentPromptBlocks) {
  SchedulerConfig c = small_config(32);
  c.enable_prefix_caching = false;  // sharing comes from the fork itself
  Scheduler s(c);
  std::vector<TokenId> prompt = iota_tokens(10, 40);
  auto parent = make_request(1, prompt, 4);
  s.add_request(parent);
  run_step(s);  // parent prompt computed, first token sampled
  auto child = make_request(2, prompt, 4);
  EXPECT_EQ(s.fork_request(1, child), 8);  // 2 full blocks of 4; the tail is recomputed
  EXPECT_EQ(child->status, RequestStatus::RUNNING);
  EXPECT_EQ(s.kv().block_table(2)[0], s.kv().block_table(1)[0]);
  EXPECT_EQ(s.kv().pool().ref_count(s.kv().block_table(1)[0]), 2);
  Step st = run_step(s);
  ASSERT_NE(st.find(2), nullptr);
  EXPECT_EQ(st.find(2)->start_position, 8);
  EXPECT_EQ(st.find(2)->num_scheduled_tokens, 2);
  EXPECT_TRUE(st.find(2)->sample);
  EXPECT_EQ(st.out.scheduled[0].id, 1u);  // parent decodes first
  run_to_completion(s);
  EXPECT_EQ(std::vector<TokenId>(child->output_token_ids().begin(), child->output_token_ids().end()),
            solo_output(prompt, 4));
  EXPECT_EQ(s.kv().num_free_blocks(), 32);

  // No room in max_num_seqs: the child is simply queued.
  SchedulerConfig one = c;
  one.max_num_seqs = 1;
  Scheduler t(one);
  t.add_request(make_request(1, prompt, 2));
  run_step(t);
  auto queued = make_request(2, prompt, 2);
  EXPECT_EQ(t.fork_request(1, queued), 0);
  EXPECT_EQ(queued->status, RequestStatus::WAITING);
  run_to_completion(t);
  EXPECT_EQ(queued->status, RequestStatus::FINISHED_LENGTH);
}

TEST(Scheduler, StateSlotsLimitHybridRequestsAndAreFreed) {
  SchedulerConfig c = small_config(64);
  c.num_state_slots = 2;
  Scheduler s(c);
  std::vector<std::shared_ptr<Request>> rs;
  for (RequestId id = 1; id <= 3; ++id) {
    auto r = make_request(id, iota_tokens(12, 7), 3);  // same prompt: prefix would hit
    r->needs_state_slot = true;
    rs.push_back(r);
    s.add_request(r);
  }
  Step st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 2u);  // only 2 slots
  EXPECT_NE(st.out.scheduled[0].state_slot, st.out.scheduled[1].state_slot);
  EXPECT_GE(st.out.scheduled[0].state_slot, 0);
  run_step(s);
  st = run_step(s);  // 1 and 2 finish
  EXPECT_EQ(st.finished.size(), 2u);
  EXPECT_EQ(s.state_slots().num_free_slots(), 2);
  st = run_step(s);
  ASSERT_EQ(st.out.scheduled.size(), 1u);
  // No prefix hit for a recurrent request: its state must be rebuilt from position 0.
  EXPECT_EQ(st.out.scheduled[0].start_position, 0);
  EXPECT_EQ(st.out.scheduled[0].num_scheduled_tokens, 12);
  EXPECT_GE(st.out.scheduled[0].state_slot, 0);
  run_to_completion(s);
  EXPECT_EQ(s.state_slots().num_free_slots(), 2);
}
