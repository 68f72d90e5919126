// The Engine implementation. Public calls (any thread) validate and queue work in an inbox
// under a mutex; one loop thread owns the model, runner, scheduler and per-request state, and
// never holds the mutex while it runs the model or calls callbacks.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "engine/batch_sampler.h"
#include "engine/engine.h"
#include "engine/request_state.h"
#include "model/model.h"
#include "runtime/model_runner.h"
#include "sched/scheduler.h"

namespace portllm {

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(const EngineConfig& cfg);
  ~EngineImpl() override;

  uint64_t add_request(RequestInput input, OutputCallback cb) override;
  void hold_intake(bool held) override;
  void abort(uint64_t request_id) override;
  EngineStats stats() const override;
  const tok::Tokenizer& tokenizer() const override;
  bool has_tokenizer() const override { return tokenizer_ != nullptr; }
  const ModelConfig& model_config() const override { return model_->config(); }
  int64_t max_model_len() const override { return max_model_len_; }
  const SchedulerConfig& scheduler_config() const { return sched_cfg_; }
  void shutdown() override;

 private:
  // Setup (engine_impl.cpp).
  void load(const EngineConfig& cfg);
  std::vector<int32_t> prompt_ids(const RequestInput& in) const;
  void validate(const std::vector<int32_t>& prompt, const SamplingParams& p) const;

  // Loop thread (engine_loop.cpp).
  using Outputs = std::vector<std::pair<EngineRequest*, RequestOutput>>;
  void loop();
  void take_inbox(Outputs& outs, bool even_if_held);
  void start_request(std::unique_ptr<EngineRequest> r, Outputs& outs);
  void apply_abort(uint64_t id, Outputs& outs);
  // A launched step: its scheduler output, the requests it samples (in row order) and their
  // sampling in progress.
  struct StepInFlight {
    SchedulerOutput out;
    std::vector<RequestId> rows;
    PendingSample sample;
  };
  void step(Outputs& outs);
  std::optional<StepInFlight> launch_step(SchedulerOutput out, const DeviceTokenFeed* feed, Outputs& outs);
  void finish_step(StepInFlight& f, Outputs& outs);
  bool can_schedule_ahead(const StepInFlight& f) const;
  std::optional<StepInFlight> schedule_ahead(const StepInFlight& f, Outputs& outs);
  void fail_step(const SchedulerOutput& out, const std::string& what, Outputs& outs);
  void on_token(SeqState& s, const SampleResult& res, std::optional<RequestStatus> sched_finish,
                Outputs& outs);
  void finish_seq(SeqState& s, FinishReason reason, RequestOutput& o, Outputs& outs);
  void start_children(EngineRequest& r, Outputs& outs);
  void deliver(Outputs& outs);
  void abort_everything(Outputs& outs);
  void publish_stats();
  RequestOutput blank_output(const SeqState& s) const;

  EngineConfig cfg_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<OpContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::vector<int32_t> eos_ids_;
  int64_t max_model_len_ = 0;
  SchedulerConfig sched_cfg_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<BatchSampler> sampler_;

  // Shared with callers.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<EngineRequest>> inbox_;
  std::vector<uint64_t> abort_inbox_;
  bool stopping_ = false;
  bool intake_held_ = false;  // hold_intake: inbox_ is not taken while set
  std::atomic<uint64_t> next_id_{1};
  std::mt19937_64 seed_rng_;  // seeds for requests without one (guarded by mu_)
  mutable std::mutex stats_mu_;
  EngineStats stats_;

  // Loop thread only.
  std::unordered_map<uint64_t, std::unique_ptr<EngineRequest>> requests_;
  std::unordered_map<RequestId, SeqState*> seqs_;
  RequestId next_seq_id_ = 1;
  EngineStats loop_stats_;
  bool async_scheduling_ = false;         // EngineConfig::async_scheduling, resolved for the device
  std::optional<StepInFlight> inflight_;  // async scheduling: a step launched, not yet read back
  std::thread thread_;
};

}  // namespace portllm
