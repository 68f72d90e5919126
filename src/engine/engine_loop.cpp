// The engine loop thread: schedule -> run the model -> sample -> scheduler update -> text and
// stop strings -> callbacks. Everything here runs on that one thread; the mutex is taken only to
// swap the inbox, never around the model or the callbacks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/batch_sampler.h"
#include "engine/engine_impl.h"
#include "engine/logits_processor.h"

namespace portllm {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

void EngineImpl::loop() {
  Outputs outs;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] {
        return stopping_ || (!intake_held_ && (!inbox_.empty() || !abort_inbox_.empty())) ||
               scheduler_->has_unfinished_requests() || inflight_.has_value();
      });
      if (stopping_) break;
    }
    take_inbox(outs, false);
    if (inflight_ || scheduler_->has_unfinished_requests()) step(outs);
    const auto t = Clock::now();
    deliver(outs);
    loop_stats_.outputs_s += seconds_since(t);
  }
  if (inflight_) {  // the device may still write the step's tokens: read them back first
    finish_step(*inflight_, outs);
    inflight_.reset();
  }
  take_inbox(outs, true);  // held or not: everything still queued is aborted below
  abort_everything(outs);
  deliver(outs);
}

void EngineImpl::take_inbox(Outputs& outs, bool even_if_held) {
  std::vector<std::unique_ptr<EngineRequest>> fresh;
  std::vector<uint64_t> aborts;
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Aborts wait with the requests (one may name a request still in the inbox).
    if (intake_held_ && !even_if_held) return;
    fresh.swap(inbox_);
    aborts.swap(abort_inbox_);
  }
  for (auto& r : fresh) start_request(std::move(r), outs);
  for (uint64_t id : aborts) apply_abort(id, outs);
}

RequestOutput EngineImpl::blank_output(const SeqState& s) const {
  RequestOutput o;
  o.request_id = s.owner->id;
  o.index = s.index;
  o.prompt_tokens = int(s.owner->prompt.size());
  o.completion_tokens = s.completion_tokens;
  o.cached_tokens = s.req ? std::max(0, s.req->num_cached_tokens) : 0;
  return o;
}

void EngineImpl::start_request(std::unique_ptr<EngineRequest> r, Outputs& outs) {
  EngineRequest& R = *r;
  requests_[R.id] = std::move(r);
  for (auto& s : R.seqs) {
    s->req = std::make_shared<Request>(next_seq_id_++, R.prompt, R.params.max_tokens);
    s->req->stop_token_ids = R.stop_ids;
    s->req->needs_state_slot = runner_->needs_state_slots();
    seqs_[s->req->id] = s.get();
  }
  loop_stats_.prompt_tokens_total += int64_t(R.prompt.size());
  SeqState& first = *R.seqs[0];
  try {
    scheduler_->add_request(first.req);
    first.in_scheduler = true;
  } catch (const std::exception& e) {
    RequestOutput o = blank_output(first);
    o.error = e.what();
    finish_seq(first, FinishReason::Error, o, outs);
  }
}

void EngineImpl::apply_abort(uint64_t id, Outputs& outs) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  for (auto& s : it->second->seqs) {
    if (s->finished) continue;
    if (s->in_scheduler) scheduler_->abort(s->req->id);
    RequestOutput o = blank_output(*s);
    finish_seq(*s, FinishReason::Abort, o, outs);
  }
}

void EngineImpl::abort_everything(Outputs& outs) {
  std::vector<uint64_t> ids;
  for (auto& [id, r] : requests_) ids.push_back(id);
  for (uint64_t id : ids) apply_abort(id, outs);
}

