// The few generation_config.json fields the engine uses: extra end-of-sequence ids (instruct
// models list their turn-end tokens there, beside config.json's eos_token_id).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace portllm {

// eos_token_id (an integer or a list) of DIR/generation_config.json; empty when the file or the
// field is absent. Throws portllm::Error naming the file when it is not valid JSON.
std::vector<int32_t> read_generation_eos_ids(const std::string& model_dir);

}  // namespace portllm
