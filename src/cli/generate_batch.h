// `portllm generate --input prompts.jsonl --output out.jsonl`: every input line is
// {"prompt": "..."} or {"prompt_ids": [...]} with optional sampling fields (cli/sampling_json.h);
// all lines go to the engine at once (continuous batching) and each output line, in input order,
// holds the prompt, the generated text and token ids, and the finish reason (one line per
// sample when n > 1, with "sample": i).
#pragma once
#include <string>

#include "engine/engine.h"

namespace portllm::cli {

void run_generate_batch(Engine& engine, const std::string& input_path, const std::string& output_path,
                        const SamplingParams& defaults);

}  // namespace portllm::cli
