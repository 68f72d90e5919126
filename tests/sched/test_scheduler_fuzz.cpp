// Seeded property test: random arrivals, aborts (also mid-step), forks, prompt/output lengths,
// shared prefixes, hybrid requests and tiny pools, thousands of steps. A fake model writes into
// a fake paged KV store through the slot mapping the runner will use and reads every earlier
// position back, so a wrong block table, an overwritten shared block or a bogus prefix hit shows
// up as a wrong value. Its "sampled" token depends only on the tokens so far, so every finished
// request must have exactly the outputs of an uninterrupted solo run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include <xxhash.h>

#include "core/error.h"
#include "sched/scheduler.h"

using namespace portllm;

namespace {

constexpr TokenId kVocab = 50;
constexpr TokenId kStopToken = 0;

// Hash of (salt, tokens[0..p]): what the K/V (and recurrent state) at position p depends on.
uint64_t roll(uint64_t prev, TokenId t) { return XXH3_64bits_withSeed(&t, sizeof t, prev); }
uint64_t seed_of(const std::optional<uint64_t>& salt) { return salt ? 0x5a17 + *salt : 0x1234; }
TokenId sample_from(uint64_t prefix_hash) { return TokenId(prefix_hash % kVocab); }

std::vector<TokenId> solo_generation(const std::vector<TokenId>& prompt,
                                     const std::optional<uint64_t>& salt, int max_tokens,
                                     bool stop_on_eos) {
  uint64_t h = seed_of(salt);
  for (TokenId t : prompt) h = roll(h, t);
  std::vector<TokenId> out;
  while (int(out.size()) < max_tokens) {
    const TokenId t = sample_from(h);
    out.push_back(t);
    if (stop_on_eos && t == kStopToken) break;
    h = roll(h, t);
  }
  return out;
}

struct Params {
  int block_size, num_blocks, max_num_seqs, budget, threshold, max_model_len, num_slots;
  bool chunked, prefix_caching;
  int num_requests, max_prompt, max_new;
  double hybrid_p, abort_p, fork_p, arrival_p;
};

struct Sim {
  Params P;
  std::mt19937_64 rng;
  SchedulerConfig cfg;
  Scheduler sched;
  std::vector<int64_t> kv_store;                 // slot -> prefix hash written there
  std::vector<int64_t> state_store;              // state slot -> prefix hash of last position
  std::map<RequestId, std::shared_ptr<Request>> all;  // every accepted request
  std::map<RequestId, std::vector<uint64_t>> hashes;  // per request: prefix hash per position
  std::map<RequestId, int> arrival_step, finish_step;
  std::vector<std::vector<TokenId>> system_prompts;
  RequestId next_id = 1;
  int step = 0, created = 0, preemptions = 0, forks = 0, rejected = 0, mid_step_aborts = 0;
  int max_latency = 0;

  static SchedulerConfig make_cfg(const Params& p) {
    SchedulerConfig c;
    c.block_size = p.block_size;
    c.num_blocks = p.num_blocks;
    c.max_num_seqs = p.max_num_seqs;
    c.max_num_batched_tokens = p.budget;
    c.long_prefill_token_threshold = p.threshold;
    c.enable_chunked_prefill = p.chunked;
    c.enable_prefix_caching = p.prefix_caching;
    c.max_model_len = p.max_model_len;
    c.num_state_slots = p.num_slots;
    return c;
  }

