#include "model/config.h"

#include "core/error.h"
#include "core/mapped_file.h"

namespace portllm {

namespace {

const nlohmann::json* find(const nlohmann::json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const nlohmann::json& v, const std::string& src, const std::string& key) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>()))) return int64_t(v.get<double>());
  PL_THROW("{}: field '{}' must be an integer, got {}", src, key, v.dump());
}

std::string as_string(const nlohmann::json& v, const std::string& src, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  PL_THROW("{}: field '{}' must be a string, got {}", src, key, v.dump());
}

bool as_bool(const nlohmann::json& v, const std::string& src, const std::string& key) {
  if (v.is_boolean()) return v.get<bool>();
  PL_THROW("{}: field '{}' must be true or false, got {}", src, key, v.dump());
}

// The elements of a list field, each converted by `as` with the field named KEY[i].
template <class T, class As>
std::vector<T> as_list(const nlohmann::json* v, const std::string& src, const std::string& key, As as) {
  std::vector<T> out;
  if (!v) return out;
  if (!v->is_array()) PL_THROW("{}: field '{}' must be a list, got {}", src, key, v->dump());
  for (size_t i = 0; i < v->size(); ++i) out.push_back(as((*v)[i], src, fmt::format("{}[{}]", key, i)));
  return out;
}

double as_double(const nlohmann::json& v, const std::string& src, const std::string& key) {
  if (v.is_number()) return v.get<double>();
  PL_THROW("{}: field '{}' must be a number, got {}", src, key, v.dump());
}

RopeConfig parse_rope(const nlohmann::json& j, const std::string& src) {
  RopeConfig r;
  // Dialect 1: rope_theta + rope_scaling. Dialect 2: rope_parameters (theta inside).
  const nlohmann::json* params = find(j, "rope_parameters");
  const nlohmann::json* scaling = find(j, "rope_scaling");
  const std::string where = params ? "rope_parameters" : "rope_scaling";
  const nlohmann::json* p = params ? params : scaling;
  if (auto* t = find(j, "rope_theta")) r.theta = as_double(*t, src, "rope_theta");
  if (auto* prf = find(j, "partial_rotary_factor")) r.partial_rotary_factor = as_double(*prf, src, "partial_rotary_factor");
  if (!p) return r;
  if (!p->is_object()) PL_THROW("{}: field '{}' must be an object", src, where);
  auto num = [&](const char* key, double& out) {
    if (auto* v = find(*p, key)) out = as_double(*v, src, where + "." + key);
  };
  auto opt = [&](const char* key, std::optional<double>& out) {
    if (auto* v = find(*p, key)) out = as_double(*v, src, where + "." + key);
  };
  if (auto* t = find(*p, "rope_type")) r.type = as_string(*t, src, where + ".rope_type");
  else if (auto* t2 = find(*p, "type")) r.type = as_string(*t2, src, where + ".type");
  num("rope_theta", r.theta);
  num("factor", r.factor);
  num("partial_rotary_factor", r.partial_rotary_factor);
  num("low_freq_factor", r.low_freq_factor);
  num("high_freq_factor", r.high_freq_factor);
  num("beta_fast", r.beta_fast);
  num("beta_slow", r.beta_slow);
  opt("mscale", r.mscale);
  opt("mscale_all_dim", r.mscale_all_dim);
  opt("attention_factor", r.attention_factor);
  if (auto* v = find(*p, "original_max_position_embeddings")) r.original_max_position_embeddings = as_int(*v, src, where + ".original_max_position_embeddings");
  if (auto* v = find(*p, "truncate")) r.truncate = as_bool(*v, src, where + ".truncate");
  if (r.type == "deepseek_yarn") r.type = "yarn";
  static const char* known[] = {"default", "linear", "llama3", "yarn", "dynamic", "mrope"};
  bool ok = false;
  for (auto* k : known) ok |= r.type == k;
  if (!ok) PL_THROW("{}: {}.rope_type '{}' is not supported (supported: default, linear, llama3, yarn)", src, where, r.type);
  return r;
}

QuantConfig parse_quant(const nlohmann::json& j, const std::string& src) {
  QuantConfig q;
  const nlohmann::json* qc = find(j, "quantization_config");
  if (!qc) return q;
  if (!qc->is_object()) PL_THROW("{}: field 'quantization_config' must be an object", src);
  if (auto* m = find(*qc, "quant_method")) q.method = as_string(*m, src, "quantization_config.quant_method");
  if (q.method != "fp8") PL_THROW("{}: quantization_config.quant_method '{}' is not supported (supported: fp8)", src, q.method);
  if (auto* bs = find(*qc, "weight_block_size")) {
    if (!bs->is_array() || bs->size() != 2) PL_THROW("{}: quantization_config.weight_block_size must be [n, k]", src);
    q.block_n = int(as_int((*bs)[0], src, "weight_block_size[0]"));
    q.block_k = int(as_int((*bs)[1], src, "weight_block_size[1]"));
  }
  for (const char* key : {"modules_to_not_convert", "ignored_layers"})
    for (auto& s : as_list<std::string>(find(*qc, key), src, std::string("quantization_config.") + key, as_string))
      q.modules_to_not_convert.push_back(s);
  return q;
}

}  // namespace

