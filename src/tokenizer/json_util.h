// Small helpers for reading tokenizer.json fields with errors that name the file and field.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace portllm::tok {

// j[key] as T; missing or wrongly typed -> "WHERE: field 'KEY' ..." error.
template <class T>
T json_get(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) PL_THROW("{}: missing field '{}'", where, key);
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    PL_THROW("{}: field '{}' has the wrong type ({})", where, key, j.at(key).type_name());
  }
}

// j[key] as T, or `def` when the key is absent or null.
template <class T>
T json_get_or(const nlohmann::json& j, const char* key, T def, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return def;
  return json_get<T>(j, key, where);
}

// The component's "type" string.
inline std::string json_type(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) PL_THROW("{}: expected an object, got {}", where, j.type_name());
  return json_get<std::string>(j, "type", where);
}

// A {"String": s} or {"Regex": r} pattern as a PCRE2 pattern (strings are quoted).
std::string json_pattern(const nlohmann::json& j, const std::string& where);

}  // namespace portllm::tok