  Sim(const Params& p, uint64_t seed)
      : P(p), rng(seed), cfg(make_cfg(p)), sched(cfg),
        kv_store(size_t(p.num_blocks) * p.block_size, -1), state_store(p.num_slots, -1) {
    for (int i = 0; i < 3; ++i) system_prompts.push_back(random_tokens(1 + uniform(0, 3 * p.block_size)));
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  std::vector<TokenId> random_tokens(int n) {
    std::vector<TokenId> t(n);
    for (auto& x : t) x = TokenId(uniform(1, kVocab - 1));  // the stop token only by sampling
    return t;
  }

  const std::vector<uint64_t>& prefix_hashes(const Request& r) {
    auto& h = hashes[r.id];
    auto toks = r.all_token_ids();
    while (h.size() < toks.size())
      h.push_back(roll(h.empty() ? seed_of(r.cache_salt) : h.back(), toks[h.size()]));
    return h;
  }

  bool fits(int prompt, int max_new, bool hybrid) const {
    const int64_t longest = int64_t(prompt) + max_new;
    const int blocks = int((longest - 1 + P.block_size - 1) / P.block_size);
    return prompt >= 1 && max_new >= 1 && longest <= P.max_model_len && blocks <= P.num_blocks &&
           (!hybrid || P.num_slots > 0);
  }

  std::shared_ptr<Request> random_request() {
    std::vector<TokenId> prompt;
    if (chance(0.6)) prompt = system_prompts[uniform(0, 2)];
    auto tail = random_tokens(uniform(chance(0.2) ? 0 : 1, P.max_prompt));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    if (prompt.empty()) prompt = random_tokens(1);
    auto r = std::make_shared<Request>(next_id++, prompt, uniform(1, P.max_new));
    if (chance(0.5)) r->stop_token_ids = {kStopToken};
    if (chance(0.1)) r->cache_salt = uint64_t(uniform(1, 2));
    r->needs_state_slot = chance(P.hybrid_p);
    return r;
  }

  void arrive() {
    auto r = random_request();
    const bool ok = fits(r->num_prompt_tokens(), r->max_tokens, r->needs_state_slot);
    try {
      sched.add_request(r);
      ASSERT_TRUE(ok) << "accepted a request that cannot fit";
      all[r->id] = r;
      arrival_step[r->id] = step;
    } catch (const Error&) {
      ASSERT_FALSE(ok) << "rejected a request that fits";
      ++rejected;
    }
    ++created;
  }

  void maybe_fork() {
    std::vector<std::shared_ptr<const Request>> candidates;
    for (const auto& r : sched.running())
      if (r->num_computed_tokens >= r->num_prompt_tokens()) candidates.push_back(r);
    if (candidates.empty()) return;
    auto parent = candidates[uniform(0, int(candidates.size()) - 1)];
    std::vector<TokenId> prompt(parent->prompt_token_ids().begin(), parent->prompt_token_ids().end());
    auto child = std::make_shared<Request>(next_id++, prompt, uniform(1, P.max_new));
    child->cache_salt = parent->cache_salt;
    child->needs_state_slot = parent->needs_state_slot;
    if (chance(0.5)) child->stop_token_ids = {kStopToken};
    if (!fits(child->num_prompt_tokens(), child->max_tokens, child->needs_state_slot)) return;
    const int shared = sched.fork_request(parent->id, child);
    EXPECT_EQ(shared % P.block_size, 0);
    EXPECT_LT(shared, child->num_prompt_tokens());
    if (shared > 0) ++forks;
    all[child->id] = child;
    arrival_step[child->id] = step;
    ++created;
  }

  void abort_random() {
    std::vector<RequestId> live;
    for (const auto& [id, r] : all)
      if (!is_finished(r->status)) live.push_back(id);
    if (!live.empty()) {
      EXPECT_TRUE(sched.abort(live[uniform(0, int(live.size()) - 1)]));
    }
  }

  int64_t slot(const std::vector<BlockId>& table, int pos) const {
    return int64_t(table.at(pos / P.block_size)) * P.block_size + pos % P.block_size;
  }

  // The fake model: checks, writes and reads K/V, advances recurrent state, samples.
  std::vector<SampledToken> run_model(const SchedulerOutput& out,
                                      const std::map<RequestId, int>& computed_before) {
    std::vector<SampledToken> sampled;
    std::set<int64_t> written;
    std::set<int> slots_used;
    for (const auto& e : out.scheduled) {
      const Request& r = *all.at(e.id);
      const auto& h = prefix_hashes(r);
      EXPECT_EQ(e.start_position, computed_before.count(e.id) ? computed_before.at(e.id) : e.start_position);
      EXPECT_EQ(int(e.token_ids.size()), e.num_scheduled_tokens);
      EXPECT_TRUE(std::equal(e.token_ids.begin(), e.token_ids.end(),
                             r.all_token_ids().begin() + e.start_position));
      const int end = e.start_position + e.num_scheduled_tokens;
      EXPECT_EQ(int(e.block_table.size()), (end + P.block_size - 1) / P.block_size);
      EXPECT_EQ(e.sample, end == r.num_tokens());
      for (int p = e.start_position; p < end; ++p) {
        const int64_t s = slot(e.block_table, p);
        EXPECT_TRUE(written.insert(s).second) << "slot " << s << " written twice in one step";
        kv_store[s] = int64_t(h[p]);
      }
      for (int p = 0; p < end; ++p)  // attention reads the whole prefix
        if (kv_store[slot(e.block_table, p)] != int64_t(h[p])) {
          ADD_FAILURE() << "request " << e.id << " reads wrong K/V at position " << p;
          return {};
        }
      if (r.needs_state_slot) {
        if (e.state_slot < 0) {
          ADD_FAILURE() << "request " << e.id << " needs a state slot but has none";
          return {};
        }
        EXPECT_TRUE(slots_used.insert(e.state_slot).second);
        if (e.start_position == 0) state_store[e.state_slot] = int64_t(seed_of(r.cache_salt));
        const int64_t expect = e.start_position == 0 ? int64_t(seed_of(r.cache_salt))
                                                     : int64_t(h[e.start_position - 1]);
        EXPECT_EQ(state_store[e.state_slot], expect) << "recurrent state lost or shared";
        state_store[e.state_slot] = int64_t(h[end - 1]);
      } else {
        EXPECT_EQ(e.state_slot, -1);
      }
      if (e.sample) sampled.push_back({e.id, sample_from(h[end - 1])});
    }
    return sampled;
  }

  void check_step_shape(const SchedulerOutput& out) {
    int total = 0;
    std::set<RequestId> ids;
    for (const auto& e : out.scheduled) {
      EXPECT_TRUE(ids.insert(e.id).second) << "request scheduled twice";
      EXPECT_GE(e.num_scheduled_tokens, 1);
      if (P.chunked && P.threshold > 0) {
        EXPECT_LE(e.num_scheduled_tokens, P.threshold);
      }
      total += e.num_scheduled_tokens;
    }
    EXPECT_EQ(total, out.total_num_scheduled_tokens);
    EXPECT_LE(total, P.budget);
    for (RequestId id : out.preempted_ids) EXPECT_EQ(ids.count(id), 0u);
    preemptions += int(out.preempted_ids.size());
  }

  void check_global_invariants() {
    const KvCacheManager& kv = sched.kv();
    const BlockPool& pool = kv.pool();
    EXPECT_LE(sched.num_running(), P.max_num_seqs);
    std::vector<int> holders(P.num_blocks, 0);
    std::map<BlockId, std::vector<std::pair<int, const Request*>>> where;  // block -> (index, req)
    std::set<int> slots;
    for (const auto& r : sched.waiting()) {
      EXPECT_TRUE(kv.block_table(r->id).empty()) << "waiting request holds blocks";
      EXPECT_FALSE(sched.state_slots().slot_of(r->id).has_value());
      EXPECT_EQ(r->num_computed_tokens, 0);
    }
    for (const auto& r : sched.running()) {
      EXPECT_EQ(r->status, RequestStatus::RUNNING);
      const auto& table = kv.block_table(r->id);
      EXPECT_EQ(int(table.size()), kv.blocks_for_tokens(r->num_computed_tokens));
      EXPECT_LT(r->num_computed_tokens, r->num_tokens());
      for (int i = 0; i < int(table.size()); ++i) {
        ++holders[table[i]];
        where[table[i]].push_back({i, r.get()});
      }
      auto s = sched.state_slots().slot_of(r->id);
      EXPECT_EQ(s.has_value(), r->needs_state_slot);
      if (s) {
        EXPECT_TRUE(slots.insert(*s).second) << "state slot shared";
      }
    }
    int free_blocks = 0;
    for (BlockId b = 0; b < P.num_blocks; ++b) {
      EXPECT_EQ(pool.ref_count(b), holders[b]) << "block " << b;
      if (holders[b] == 0) ++free_blocks;
      if (holders[b] > 1)
        for (auto [idx, r] : where[b]) {
          EXPECT_EQ(idx, where[b][0].first) << "shared block at different positions";
          EXPECT_LE((idx + 1) * P.block_size, r->num_computed_tokens) << "shared block not full";
        }
    }
    EXPECT_EQ(free_blocks, kv.num_free_blocks());
    EXPECT_EQ(pool.num_free_blocks() + pool.num_used_blocks(), P.num_blocks);
    EXPECT_EQ(int(pool.free_list().size()), free_blocks);
    EXPECT_EQ(sched.state_slots().num_free_slots() + int(slots.size()), P.num_slots);
  }

  void check_finished(const Request& r) {
    std::vector<TokenId> prompt(r.prompt_token_ids().begin(), r.prompt_token_ids().end());
    const bool eos = !r.stop_token_ids.empty();
    const auto solo = solo_generation(prompt, r.cache_salt, r.max_tokens, eos);
    std::vector<TokenId> got(r.output_token_ids().begin(), r.output_token_ids().end());
    switch (r.status) {
      case RequestStatus::FINISHED_LENGTH:
        EXPECT_EQ(got, solo);
        EXPECT_EQ(int(got.size()), r.max_tokens);
        break;
      case RequestStatus::FINISHED_STOPPED:
        EXPECT_EQ(got, solo);
        EXPECT_EQ(got.back(), kStopToken);
        break;
      case RequestStatus::FINISHED_ABORTED:
        ASSERT_LE(got.size(), solo.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), solo.begin()));
        break;
      default:
        ADD_FAILURE() << "request " << r.id << " not finished: " << to_string(r.status);
    }
  }

