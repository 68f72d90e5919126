#include "sched/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace portllm {

Scheduler::Scheduler(const SchedulerConfig& config)
    : cfg_((config.validate(), config)),
      kv_(config.num_blocks, config.block_size, config.enable_prefix_caching),
      slots_(config.num_state_slots) {}

void Scheduler::validate_new(const Request& r) const {
  if (requests_.count(r.id)) PL_THROW("request {}: id already in use", r.id);
  if (r.num_prompt_tokens() == 0) PL_THROW("request {}: empty prompt", r.id);
  if (r.status != RequestStatus::WAITING || r.num_output_tokens() != 0 ||
      r.num_computed_tokens != 0)
    PL_THROW("request {}: must be new (status waiting, no outputs, nothing computed)", r.id);
  if (r.max_tokens < 1) PL_THROW("request {}: max_tokens must be >= 1, got {}", r.id, r.max_tokens);
  const int64_t longest = int64_t(r.num_prompt_tokens()) + r.max_tokens;
  if (longest > cfg_.max_model_len)
    PL_THROW("request {}: prompt ({} tokens) + max_tokens ({}) exceeds max_model_len ({})", r.id,
             r.num_prompt_tokens(), r.max_tokens, cfg_.max_model_len);
  // The last sampled token is never fed back, so at most longest - 1 tokens need K/V. A request
  // that cannot fit the whole pool alone would be preempted forever: reject it now.
  const int blocks = kv_.blocks_for_tokens(static_cast<int>(longest - 1));
  if (blocks > kv_.num_blocks())
    PL_THROW("request {}: prompt ({} tokens) + max_tokens ({}) needs {} KV blocks of {} tokens "
             "but the cache has only {}",
             r.id, r.num_prompt_tokens(), r.max_tokens, blocks, kv_.block_size(),
             kv_.num_blocks());
  if (r.needs_state_slot && slots_.num_slots() == 0)
    PL_THROW("request {}: needs a recurrent state slot but num_state_slots is 0", r.id);
}

void Scheduler::add_request(std::shared_ptr<Request> req) {
  PL_CHECK(req != nullptr, "null request");
  validate_new(*req);
  req->arrival = next_arrival_++;
  requests_.emplace(req->id, req);
  waiting_.push_back(std::move(req));
}

int Scheduler::fork_request(RequestId parent_id, std::shared_ptr<Request> child) {
  PL_CHECK(child != nullptr, "null request");
  PL_CHECK(steps_in_flight_ == 0, "fork_request between schedule() and update_from_output()");
  auto it = requests_.find(parent_id);
  PL_CHECK(it != requests_.end(), "fork: unknown parent request {}", parent_id);
  const Request& parent = *it->second;
  validate_new(*child);
  const bool can_share = parent.status == RequestStatus::RUNNING && !child->needs_state_slot &&
                         !parent.needs_state_slot &&
                         num_running() < cfg_.max_num_seqs;
  const int shared = can_share ? kv_.fork(parent.kv_view(), child->kv_view()) : 0;
  if (shared == 0) {
    kv_.free(child->kv_view());  // drop the empty table fork may have created
    add_request(std::move(child));
    return 0;
  }
  child->arrival = next_arrival_++;
  child->status = RequestStatus::RUNNING;
  child->num_computed_tokens = shared;
  child->num_cached_tokens = shared;
  requests_.emplace(child->id, child);
  running_.push_back(std::move(child));
  return shared;
}

int Scheduler::tokens_to_schedule(int remaining, int budget) const {
  if (!cfg_.enable_chunked_prefill) return remaining <= budget ? remaining : 0;
  int n = std::min(remaining, budget);
  if (cfg_.long_prefill_token_threshold > 0) n = std::min(n, cfg_.long_prefill_token_threshold);
  return n;
}

void Scheduler::remove_from(std::deque<std::shared_ptr<Request>>& q, RequestId id) {
  auto it = std::find_if(q.begin(), q.end(), [&](const auto& r) { return r->id == id; });
  if (it != q.end()) q.erase(it);
}

