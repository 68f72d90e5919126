#include "cli/sampling_json.h"

#include "core/error.h"

namespace portllm::cli {

namespace {
template <class T>
void get(const nlohmann::json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    PL_THROW("{}: field '{}' has the wrong type ({})", where, key, it->type_name());
  }
}
}  // namespace

SamplingParams sampling_from_json(const nlohmann::json& j, SamplingParams p, const std::string& where) {
  get(j, "n", p.n, where);
  get(j, "temperature", p.temperature, where);
  get(j, "top_k", p.top_k, where);
  get(j, "top_p", p.top_p, where);
  get(j, "min_p", p.min_p, where);
  get(j, "repetition_penalty", p.repetition_penalty, where);
  get(j, "presence_penalty", p.presence_penalty, where);
  get(j, "frequency_penalty", p.frequency_penalty, where);
  get(j, "max_tokens", p.max_tokens, where);
  get(j, "min_tokens", p.min_tokens, where);
  get(j, "stop_token_ids", p.stop_token_ids, where);
  get(j, "ignore_eos", p.ignore_eos, where);
  get(j, "logprobs", p.logprobs, where);
  get(j, "skip_special_tokens", p.skip_special_tokens, where);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t s = 0;
    get(j, "seed", s, where);
    p.seed = s;
  }
  if (j.contains("stop") && !j["stop"].is_null()) {
    if (j["stop"].is_string()) p.stop = {j["stop"].get<std::string>()};
    else get(j, "stop", p.stop, where);
  }
  if (j.contains("logit_bias") && j["logit_bias"].is_object()) {
    p.logit_bias.clear();
    for (auto& [k, v] : j["logit_bias"].items()) {
      try {
        p.logit_bias[std::stoi(k)] = v.get<float>();
      } catch (...) {
        PL_THROW("{}: field 'logit_bias' needs token-id keys and number values ('{}')", where, k);
      }
    }
  }
  return p;
}

}  // namespace portllm::cli
