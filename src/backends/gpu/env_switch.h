// PORTLLM_* environment knobs of the GPU kernels: a switch that takes one of a few words
// (PORTLLM_W8A8, PORTLLM_GEMM_TUNE), and an integer (PORTLLM_ATTN_SPLIT_KEYS).
#pragma once
#include <initializer_list>

namespace portllm::gpu {

// The index in `words` of the variable's value; `unset` when the variable is unset or empty.
// Any other value throws, naming the variable and the words it takes.
int env_switch(const char* var, std::initializer_list<const char*> words, int unset);

// A PORTLLM_* integer knob (atoi of its value); `unset` when the variable is unset or empty.
int env_int(const char* var, int unset);

// Whether the weight-streaming kernels load weights with an evict-first L2 policy
// (load_weight16 in kernel_common.cuh); PORTLLM_L2_EVICT_FIRST=0 takes the plain load, for
// measuring. Read once.
bool l2_evict_first();

}  // namespace portllm::gpu
