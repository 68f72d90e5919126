// One registration function per cases_*.cpp file (called by register_builtin_case_generators).
#pragma once
#include <fmt/format.h>

#include "ops/conformance/op_case.h"

namespace portllm::conformance {

void register_basic_cases();
void register_matmul_cases();
void register_attention_cases();
void register_hybrid_cases();  // cases_hybrid.cpp
void register_moe_cases();     // cases_moe.cpp
void register_mla_cases();     // cases_mla.cpp
void register_sample_cases();  // cases_sample.cpp

}  // namespace portllm::conformance