void EngineImpl::finish_seq(SeqState& s, FinishReason reason, RequestOutput& o, Outputs& outs) {
  if (s.finished) return;
  s.finished = true;
  o.finished = true;
  o.finish_reason = reason;
  EngineRequest& R = *s.owner;
  --R.num_unfinished;
  seqs_.erase(s.req->id);
  outs.emplace_back(&R, std::move(o));
  // Samples 1.. start after sample 0's prompt is computed; if it fails or is aborted first they
  // never will, so they end the same way.
  if (s.index == 0 && !R.children_started && (reason == FinishReason::Abort || reason == FinishReason::Error)) {
    R.children_started = true;
    for (auto& c : R.seqs)
      if (!c->finished) {
        RequestOutput co = blank_output(*c);
        co.error = outs.back().second.error;
        finish_seq(*c, reason, co, outs);
      }
  }
}

void EngineImpl::start_children(EngineRequest& R, Outputs& outs) {
  R.children_started = true;
  SeqState& parent = *R.seqs[0];
  const bool share = !parent.finished && parent.req->status == RequestStatus::RUNNING;
  for (size_t i = 1; i < R.seqs.size(); ++i) {
    SeqState& c = *R.seqs[i];
    if (c.finished) continue;
    try {
      if (share) scheduler_->fork_request(parent.req->id, c.req);
      else scheduler_->add_request(c.req);
      c.in_scheduler = true;
    } catch (const std::exception& e) {
      RequestOutput o = blank_output(c);
      o.error = e.what();
      finish_seq(c, FinishReason::Error, o, outs);
    }
  }
}

void EngineImpl::fail_step(const SchedulerOutput& out, const std::string& what, Outputs& outs) {
  std::fprintf(stderr, "portllm engine: step failed: %s\n", what.c_str());
  for (const ScheduledRequest& sr : out.scheduled) scheduler_->finish_request(sr.id, RequestStatus::FINISHED_ABORTED);
  scheduler_->update_from_output(out, {});
  for (const ScheduledRequest& sr : out.scheduled) {
    auto it = seqs_.find(sr.id);
    if (it == seqs_.end()) continue;
    RequestOutput o = blank_output(*it->second);
    o.error = what;
    finish_seq(*it->second, FinishReason::Error, o, outs);
  }
}

// One turn of the loop. Synchronous: schedule, launch, read back, update. With async scheduling a
// launched step stays in flight across one turn: the next turn schedules and launches its
// successor first when it can (schedule_ahead), then reads it back (finish_step), so the host's
// work for step n + 1 runs while the device computes step n.
void EngineImpl::step(Outputs& outs) {
  if (inflight_) {
    std::optional<StepInFlight> next;
    if (can_schedule_ahead(*inflight_)) next = schedule_ahead(*inflight_, outs);
    finish_step(*inflight_, outs);
    inflight_ = std::move(next);
    return;
  }
  const auto t = Clock::now();
  SchedulerOutput out = scheduler_->schedule();
  loop_stats_.schedule_s += seconds_since(t);
  loop_stats_.num_preemptions += int64_t(out.preempted_ids.size());
  if (out.empty()) {  // nothing can run right now; should not happen, but never spin
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  std::optional<StepInFlight> f = launch_step(std::move(out), nullptr, outs);
  if (!f) return;
  if (async_scheduling_) inflight_ = std::move(f);
  else finish_step(*f, outs);
}

// Step n + 1 can be scheduled before step n's tokens are known when it is exactly one more token
// for every request step n samples: nothing else runs or waits to be admitted, no request will be
// preempted for blocks, and no request's next draw depends on step n's token on the host
// (penalties, logprobs) or waits for it to start its n > 1 siblings.
bool EngineImpl::can_schedule_ahead(const StepInFlight& f) const {
  if (!async_scheduling_) return false;
  const Scheduler& sc = *scheduler_;
  const size_t n = f.rows.size();
  if (sc.steps_in_flight() != 1 || n == 0 || n != f.out.scheduled.size() || n != sc.running().size()) return false;
  if (!sc.waiting().empty() && sc.num_running() < sched_cfg_.max_num_seqs) return false;
  if (size_t(sc.kv().num_free_blocks()) < n || int(n) > sched_cfg_.max_num_batched_tokens) return false;
  for (RequestId id : f.rows) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second->finished) return false;
    const SeqState& s = *it->second;
    const SamplingParams& p = s.owner->params;
    if (p.logprobs >= 0 || uses_penalties(p)) return false;
    if (s.index == 0 && p.n > 1 && !s.owner->children_started) return false;
  }
  return true;
}

