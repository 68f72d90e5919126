// Sampling fields of a JSON object (one line of `generate --input`) on top of defaults, with the
// OpenAI / vLLM names: n, temperature, top_k, top_p, min_p, repetition_penalty,
// presence_penalty, frequency_penalty, logit_bias, seed, max_tokens, min_tokens, stop,
// stop_token_ids, ignore_eos, logprobs, skip_special_tokens.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace portllm::cli {

// Throws portllm::Error naming `where` and the field for a field of the wrong type.
SamplingParams sampling_from_json(const nlohmann::json& j, SamplingParams defaults, const std::string& where);

}  // namespace portllm::cli
