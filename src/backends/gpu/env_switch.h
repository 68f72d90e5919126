// A PORTLLM_* environment switch that takes one of a few words (PORTLLM_W8A8, PORTLLM_GEMM_TUNE).
#pragma once
#include <initializer_list>

namespace portllm::gpu {

// The index in `words` of the variable's value; `unset` when the variable is unset or empty.
// Any other value throws, naming the variable and the words it takes.
int env_switch(const char* var, std::initializer_list<const char*> words, int unset);

}  // namespace portllm::gpu