std::optional<EngineImpl::StepInFlight> EngineImpl::schedule_ahead(const StepInFlight& f, Outputs& outs) {
  const auto t = Clock::now();
  scheduler_->add_output_placeholders(f.out);
  SchedulerOutput out = scheduler_->schedule();
  loop_stats_.schedule_s += seconds_since(t);
  if (out.empty()) return std::nullopt;  // every request ends with step n (max_tokens)
  // Row i of step n + 1 feeds the token row src[i] of step n samples.
  std::unordered_map<RequestId, int> row_of;
  for (size_t i = 0; i < f.rows.size(); ++i) row_of.emplace(f.rows[i], int(i));
  DeviceTokenFeed feed;
  feed.ids = f.sample.ids;
  for (const ScheduledRequest& sr : out.scheduled) {
    auto it = row_of.find(sr.id);
    if (sr.num_scheduled_tokens != 1 || !sr.sample || it == row_of.end() || !out.preempted_ids.empty()) {
      // can_schedule_ahead rules this out; were it wrong, the step would feed placeholder ids.
      fail_step(out, "async scheduling: the step scheduled ahead is not one token per request of the step before", outs);
      return std::nullopt;
    }
    feed.src_rows.push_back(it->second);
  }
  ++loop_stats_.steps_ahead;
  return launch_step(std::move(out), &feed, outs);
}

std::optional<EngineImpl::StepInFlight> EngineImpl::launch_step(SchedulerOutput out, const DeviceTokenFeed* feed,
                                                                Outputs& outs) {
  const auto t = Clock::now();
  loop_stats_.steps++;  // a step that runs the model
  StepInFlight f;
  f.out = std::move(out);
  std::vector<SampleRow> sample_in;
  for (const ScheduledRequest& sr : f.out.scheduled)
    if (sr.sample) {
      SeqState* s = seqs_.at(sr.id);
      f.rows.push_back(sr.id);
      sample_in.push_back({&s->owner->params, &s->sampler, s->owner->stop_ids});
    }
  try {
    // Logits stay on the runner's device; the SAMPLE op picks the tokens there (batch_sampler.h).
    Tensor logits = runner_->execute(f.out, feed);
    f.sample = sampler_->launch(logits, sample_in);
  } catch (const std::exception& e) {
    fail_step(f.out, e.what(), outs);
    return std::nullopt;
  }
  loop_stats_.forward_s += seconds_since(t);
  return f;
}

void EngineImpl::finish_step(StepInFlight& f, Outputs& outs) {
  auto t = Clock::now();
  // A sequence finished since the launch (an abort taken from the inbox meanwhile) may be gone:
  // its row is read but its sampler state is not touched, and its token goes nowhere.
  std::vector<SeqState*> alive(f.rows.size(), nullptr);  // null: gone or finished
  for (size_t i = 0; i < f.rows.size(); ++i) {
    auto it = seqs_.find(f.rows[i]);
    if (it != seqs_.end() && !it->second->finished) alive[i] = it->second;
    else f.sample.rows[i].state = nullptr;
  }
  std::vector<SampleResult> results;
  try {
    results = sampler_->finish(f.sample);
  } catch (const std::exception& e) {
    fail_step(f.out, e.what(), outs);
    return;
  }
  loop_stats_.sample_s += seconds_since(t);
  t = Clock::now();
  std::vector<SampledToken> sampled;
  sampled.reserve(f.rows.size());
  for (size_t i = 0; i < f.rows.size(); ++i)
    if (alive[i]) sampled.push_back({f.rows[i], results[i].token});
  const auto finished = scheduler_->update_from_output(f.out, sampled);
  loop_stats_.generation_tokens_total += int64_t(sampled.size());
  std::unordered_map<RequestId, RequestStatus> fin;
  for (const auto& r : finished) fin.emplace(r->id, r->status);
  std::vector<SeqState*> rows;
  for (size_t i = 0; i < f.rows.size(); ++i) {
    SeqState* s = alive[i];
    if (!s || s->finished) continue;  // finished meanwhile: a sibling's error ends its samples too
    rows.push_back(s);
    auto it = fin.find(f.rows[i]);
    on_token(*s, results[i], it == fin.end() ? std::nullopt : std::optional<RequestStatus>(it->second), outs);
  }
  // n > 1: the other samples start once sample 0 has its prompt computed (they share its blocks).
  for (SeqState* s : rows)
    if (s->index == 0 && !s->owner->children_started && s->owner->params.n > 1) start_children(*s->owner, outs);
  loop_stats_.outputs_s += seconds_since(t);
}

