// One registration function per cases_*.cpp file (called by register_builtin_case_generators).
#pragma once
#include <fmt/format.h>

#include "ops/conformance/op_case.h"

namespace portllm::conformance {

// Case builders shared by the conformance generators and the perf cases (perf_cases.cpp).
struct AttnShape {
  std::vector<int> q_lens, ctx_lens;
  int Hq, Hkv, D, page;
  int max_seq_len = 0;  // the max_seq_len the op is told, when above the longest context (a graph
                        // captured for max_model_len passes that bound); 0 = the longest context
  bool head_major = false;  // pages stored [head, token, dim] (PORTLLM_KV_LAYOUT=hnd), seen through
                            // the [block, token, head, dim] view with permuted strides
  bool longest_first = false;  // passes a work order, longest context first (AttentionArgs::work_order)
};
OpCase attention_case(DType act, DType cache_dt, const AttnShape& s, bool decode);
// The name attention_case gives its case (shapes, cache dtype, layout), without seeding anything.
std::string attention_case_name(DType cache_dt, const AttnShape& s);
// A contiguous [NB, H, page, D] cache seen as [NB, page, H, D] (head-major pages).
Tensor head_major_view(Tensor t);

// MLA_ATTENTION over a paged latent cache [NB, page, 1, Dc + Dr] (cases_mla.cpp).
struct MlaShape {
  std::vector<int> q_lens, ctx_lens;
  int H, Dc, Dr, page;
  int max_seq_len = 0;  // as AttnShape
};
OpCase mla_case(DType act, DType cache_dt, const MlaShape& s);

// f32_out: f32 output under 16-bit activations (the logits); otherwise the activation dtype.
struct MatmulShape { int M, N, K; bool bias; bool f32_out = false; };
// fp8 weights (wt = F8E4M3) get 128x128 block scales when block = 128, one scale when 0.
OpCase matmul_case(DType act, DType wt, MatmulShape s, int block);

void register_basic_cases();
void register_matmul_cases();
void register_batched_matmul_cases();  // cases_batched_matmul.cpp
void register_attention_cases();
void register_hybrid_cases();  // cases_hybrid.cpp
void register_moe_cases();     // cases_moe.cpp
void register_mla_cases();     // cases_mla.cpp
void register_sample_cases();  // cases_sample.cpp
void register_fused_cases();   // cases_fused.cpp
void register_perf_cases();    // perf_cases.cpp

}  // namespace portllm::conformance