ModelConfig ModelConfig::from_file(const std::string& path) {
  std::string text = read_text_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    PL_THROW("{}: invalid JSON: {}", path, e.what());
  }
  return from_json(j, path);
}

ModelConfig ModelConfig::from_json(const nlohmann::json& top, const std::string& src) {
  if (!top.is_object()) PL_THROW("{}: expected a JSON object", src);
  ModelConfig c;
  c.source = src;
  // Multimodal wrappers keep the language model under text_config.
  const nlohmann::json* text = find(top, "text_config");
  if (text && !text->is_object()) PL_THROW("{}: field 'text_config' must be an object, got {}", src, text->dump());
  c.raw = text ? *text : top;
  if (text) {
    for (auto& [k, v] : top.items())
      if (!c.raw.contains(k) && k != "text_config" && k != "vision_config") c.raw[k] = v;
  }
  const auto& j = c.raw;
  if (auto* a = find(top, "architectures"); a && a->is_array() && !a->empty()) c.architecture = as_string((*a)[0], src, "architectures[0]");
  else PL_THROW("{}: missing field 'architectures'", src);
  c.model_type = c.get_string("model_type", "");
  c.hidden_size = c.get_int("hidden_size");
  c.num_layers = c.get_int("num_hidden_layers");
  c.num_heads = c.get_int("num_attention_heads");
  c.vocab_size = c.get_int("vocab_size");
  c.intermediate_size = c.get_int("intermediate_size", 0);
  c.num_kv_heads = c.get_int("num_key_value_heads", c.num_heads);
  c.head_dim = c.get_int("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.max_position_embeddings = c.get_int("max_position_embeddings", 4096);
  c.rms_norm_eps = c.get_double("rms_norm_eps", 1e-6);
  c.tie_word_embeddings = c.get_bool("tie_word_embeddings", false);
  c.attention_bias = c.get_bool("attention_bias", false);
  std::string dt = c.get_string("torch_dtype", c.get_string("dtype", "bfloat16"));
  if (auto d = dtype_from_name(dt)) c.dtype = *d;
  else PL_THROW("{}: field 'torch_dtype' has unsupported value '{}'", src, dt);
  if (c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.vocab_size <= 0 || c.head_dim <= 0)
    PL_THROW("{}: hidden_size, num_hidden_layers, num_attention_heads, vocab_size and head_dim must be positive", src);
  // The RoPE table holds max_position_embeddings rows; 2^24 is 16x the longest context of the
  // supported families, and keeps a mistyped value from becoming a multi-terabyte allocation.
  if (c.max_position_embeddings <= 0 || c.max_position_embeddings > (int64_t(1) << 24))
    PL_THROW("{}: max_position_embeddings ({}) must be in [1, 16777216]", src, c.max_position_embeddings);
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    PL_THROW("{}: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})", src, c.num_heads, c.num_kv_heads);
  c.rope = parse_rope(j, src);
  if (c.rope.original_max_position_embeddings == 0) c.rope.original_max_position_embeddings = c.max_position_embeddings;
  c.quant = parse_quant(j, src);
  if (auto* e = find(j, "eos_token_id")) {
    if (e->is_array()) for (auto& x : *e) c.eos_token_ids.push_back(as_int(x, src, "eos_token_id"));
    else c.eos_token_ids.push_back(as_int(*e, src, "eos_token_id"));
  }
  if (auto* b = find(j, "bos_token_id")) c.bos_token_id = as_int(*b, src, "bos_token_id");
  return c;
}

bool ModelConfig::has(const std::string& key) const { return find(raw, key) != nullptr; }

int64_t ModelConfig::get_int(const std::string& key) const {
  auto* v = find(raw, key);
  if (!v) PL_THROW("{}: missing field '{}'", source, key);
  return as_int(*v, source, key);
}

int64_t ModelConfig::get_int(const std::string& key, int64_t fallback) const {
  auto* v = find(raw, key);
  return v ? as_int(*v, source, key) : fallback;
}

double ModelConfig::get_double(const std::string& key, double fallback) const {
  auto* v = find(raw, key);
  return v ? as_double(*v, source, key) : fallback;
}

bool ModelConfig::get_bool(const std::string& key, bool fallback) const {
  auto* v = find(raw, key);
  return v ? as_bool(*v, source, key) : fallback;
}

std::string ModelConfig::get_string(const std::string& key, const std::string& fallback) const {
  auto* v = find(raw, key);
  return v ? as_string(*v, source, key) : fallback;
}

int ModelConfig::rotary_dim() const {
  // 65536 keeps the product an int (real rotary dims are 32 to 192).
  const double r = double(head_dim) * rope.partial_rotary_factor;
  if (!(r >= 2 && r <= double(head_dim) && r <= 65536) || int64_t(r) % 2 != 0)
    PL_THROW("{}: partial_rotary_factor {} gives rotary dim {} for head_dim {} (needs an even dim in [2, head_dim])",
             source, rope.partial_rotary_factor, r, head_dim);
  return int(r);
}

std::vector<int64_t> ModelConfig::get_int_list(const std::string& key) const {
  return as_list<int64_t>(find(raw, key), source, key, as_int);
}

std::vector<std::string> ModelConfig::get_string_list(const std::string& key) const {
  return as_list<std::string>(find(raw, key), source, key, as_string);
}

}  // namespace portllm
