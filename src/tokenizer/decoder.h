// tokenizer.json "decoder": turns the token strings of a decode() call back into text. Like HF,
// each decoder maps a list of strings to a list of strings and the results are concatenated.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where);

}  // namespace portllm::tok