  void run() {
    const int max_steps = 200000;
    while ((created < P.num_requests || sched.has_unfinished_requests()) && step < max_steps) {
      // Between steps: arrivals, aborts, forks.
      while (created < P.num_requests && chance(P.arrival_p)) arrive();
      if (chance(P.abort_p)) abort_random();
      if (chance(P.fork_p)) maybe_fork();

      std::map<RequestId, int> computed_before;
      for (const auto& r : sched.running()) computed_before[r->id] = r->num_computed_tokens;
      const bool had_work = sched.has_unfinished_requests();
      std::shared_ptr<const Request> oldest =
          sched.running().empty() ? nullptr : sched.running().front();

      SchedulerOutput out = sched.schedule();
      check_step_shape(out);
      if (had_work) {
        ASSERT_GT(out.total_num_scheduled_tokens, 0) << "no progress at step " << step;
      }
      // The earliest admitted running request is never starved nor preempted.
      if (oldest && (P.chunked || P.fork_p == 0)) {
        bool found = false;
        for (const auto& e : out.scheduled) found |= e.id == oldest->id;
        EXPECT_TRUE(found) << "oldest running request " << oldest->id << " not scheduled";
      }
      if (chance(P.abort_p / 2)) {  // the client disconnects while the step runs
        abort_random();
        ++mid_step_aborts;
      }
      auto sampled = run_model(out, computed_before);
      if (testing::Test::HasFailure()) return;
      auto finished = sched.update_from_output(out, sampled);
      for (const auto& r : finished) EXPECT_TRUE(is_finished(r->status));
      ++step;
      for (auto& [id, r] : all)
        if (is_finished(r->status) && !finish_step.count(id)) {
          finish_step[id] = step;
          max_latency = std::max(max_latency, step - arrival_step[id]);
          check_finished(*r);
        }
      check_global_invariants();
      if (testing::Test::HasFailure()) return;
    }
    ASSERT_LT(step, max_steps) << "simulation did not finish";
    EXPECT_EQ(sched.num_preemptions_total(), preemptions);
    // Everything finished or aborted, and everything was given back.
    for (const auto& [id, r] : all) EXPECT_TRUE(is_finished(r->status)) << id;
    EXPECT_EQ(sched.kv().num_free_blocks(), P.num_blocks);
    EXPECT_EQ(sched.kv().num_tracked_requests(), 0);
    EXPECT_EQ(sched.state_slots().num_free_slots(), P.num_slots);
    EXPECT_EQ(sched.num_running() + sched.num_waiting(), 0);
  }
};

