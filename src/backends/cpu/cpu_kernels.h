// Optimized CPU kernels (f32 activations; f32/f16/bf16 weights and caches). They register
// above the reference kernels and fall back to them (via supports) for anything else.
#pragma once

namespace portllm::cpu {

void register_cpu_kernels();
void register_matmul_kernels();
void register_attention_kernels();
void register_pointwise_kernels();
void register_moe_kernels();         // moe_cpu.cpp
void register_mla_kernels();         // mla_cpu.cpp
void register_matmul_fp8_kernels();  // matmul_fp8_cpu.cpp
void register_hybrid_kernels();  // hybrid_cpu.cpp
void register_sample_kernels();  // sample_cpu.cpp: SAMPLE

}  // namespace portllm::cpu
