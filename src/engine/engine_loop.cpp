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
        return stopping_ || !inbox_.empty() || !abort_inbox_.empty() || scheduler_->has_unfinished_requests();
      });
      if (stopping_) break;
    }
    take_inbox(outs);
    if (scheduler_->has_unfinished_requests()) step(outs);
    const auto t = Clock::now();
    deliver(outs);
    loop_stats_.outputs_s += seconds_since(t);
  }
  take_inbox(outs);
  abort_everything(outs);
  deliver(outs);
}

void EngineImpl::take_inbox(Outputs& outs) {
  std::vector<std::unique_ptr<EngineRequest>> fresh;
  std::vector<uint64_t> aborts;
  {
    std::lock_guard<std::mutex> lk(mu_);
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

void EngineImpl::step(Outputs& outs) {
  auto t = Clock::now();
  auto lap = [&t](double& acc) {
    const auto now = Clock::now();
    acc += std::chrono::duration<double>(now - t).count();
    t = now;
  };
  const SchedulerOutput out = scheduler_->schedule();
  lap(loop_stats_.schedule_s);
  loop_stats_.num_preemptions += int64_t(out.preempted_ids.size());
  if (out.empty()) {  // nothing can run right now; should not happen, but never spin
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  loop_stats_.steps++;  // a step that runs the model
  std::vector<SeqState*> rows;
  for (const ScheduledRequest& sr : out.scheduled)
    if (sr.sample) rows.push_back(seqs_.at(sr.id));
  std::vector<SampleResult> results;
  try {
    // Logits stay on the runner's device; the SAMPLE op picks the tokens there (batch_sampler.h).
    Tensor logits = runner_->execute(out);
    lap(loop_stats_.forward_s);
    std::vector<SampleRow> sample_in;
    sample_in.reserve(rows.size());
    for (SeqState* s : rows) sample_in.push_back({&s->owner->params, &s->sampler, s->owner->stop_ids});
    results = sample_rows(*ctx_, logits, sample_in);
    lap(loop_stats_.sample_s);
  } catch (const std::exception& e) {
    fail_step(out, e.what(), outs);
    return;
  }
  std::vector<SampledToken> sampled;
  sampled.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) sampled.push_back({rows[i]->req->id, results[i].token});
  const auto finished = scheduler_->update_from_output(out, sampled);
  loop_stats_.generation_tokens_total += int64_t(sampled.size());
  std::unordered_map<RequestId, RequestStatus> fin;
  for (const auto& f : finished) fin.emplace(f->id, f->status);
  for (size_t i = 0; i < rows.size(); ++i) {
    auto it = fin.find(rows[i]->req->id);
    on_token(*rows[i], results[i], it == fin.end() ? std::nullopt : std::optional<RequestStatus>(it->second), outs);
  }
  // n > 1: the other samples start once sample 0 has its prompt computed (they share its blocks).
  for (SeqState* s : rows)
    if (s->index == 0 && !s->owner->children_started && s->owner->params.n > 1) start_children(*s->owner, outs);
  lap(loop_stats_.outputs_s);
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