Params tiny_pool() {
  // 12 blocks of 4 = 48 slots for up to 4 sequences of up to 40 tokens: constant preemption.
  return {4, 12, 4, 16, 0, 48, 0, true, true, 300, 20, 20, 0.0, 0.03, 0.03, 0.3};
}

struct FuzzCase {
  const char* name;
  Params params;
  bool expect_preemption, expect_prefix_hits;
};

std::vector<FuzzCase> cases() {
  std::vector<FuzzCase> c;
  c.push_back({"tiny_pool", tiny_pool(), true, true});
  Params hybrid = tiny_pool();
  hybrid.num_blocks = 20;
  hybrid.budget = 8;
  hybrid.threshold = 3;
  hybrid.num_slots = 2;
  hybrid.hybrid_p = 0.4;
  c.push_back({"hybrid_threshold", hybrid, true, true});
  Params whole = tiny_pool();
  whole.chunked = false;
  whole.budget = 48;
  whole.num_blocks = 16;
  whole.prefix_caching = false;
  c.push_back({"no_chunking_no_prefix_cache", whole, true, false});
  Params block1 = tiny_pool();
  block1.block_size = 1;
  block1.num_blocks = 50;
  c.push_back({"block_size_1", block1, true, true});
  Params roomy = {16, 40, 16, 64, 32, 256, 4, true, true, 400, 120, 60, 0.2, 0.02, 0.05, 0.5};
  c.push_back({"big_blocks_many_seqs", roomy, false, true});
  Params oversize = tiny_pool();  // many requests too large for the pool or max_model_len
  oversize.max_prompt = 40;
  oversize.max_new = 30;
  c.push_back({"oversize_rejections", oversize, true, true});
  return c;
}

}  // namespace

