// ModelConfig: the fields of a Hugging Face config.json that the engine uses, plus the raw JSON
// for architecture-specific keys. Reads both rope dialects (rope_theta + rope_scaling, and
// rope_parameters) and multimodal wrappers that nest the language model under text_config.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace portllm {

struct RopeConfig {
  std::string type = "default";  // default | linear | llama3 | yarn | dynamic
  double theta = 10000.0;
  double factor = 1.0;
  double partial_rotary_factor = 1.0;
  // llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;
  // yarn
  double beta_fast = 32.0, beta_slow = 1.0;
  std::optional<double> mscale, mscale_all_dim, attention_factor;
  bool truncate = true;
};

struct QuantConfig {
  std::string method;               // "" (none) or "fp8"
  int block_n = 0, block_k = 0;     // weight_block_size; 0 = per-tensor scales
  std::vector<std::string> modules_to_not_convert;
};

struct ModelConfig {
  std::string source;        // path of config.json, for error messages
  nlohmann::json raw;        // the (text) config object
  std::string architecture;  // architectures[0]
  std::string model_type;
  int64_t hidden_size = 0, intermediate_size = 0, num_layers = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, vocab_size = 0;
  int64_t max_position_embeddings = 0;
  // Positions the engine serves: the RoPE table has this many rows and --max-model-len may not
  // exceed it. 2^18 covers the native context of every supported family (Qwen3.5's 262144).
  static constexpr int64_t kMaxServedPositions = int64_t(1) << 18;
  int64_t max_served_positions() const { return std::min(max_position_embeddings, kMaxServedPositions); }
  // head_dim x partial_rotary_factor: the rotated leading dims of each q/k head. Throws, naming
  // the fields, unless it is even and in [2, head_dim] (the RoPE kernels rotate pairs inside
  // the head).
  int rotary_dim() const;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  DType dtype = DType::BF16;  // torch_dtype / dtype
  RopeConfig rope;
  QuantConfig quant;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id;

  static ModelConfig from_file(const std::string& path);
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source);

  // Typed accessors for architecture-specific keys; errors name the file and field.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // A list field, empty when absent or null; a non-list or an element of the wrong kind is an
  // error naming the field and index.
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;
  bool has(const std::string& key) const;
};

}  // namespace portllm
