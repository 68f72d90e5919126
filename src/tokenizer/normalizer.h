// tokenizer.json "normalizer": rewrites each piece of input text (between added tokens) before
// pre-tokenization. Offsets are not tracked: the engine needs ids, not alignments.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace portllm::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// Builds the normalizer described by `j` (null -> nullptr). `where` names file and field for
// errors, e.g. "tokenizer.json: normalizer".
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where);

}  // namespace portllm::tok
