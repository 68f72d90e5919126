#include "engine/generation_config.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace portllm {

std::vector<int32_t> read_generation_eos_ids(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "generation_config.json").string();
  std::vector<int32_t> ids;
  if (!std::filesystem::exists(path)) return ids;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    PL_THROW("{}: invalid JSON: {}", path, e.what());
  }
  if (!j.is_object() || !j.contains("eos_token_id")) return ids;
  const auto& e = j["eos_token_id"];
  auto add = [&](const nlohmann::json& v) {
    if (!v.is_number_integer()) PL_THROW("{}: field 'eos_token_id' must be an integer or a list of integers", path);
    ids.push_back(v.get<int32_t>());
  };
  if (e.is_array())
    for (const auto& v : e) add(v);
  else if (!e.is_null())
    add(e);
  return ids;
}

}  // namespace portllm
