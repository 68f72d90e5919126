// tokenizer.json "post_processor": adds special tokens (BOS, CLS/SEP...) around an encoded
// sequence when encode() is asked to add special tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids) const = 0;
};


std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j,
                                                   const std::string& where);

}  // namespace portllm::tok
