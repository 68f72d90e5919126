// The public engine API: requests in (text or token ids + sampling parameters), a stream of
// outputs per request out. Thread-safe; one engine loop thread owns the model and runs the
// scheduler -> model runner -> sampler -> detokenizer cycle (continuous batching). The server,
// the CLI (generate, bench, eval) and the tests use only this header.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"

namespace portllm {

namespace tok {
class Tokenizer;
}

struct SamplingParams {
  int n = 1;                          // parallel samples of one prompt (share its KV blocks)
  float temperature = 1.0f;           // 0 = greedy
  int top_k = 0;                      // 0 or -1 = off
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;    // HF/vLLM semantics (divide positive logits, multiply negative)
  float presence_penalty = 0.0f;      // OpenAI semantics, over generated tokens
  float frequency_penalty = 0.0f;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;       // same seed -> same output, whatever else is batched
  int max_tokens = 16;
  int min_tokens = 0;                 // EOS/stop ids are masked until this many tokens
  std::vector<std::string> stop;      // stop strings: matched across tokens, never emitted
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int logprobs = -1;                  // -1: none; k >= 0: sampled token logprob + top k
  bool skip_special_tokens = true;
};

enum class FinishReason { Stop, Length, Abort, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error"

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.f;
  std::vector<std::pair<int32_t, float>> top;  // top-k (id, logprob), best first
};

// One update for one sample (index < n) of a request. Updates of a request arrive in order on
// the engine thread; the last one has finished = true.
struct RequestOutput {
  uint64_t request_id = 0;
  int index = 0;
  std::vector<int32_t> token_ids;      // new tokens since the previous update
  std::string text;                    // new text since the previous update (whole UTF-8 chars)
  std::vector<TokenLogprob> logprobs;  // one per new token when requested
  bool finished = false;
  std::optional<FinishReason> finish_reason;
  std::string stop_reason;             // the matched stop string, if any
  std::string error;                   // set with FinishReason::Error
  int prompt_tokens = 0;
  int completion_tokens = 0;           // total so far for this sample
  int cached_tokens = 0;               // prompt tokens served from the prefix cache
};

using OutputCallback = std::function<void(const RequestOutput&)>;

struct RequestInput {
  std::string prompt;                  // used when prompt_ids is empty
  std::vector<int32_t> prompt_ids;
  bool add_special_tokens = true;      // for text prompts: apply the tokenizer's post-processor
  SamplingParams params;
};

struct EngineConfig {
  std::string model_path;
  std::string device = "cpu";
  std::string load_format = "auto";
  std::string dtype = "auto";  // activation dtype on GPUs (auto = the checkpoint's)
  int num_layers_override = 0;
  int threads = 0;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 0;      // 0: default_token_budget() (engine/token_budget.h)
  int chunked_prefill_size = 0;        // 0: chunk at max_num_batched_tokens; -1: no chunking
  bool enable_prefix_caching = true;
  int64_t num_kv_blocks = 0;           // 0: from mem_fraction_static
  double mem_fraction_static = 0.9;    // fraction of free device memory after weights (CPU: capped)
  int64_t max_model_len = 0;           // 0: the model's max_position_embeddings
  std::string kv_dtype = "auto";       // auto (= activation dtype) | f32 | f16 | bf16 | fp8
  int page_size = 0;                   // 0: the backend's preference
  std::vector<int> cuda_graph_batch_sizes;
  bool disable_cuda_graph = false;
  // Schedule and launch decode step n + 1 before step n's tokens are read back, so the host's
  // work between steps overlaps the device's (engine_loop.cpp says when a step qualifies). Unset:
  // on where the device runs work asynchronously (GPUs); the CPU runs each op at its launch, so
  // nothing would overlap there.
  std::optional<bool> async_scheduling;
  uint64_t seed = 0;
  bool serving = false;  // behind the OpenAI server (portllm serve): the smaller default token budget
};

struct EngineStats {
  int num_running = 0, num_waiting = 0;
  double kv_usage = 0;                 // fraction of KV blocks in use
  int64_t num_kv_blocks = 0, num_free_kv_blocks = 0;
  int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;  // in tokens
  int64_t num_preemptions = 0;
  int64_t requests_finished = 0;
  // Where the engine loop's wall time goes, summed over its steps (seconds). On a GPU the forward
  // is launched asynchronously and `sample` waits for it, so schedule + outputs is host time the
  // device spends idle between steps.
  int64_t steps = 0;
  int64_t steps_ahead = 0;  // of those, launched before the previous step was read back (async scheduling)
  double schedule_s = 0, forward_s = 0, sample_s = 0, outputs_s = 0;
  // The device allocator's driver allocations so far (MemoryStats::driver_allocations; -1: not
  // counted): in a timed run, each is a possible stall of the step that made it.
  int64_t device_allocations = -1;
};

class Engine {
 public:
  static std::unique_ptr<Engine> create(const EngineConfig& cfg);
  virtual ~Engine() = default;

  // Validates and enqueues; returns the request id. Throws portllm::Error (nothing enqueued)
  // for invalid input: empty prompt, ids outside the vocabulary, prompt + max_tokens over the
  // context, a request that can never fit in the KV pool. `cb` runs on the engine thread.
  virtual uint64_t add_request(RequestInput input, OutputCallback cb) = 0;
  // While the intake is held, added requests (and aborts) wait in the inbox and no step schedules
  // them; requests already running go on; releasing it lets them all in at once. A caller that
  // adds a batch (offline generate, bench) holds it around the adds (IntakeHold), so the first
  // steps see the whole batch however fast it was added: otherwise the engine thread starts on
  // the first few requests, and the batches, hence the bf16 rounding of every step and near-tied
  // greedy tokens, vary from run to run.
  virtual void hold_intake(bool held) = 0;
  // Stops a request (all its samples); a final output with FinishReason::Abort follows unless it
  // already finished. Its KV blocks are freed. Unknown ids are ignored.
  virtual void abort(uint64_t request_id) = 0;
  virtual EngineStats stats() const = 0;
  virtual const tok::Tokenizer& tokenizer() const = 0;  // throws Error when has_tokenizer() is false
  // False for a model directory without tokenizer.json (test fixtures): token-id prompts only,
  // outputs carry no text.
  virtual bool has_tokenizer() const { return true; }
  virtual const ModelConfig& model_config() const = 0;
  virtual int64_t max_model_len() const = 0;
  // Finishes nothing new, aborts what is in flight, joins the engine thread.
  virtual void shutdown() = 0;
};

// Holds an engine's intake for a scope (Engine::hold_intake).
class IntakeHold {
 public:
  explicit IntakeHold(Engine& e) : e_(e) { e_.hold_intake(true); }
  ~IntakeHold() { e_.hold_intake(false); }
  IntakeHold(const IntakeHold&) = delete;
  IntakeHold& operator=(const IntakeHold&) = delete;

 private:
  Engine& e_;
};

}  // namespace portllm
