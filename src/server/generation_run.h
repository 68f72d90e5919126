// The bridge between engine callbacks (engine thread) and one HTTP handler (a server thread):
// the engine requests of one API call (several prompts, each with n samples) push their outputs
// into a shared queue that the handler drains. Destroying or aborting the run aborts every
// engine request that has not finished, so a client that goes away frees its KV blocks.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine.h"
#include "server/metrics.h"

namespace portllm::server {

struct ChoiceOutput {
  int choice = 0;        // index of the API choice: prompt_index * n + sample index
  RequestOutput out;
};

class GenerationRun {
 public:
  GenerationRun(std::shared_ptr<Engine> engine, ServerMetrics& metrics);
  ~GenerationRun();
  GenerationRun(const GenerationRun&) = delete;
  GenerationRun& operator=(const GenerationRun&) = delete;

  // Enqueues one engine request whose samples become choices [choice_base, choice_base + n).
  // Throws portllm::Error (from Engine::add_request) when the engine rejects it.
  void add(RequestInput input, int choice_base);
  // Waits up to `timeout` for outputs and returns those that arrived (possibly none).
  std::vector<ChoiceOutput> wait(std::chrono::milliseconds timeout);
  // All samples finished and every output was handed out by wait().
  bool done();
  void abort();

  // Runs not yet destroyed (their HTTP responses are still being written): shutdown waits for
  // them so that aborted streams still end with data: [DONE].
  static int live();

 private:
  struct Shared;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<Shared> sh_;  // also held by the engine callbacks: a late callback is harmless
  std::vector<uint64_t> ids_;
  int total_samples_ = 0;
};

}  // namespace portllm::server
