// The scheduler: one rule, as in vLLM v1. Each step every running request advances
// num_computed_tokens toward num_tokens() (prompt + outputs) within a token budget:
//   1. running requests with one token left (decodes), oldest first;
//   2. running requests with more left (chunked prefill, recompute, fork tails), oldest first;
//   3. waiting requests, FCFS, while budget, max_num_seqs, KV blocks and state slots allow
//      (prefix-cache hits set num_computed_tokens on admission). Skipped in a step that preempted.
// A running request that cannot get blocks preempts the most recently admitted running request
// (possibly itself): its blocks and state slot are freed, num_computed_tokens = 0, and it goes to
// the front of the waiting queue to be recomputed. See docs/scheduler.md.
//
// Call order, on one thread: schedule() -> run the model -> update_from_output(), with
// add_request / fork_request / abort between steps (an abort during a step is applied at the end
// of update_from_output, after the runner is done with the request's blocks).
//
// Async scheduling puts one more step in flight: schedule(n) -> launch n -> add_output_placeholders(n)
// -> schedule(n + 1) -> launch n + 1 -> update_from_output(n) -> ... Each request step n samples
// gets a placeholder token, so step n + 1 feeds that position (the runner takes the real id from
// the device), and update_from_output(n) writes the sampled token over it. Blocks a finish frees
// while step n + 1 still runs are reused only by later steps, which the device runs after it.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/state_slot_pool.h"
#include "sched/request.h"
#include "sched/scheduler_config.h"
#include "sched/scheduler_output.h"

namespace portllm {

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& config);

  // Queues a fresh request. Throws portllm::Error for one that could never run (empty prompt,
  // prompt + max_tokens over max_model_len or over the whole KV pool, duplicate id, ...).
  void add_request(std::shared_ptr<Request> req);
  // n > 1 sampling: child has the same prompt as parent, a RUNNING request. The child joins the
  // running set sharing the parent's full computed blocks (see KvCacheManager::fork) and returns
  // the number of tokens it starts with; when it cannot (no room in max_num_seqs, nothing to
  // share, a state-slot model) it is queued like add_request and 0 is returned.
  int fork_request(RequestId parent, std::shared_ptr<Request> child);
  // Finishes a waiting or running request and frees what it holds. False for an unknown id.
  bool abort(RequestId id) { return finish_request(id, RequestStatus::FINISHED_ABORTED); }
  // Also used by the engine for stop strings (FINISHED_STOPPED).
  bool finish_request(RequestId id, RequestStatus status);

  SchedulerOutput schedule();
  // Async scheduling, between schedule() of step n (still running) and schedule() of step n + 1:
  // appends a placeholder output to each request `out` samples, except where that sample will be
  // its last by max_tokens; returns the requests that got one. Blocks are hashed only once
  // computed, so the placeholder is written over (update_from_output) before any hash covers it.
  std::vector<RequestId> add_output_placeholders(const SchedulerOutput& out);
  // Appends the sampled tokens (or writes them over their placeholders), finishes requests that
  // hit max_tokens or a stop token, and returns every request that finished since schedule()
  // (including deferred aborts). Steps are updated in the order they were scheduled.
  std::vector<std::shared_ptr<Request>> update_from_output(const SchedulerOutput& out,
                                                           std::span<const SampledToken> sampled);

  bool has_unfinished_requests() const { return !requests_.empty(); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int num_running() const { return static_cast<int>(running_.size()); }
  std::shared_ptr<const Request> find(RequestId id) const;
  const std::deque<std::shared_ptr<Request>>& running() const { return running_; }
  const std::deque<std::shared_ptr<Request>>& waiting() const { return waiting_; }
  const KvCacheManager& kv() const { return kv_; }
  const StateSlotPool& state_slots() const { return slots_; }
  const SchedulerConfig& config() const { return cfg_; }
  int64_t num_preemptions_total() const { return num_preemptions_; }  // for /metrics
  int steps_in_flight() const { return steps_in_flight_; }
  void reset_prefix_cache() { kv_.reset_prefix_cache(); }

 private:
  struct Planned {
    Request* req;
    int num_tokens;
  };
  void validate_new(const Request& r) const;
  int tokens_to_schedule(int remaining, int budget) const;
  void preempt(Request& r, std::vector<Planned>& plan, int& budget, SchedulerOutput& out);
  void release(Request& r);  // frees its blocks and state slot
  void finish_now(Request& r, RequestStatus status);
  void remove_from(std::deque<std::shared_ptr<Request>>& q, RequestId id);

  SchedulerConfig cfg_;
  KvCacheManager kv_;
  StateSlotPool slots_;
  std::deque<std::shared_ptr<Request>> waiting_;
  std::deque<std::shared_ptr<Request>> running_;  // admission order: back = most recent
  std::unordered_map<RequestId, std::shared_ptr<Request>> requests_;  // waiting + running
  std::vector<RequestId> finished_since_step_;
  std::vector<std::pair<RequestId, RequestStatus>> deferred_finishes_;
  int steps_in_flight_ = 0;         // scheduled, not yet updated (2 with async scheduling)
  bool placeholders_added_ = false;  // add_output_placeholders since the last schedule()
  uint64_t next_arrival_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace portllm