void Scheduler::release(Request& r) {
  kv_.free(r.kv_view());
  slots_.free(r.id);
}

void Scheduler::preempt(Request& r, std::vector<Planned>& plan, int& budget,
                        SchedulerOutput& out) {
  // A victim already planned this step gives its tokens back to the budget.
  auto p = std::find_if(plan.begin(), plan.end(), [&](const Planned& x) { return x.req == &r; });
  if (p != plan.end()) {
    budget += p->num_tokens;
    plan.erase(p);
  }
  release(r);  // num_computed_tokens not advanced yet: only truly computed blocks get cached
  r.num_computed_tokens = 0;
  r.status = RequestStatus::PREEMPTED;
  ++r.num_preemptions;
  ++num_preemptions_;
  std::shared_ptr<Request> self = requests_.at(r.id);
  remove_from(running_, r.id);
  waiting_.push_front(std::move(self));  // successive victims: older ones end up in front
  out.preempted_ids.push_back(r.id);
}

SchedulerOutput Scheduler::schedule() {
  PL_CHECK(steps_in_flight_ == 0 || (steps_in_flight_ == 1 && placeholders_added_),
           "schedule() called again before update_from_output()");
  placeholders_added_ = false;
  SchedulerOutput out;
  out.finished_ids = std::move(finished_since_step_);
  finished_since_step_.clear();
  int budget = cfg_.max_num_batched_tokens;
  std::vector<Planned> plan;

  // 1 + 2: running requests, decodes before longer work, each pass oldest first.
  for (bool decode_pass : {true, false}) {
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Request& r = *running_[i];
      const int remaining = r.num_tokens() - r.num_computed_tokens;
      if (remaining <= 0 || (remaining == 1) != decode_pass) continue;
      const int n = tokens_to_schedule(remaining, budget);
      if (n == 0) continue;
      bool preempted_self = false;
      while (!kv_.allocate_slots(r.kv_view(), n)) {
        // Victims come from the back, so they are never before index i.
        Request& victim = *running_.back();
        preempted_self = &victim == &r;
        preempt(victim, plan, budget, out);
        if (preempted_self) break;
      }
      if (preempted_self) break;  // r was the last running request of this pass
      plan.push_back({&r, n});
      budget -= n;
    }
  }

  // 3: admit waiting requests FCFS. Not in a step that preempted: the pool is full.
  while (out.preempted_ids.empty() && !waiting_.empty() && budget > 0 &&
         num_running() < cfg_.max_num_seqs) {
    Request& r = *waiting_.front();
    if (r.needs_state_slot && slots_.num_free_slots() == 0) break;
    // A hybrid model's recurrent state is not cached with the blocks: no prefix hits for it.
    CachedPrefix prefix;
    if (!r.needs_state_slot) prefix = kv_.get_computed_blocks(r.kv_view());
    const int n = tokens_to_schedule(r.num_tokens() - prefix.num_tokens, budget);
    if (n == 0 || !kv_.allocate_slots(r.kv_view(), n, prefix)) break;  // FCFS: no overtaking
    if (r.needs_state_slot) slots_.allocate(r.id);
    r.status = RequestStatus::RUNNING;
    r.num_computed_tokens = prefix.num_tokens;
    if (r.num_cached_tokens < 0) r.num_cached_tokens = prefix.num_tokens;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
    plan.push_back({&r, n});
    budget -= n;
  }

  for (const Planned& p : plan) {
    Request& r = *p.req;
    ScheduledRequest s;
    s.id = r.id;
    s.num_scheduled_tokens = p.num_tokens;
    s.start_position = r.num_computed_tokens;
    auto toks = r.all_token_ids().subspan(s.start_position, p.num_tokens);
    s.token_ids.assign(toks.begin(), toks.end());
    s.block_table = kv_.block_table(r.id);
    s.sample = s.start_position + p.num_tokens == r.num_tokens();
    s.state_slot = slots_.slot_of(r.id).value_or(-1);
    // Advanced now (as in vLLM v1) so the next step sees these tokens as computed.
    r.num_computed_tokens += p.num_tokens;
    out.total_num_scheduled_tokens += p.num_tokens;
    out.scheduled.push_back(std::move(s));
  }
  if (!out.scheduled.empty()) ++steps_in_flight_;
  return out;
}

