#include "cli/sampling_json.h"

#include <limits>
#include <type_traits>

#include "core/error.h"

namespace portllm::cli {

namespace {

// A number that fits T, else an error naming the field: nlohmann's get<int>() would turn 1e30
// into whatever the cast gives and 3.7 into 3.
template <class T>
T number(const nlohmann::json& v, const char* key, const std::string& where) {
  if constexpr (std::is_integral_v<T>) {
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                      : v.is_number_integer()
                          ? v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                (v.get<int64_t>() < 0 || uint64_t(v.get<int64_t>()) <= uint64_t(std::numeric_limits<T>::max()))
                          : false;
    if (!fits) PL_THROW("{}: field '{}' must be an integer in [{}, {}], got {}", where, key, std::numeric_limits<T>::min(),
                        std::numeric_limits<T>::max(), v.dump());
    return v.is_number_unsigned() ? T(v.get<uint64_t>()) : T(v.get<int64_t>());
  } else {
    if (!v.is_number()) PL_THROW("{}: field '{}' must be a number, got {}", where, key, v.dump());
    return T(v.get<double>());
  }
}

template <class T>
void get(const nlohmann::json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) PL_THROW("{}: field '{}' must be true or false, got {}", where, key, it->dump());
    out = it->get<bool>();
  } else if constexpr (std::is_arithmetic_v<T>) {
    out = number<T>(*it, key, where);
  } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    if (!it->is_array()) PL_THROW("{}: field '{}' must be a list of integers, got {}", where, key, it->type_name());
    out.clear();
    for (const auto& v : *it) out.push_back(number<int32_t>(v, key, where));
  } else {
    try {
      out = it->get<T>();
    } catch (const nlohmann::json::exception&) {
      PL_THROW("{}: field '{}' has the wrong type ({})", where, key, it->type_name());
    }
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
  if (j.contains("logit_bias") && !j["logit_bias"].is_null()) {
    if (!j["logit_bias"].is_object()) PL_THROW("{}: field 'logit_bias' must be an object of token id -> bias", where);
    p.logit_bias.clear();
    for (auto& [k, v] : j["logit_bias"].items()) {
      size_t used = 0;
      int id = -1;
      try {
        id = std::stoi(k, &used);
      } catch (const std::exception&) {
      }
      if (used != k.size() || !v.is_number())
        PL_THROW("{}: field 'logit_bias' needs token-id keys and number values ('{}')", where, k);
      p.logit_bias[id] = v.get<float>();
    }
  }
  return p;
}

}  // namespace portllm::cli
