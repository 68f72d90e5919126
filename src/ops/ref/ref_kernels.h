// Reference kernels: the oracle of the conformance suite and the lowest-priority CPU kernels.
#pragma once

namespace portllm::ref {

// Registers every reference kernel (called by the CPU backend's registration).
void register_reference_kernels();

// One registration function per file in ops/ref/.
void register_elementwise_ref();
void register_norm_ref();
void register_matmul_ref();
void register_attention_ref();
void register_moe_ref();  // moe_ref.cpp: MoE routing, permute, grouped GEMM, combine
void register_mla_ref();  // mla_ref.cpp: absorbed MLA attention
void register_hybrid_ref();  // hybrid_ref.cpp: conv1d, gated delta rule, gated norm, sigmoid gate
void register_sample_ref();  // sample_ref.cpp: SAMPLE
void register_fused_ref();   // fused_ref.cpp: fused ops as the composition of their parts

}  // namespace portllm::ref