void EngineImpl::on_token(SeqState& s, const SampleResult& res, std::optional<RequestStatus> sched_finish,
                          Outputs& outs) {
  RequestOutput o = blank_output(s);
  o.token_ids.push_back(res.token);
  if (res.logprob) o.logprobs.push_back(*res.logprob);
  o.completion_tokens = ++s.completion_tokens;
  const bool stop_token = sched_finish == RequestStatus::FINISHED_STOPPED;
  // Stop strings count only once min_tokens are out (as in vLLM).
  const bool check = s.completion_tokens > s.owner->params.min_tokens;
  auto add_text = [&](const std::string& piece) { o.text += check ? s.stop.push(piece) : piece; };
  if (s.detok && !stop_token) add_text(s.detok->push(res.token));  // a stop token has no text
  if (!s.stop.matched() && sched_finish && s.detok) add_text(s.detok->finish());
  if (s.stop.matched()) {
    if (!sched_finish) scheduler_->finish_request(s.req->id, RequestStatus::FINISHED_STOPPED);
    o.stop_reason = s.stop.matched_stop();
    finish_seq(s, FinishReason::Stop, o, outs);
    return;
  }
  if (!sched_finish) {
    outs.emplace_back(s.owner, std::move(o));
    return;
  }
  o.text += s.stop.flush();
  const FinishReason reason = *sched_finish == RequestStatus::FINISHED_STOPPED ? FinishReason::Stop
                              : *sched_finish == RequestStatus::FINISHED_ABORTED ? FinishReason::Abort
                                                                                 : FinishReason::Length;
  finish_seq(s, reason, o, outs);
}

void EngineImpl::deliver(Outputs& outs) {
  // Stats first, so a client woken by a final output already sees its blocks freed.
  std::vector<uint64_t> done;
  for (auto& [owner, o] : outs)
    if (o.finished && owner->num_unfinished == 0 && requests_.count(owner->id) &&
        std::find(done.begin(), done.end(), owner->id) == done.end())
      done.push_back(owner->id);
  loop_stats_.requests_finished += int64_t(done.size());
  publish_stats();
  for (auto& [owner, o] : outs) {
    if (!owner->callback) continue;
    try {
      owner->callback(o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "portllm engine: output callback of request %llu threw: %s\n",
                   static_cast<unsigned long long>(o.request_id), e.what());
    }
  }
  outs.clear();
  for (uint64_t id : done) requests_.erase(id);
}

void EngineImpl::publish_stats() {
  const KvCacheManager& kv = scheduler_->kv();
  loop_stats_.num_running = scheduler_->num_running();
  loop_stats_.num_waiting = scheduler_->num_waiting();
  loop_stats_.num_kv_blocks = kv.num_blocks();
  loop_stats_.num_free_kv_blocks = kv.num_free_blocks();
  loop_stats_.kv_usage = kv.usage();
  loop_stats_.prefix_cache_queries = kv.prefix_cache_queries();
  loop_stats_.prefix_cache_hits = kv.prefix_cache_hits();
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_ = loop_stats_;
}

}  // namespace portllm