std::vector<RequestId> Scheduler::add_output_placeholders(const SchedulerOutput& out) {
  PL_CHECK(steps_in_flight_ == 1 && !placeholders_added_, "add_output_placeholders: needs exactly one step in flight");
  std::vector<RequestId> got;
  for (const ScheduledRequest& s : out.scheduled) {
    auto it = requests_.find(s.id);
    if (!s.sample || it == requests_.end()) continue;
    Request& r = *it->second;
    // The sample in flight is the last one by length: nothing to schedule after it.
    if (r.status != RequestStatus::RUNNING || r.num_placeholders > 0 || r.num_output_tokens() + 1 >= r.max_tokens)
      continue;
    r.append_output(kPlaceholderToken);
    ++r.num_placeholders;
    got.push_back(r.id);
  }
  placeholders_added_ = true;
  return got;
}

bool Scheduler::finish_request(RequestId id, RequestStatus status) {
  PL_CHECK(is_finished(status), "finish_request with non-final status {}", to_string(status));
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  if (steps_in_flight_ > 0) {  // the runner may still use its blocks: apply after the step
    deferred_finishes_.emplace_back(id, status);
    return true;
  }
  finish_now(*it->second, status);
  return true;
}

void Scheduler::finish_now(Request& r, RequestStatus status) {
  const RequestId id = r.id;
  std::shared_ptr<Request> keep = requests_.at(id);
  release(r);
  remove_from(r.status == RequestStatus::RUNNING ? running_ : waiting_, id);
  r.status = status;
  requests_.erase(id);
  finished_since_step_.push_back(id);
}

std::vector<std::shared_ptr<Request>> Scheduler::update_from_output(
    const SchedulerOutput& out, std::span<const SampledToken> sampled) {
  std::vector<std::shared_ptr<Request>> finished;
  for (const SampledToken& st : sampled) {
    auto it = requests_.find(st.id);
    if (it == requests_.end()) continue;
    std::shared_ptr<Request> r = it->second;
    auto s = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                          [&](const ScheduledRequest& x) { return x.id == st.id; });
    // The sampled token's index: its placeholder's (the oldest), or the end.
    const int at = r->num_tokens() - r->num_placeholders;
    PL_CHECK(s != out.scheduled.end() && s->sample && r->num_computed_tokens >= at,
             "request {}: token sampled but the step did not ask for one", st.id);
    if (r->num_placeholders > 0) {
      r->set_token(at, st.token);
      --r->num_placeholders;
    } else {
      r->append_output(st.token);
    }
    const bool stop = std::find(r->stop_token_ids.begin(), r->stop_token_ids.end(), st.token) !=
                      r->stop_token_ids.end();
    if (stop || r->num_output_tokens() >= r->max_tokens) {
      finish_now(*r, stop ? RequestStatus::FINISHED_STOPPED : RequestStatus::FINISHED_LENGTH);
      finished.push_back(std::move(r));
    }
  }
  if (!out.scheduled.empty() && steps_in_flight_ > 0) --steps_in_flight_;
  for (auto [id, status] : deferred_finishes_) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;  // already finished by this step
    finished.push_back(it->second);
    finish_now(*it->second, status);
  }
  deferred_finishes_.clear();
  // A request that reached its last token but got no sample would never be scheduled again.
  // Checked once no step is in flight: a later step may still sample it (async scheduling).
  if (steps_in_flight_ == 0)
    for (const ScheduledRequest& s : out.scheduled) {
      auto it = requests_.find(s.id);
      if (s.sample && it != requests_.end())
        PL_CHECK(it->second->num_computed_tokens < it->second->num_tokens(),
                 "request {}: the step asked for a sample but none was given", s.id);
    }
  return finished;
}

std::shared_ptr<const Request> Scheduler::find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second;
}

}  // namespace portllm
