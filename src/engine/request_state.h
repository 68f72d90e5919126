// Engine-side state of a request: one EngineRequest per add_request call, one SeqState per
// sample (n > 1 gives n sequences, each its own scheduler Request). The scheduler sees only token
// ids; text (incremental detokenization and stop strings), the sampler's RNG and penalty state,
// and the client's callback live here. Owned by the engine loop thread.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/sampler.h"
#include "engine/stop_checker.h"
#include "sched/request.h"
#include "tokenizer/tokenizer.h"

namespace portllm {

struct EngineRequest;

struct SeqState {
  EngineRequest* owner = nullptr;
  int index = 0;                       // sample index < n
  std::shared_ptr<Request> req;        // the scheduler's view (token ids, counters)
  SamplerState sampler;
  std::unique_ptr<tok::StreamDecoder> detok;  // null without a tokenizer
  StopChecker stop;
  bool in_scheduler = false;           // added (or forked) into the scheduler
  bool finished = false;
  int completion_tokens = 0;
};

struct EngineRequest {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  SamplingParams params;
  OutputCallback callback;
  std::vector<int32_t> stop_ids;       // finish the sequence when sampled (EOS unless ignore_eos)
  std::vector<std::unique_ptr<SeqState>> seqs;
  int num_unfinished = 0;
  bool children_started = false;       // n > 1: samples 1.. were forked / queued
};

}  // namespace portllm
