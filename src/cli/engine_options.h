// Engine flags shared by every command that runs the engine (generate, bench, serve), named as
// in vLLM / SGLang: --max-num-seqs, --max-num-batched-tokens, --chunked-prefill-size,
// --num-kv-blocks, --mem-fraction-static, --max-model-len, --kv-dtype, --page-size,
// --enable-prefix-caching / --disable-prefix-caching, --async-scheduling / --no-async-scheduling, plus the model flags (--model, --device,
// --load-format, --threads, --num-layers). --seed is left to the command (sampling seed for
// generate, workload seed for bench); pass it into EngineConfig::seed yourself if wanted.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "engine/engine.h"

namespace portllm::cli {

struct EngineOptions {
  EngineConfig cfg;
  bool enable_prefix_caching = false;
  bool disable_prefix_caching = false;
  bool async_scheduling = false, no_async_scheduling = false;  // neither: the engine's default
};

void add_engine_options(CLI::App* cmd, EngineOptions& o);
// The EngineConfig the flags describe (default model directory resolved, prefix-caching flags
// applied). Throws portllm::Error on contradictory flags.
EngineConfig engine_config(const EngineOptions& o);

}  // namespace portllm::cli
