// Shared by the model tests: the CPU device, fixture paths, and a fixture's reference.safetensors
// (tokens and transformers' teacher-forced logits).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "model/safetensors.h"

namespace portllm::testing {

inline Device& cpu() {
  register_builtin_backends();
  return *BackendRegistry::instance().device("cpu");
}

inline std::string fixture(const std::string& name) { return std::string(PORTLLM_TEST_DATA) + "/models/" + name; }

struct Reference {
  std::vector<int32_t> tokens;
  Tensor logits;  // [T, V] f32
  std::shared_ptr<SafetensorsFile> file;
};

inline Reference read_reference(const std::string& dir) {
  Reference r;
  r.file = SafetensorsFile::open(dir + "/reference.safetensors");
  Tensor t = r.file->tensor("tokens");
  for (int64_t i = 0; i < t.size(0); ++i) r.tokens.push_back(int32_t(t.ptr<int64_t>()[i]));
  r.logits = r.file->tensor("logits");
  return r;
}

}  // namespace portllm::testing