TEST(SchedulerFuzz, InvariantsHoldUnderRandomLoad) {
  for (const FuzzCase& fc : cases()) {
    int total_steps = 0, total_preemptions = 0, total_forks = 0, mid_step_aborts = 0;
    int max_latency = 0;
    int64_t hits = 0;
    // PORTLLM_FUZZ_SEEDS=N runs more seeds (a soak run); 6 keeps the default test under a second.
    const char* env = std::getenv("PORTLLM_FUZZ_SEEDS");
    const uint64_t num_seeds = env ? std::strtoull(env, nullptr, 10) : 6;
    for (uint64_t seed = 1; seed <= num_seeds; ++seed) {
      SCOPED_TRACE(testing::Message() << fc.name << " seed " << seed);
      Sim sim(fc.params, seed);
      sim.run();
      if (HasFailure()) return;
      total_steps += sim.step;
      total_preemptions += sim.preemptions;
      total_forks += sim.forks;
      mid_step_aborts += sim.mid_step_aborts;
      max_latency = std::max(max_latency, sim.max_latency);
      hits += sim.sched.kv().prefix_cache_hits();
      if (fc.params.max_prompt == 40) {
        EXPECT_GT(sim.rejected, 0);
      }
    }
    // The scenarios must actually exercise what they are meant to.
    if (fc.expect_preemption) {
      EXPECT_GT(total_preemptions, 0) << fc.name;
    }
    if (fc.expect_prefix_hits) {
      EXPECT_GT(hits, 0) << fc.name;
    }
    if (!fc.params.prefix_caching) {
      EXPECT_EQ(hits, 0) << fc.name;
    }
    EXPECT_GT(total_forks, 0) << fc.name;
    EXPECT_GT(total_steps, 3000) << fc.name;
    std::printf("[fuzz] %-28s steps %7d preemptions %6d forks %5d prefix-hit tokens %8lld "
                "mid-step aborts %4d longest request %d steps\n",
                fc.name, total_steps, total_preemptions, total_forks, (long long)hits,
                mid_step_aborts, max_latency);
  }
}
