// Argument structs of the hybrid-model ops (Qwen3-Next, Qwen3.5/3.6: Gated DeltaNet linear
// attention beside gated full attention). Conventions as in op_args.h: the last dim of every
// tensor is contiguous, leading dims may be strided views of wider tensors, index tensors are
// i32 and "host mirror" vectors equal their tensors.
//
// Ragged batches: sequence b owns token rows [query_start_loc[b], query_start_loc[b+1]) and the
// recurrent-state slot state_slots[b]. When has_initial_state[b] == 0 the sequence starts from
// zeros and a kernel must NOT read the slot (it may hold a finished request's state); it
// always writes the slot's final state. Slots of sequences not in the batch are not touched.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace portllm {

// Causal depthwise conv1d over time with carried state, then optional SiLU
// (GDN_CONV: any q_len; GDN_CONV_DECODE: every sequence has q_len 1).
//   window(t) = [last K-1 inputs before t (from the state, or zeros), x[t]]
//   out[t, c] = act(sum_{j<K} weight[c, j] * window(t)[j, c])
// and afterwards conv_state[slot] = the sequence's last K-1 inputs (older state included when
// the sequence is shorter than K-1), oldest first. out must not alias x.
// dtype[0] = x/out, dtype[1] = weight, dtype[2] = state; dim[0] = C, dim[1] = K.
struct CausalConv1dArgs {
  Tensor out;                // [T, C]
  Tensor x;                  // [T, C]
  Tensor weight;             // [C, K] (the checkpoint's conv1d.weight [C, 1, K] squeezed)
  Tensor conv_state;         // [num_slots, K - 1, C] in/out
  Tensor query_start_loc;    // [B + 1] i32
  Tensor state_slots;        // [B] i32
  Tensor has_initial_state;  // [B] i32
  bool silu = true;
  int max_q_len = 0;
  std::vector<int32_t> host_query_start_loc, host_state_slots, host_has_initial_state;
  OpDesc desc(Op op) const;
};

// The gated delta rule (Gated DeltaNet), with the per-token gating computed inside:
//   beta_t = sigmoid(b[t, h]),  g_t = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h])
//   q_t = l2norm(q[t, h / r]) * scale,  k_t = l2norm(k[t, h / r])   (r = Hv / Hk; l2norm eps 1e-6:
//   x * rsqrt(sum x^2 + 1e-6); skipped when l2norm_qk is false)
//   S = exp(g_t) * S;  delta = beta_t * (v_t - S^T k_t);  S = S + k_t delta^T;  out_t = S^T q_t
// per sequence and value head h, S = state[slot, h] ([Dk, Dv], f32). GDN_RULE takes any q_len
// (kernels may use the chunked form); GDN_RULE_DECODE has q_len 1 per sequence. The token-by-token
// recurrence above is the reference for both.
// dtype[0] = q/k/v/out, dtype[1] = a/b, dtype[2] = state; dim[0] = Dk, dim[1] = Dv, dim[2] = Hv / Hk.
struct GatedDeltaRuleArgs {
  Tensor out;                // [T, Hv, Dv]
  Tensor q, k;               // [T, Hk, Dk]
  Tensor v;                  // [T, Hv, Dv]
  Tensor a, b;               // [T, Hv] raw projections
  Tensor A_log, dt_bias;     // [Hv] (any float dtype)
  Tensor state;              // [num_slots, Hv, Dk, Dv] in/out
  Tensor query_start_loc;    // [B + 1] i32
  Tensor state_slots;        // [B] i32
  Tensor has_initial_state;  // [B] i32
  float scale = 1.f;         // usually Dk^-0.5
  bool l2norm_qk = true;
  int max_q_len = 0;
  std::vector<int32_t> host_query_start_loc, host_state_slots, host_has_initial_state;
  OpDesc desc(Op op) const;
};

// out = rmsnorm(x) * (weight_offset + weight) * silu(z), per row of D (Gated DeltaNet's output
// norm; rows may be [T, H, D] views; out may alias x). dtype[0] = x/z/out, dtype[1] = weight;
// dim[0] = D.
struct GatedRmsNormArgs {
  Tensor out;     // [R..., D]
  Tensor x;       // [R..., D]
  Tensor z;       // [R..., D]
  Tensor weight;  // [D]
  float eps = 1e-6f;
  float weight_offset = 0.f;
  OpDesc desc() const;
};

// out = x * sigmoid(gate), row-wise over [R..., D] views; out may alias x. The gate is either
// elementwise ([R..., D]: the output gate of gated attention) or one scalar per row ([R..., 1]:
// the sigmoid gate of Qwen3-Next's shared expert). dtype[0] = act; flags bit0 = per-row gate.
struct SigmoidMulArgs {
  Tensor out;   // [R..., D]
  Tensor x;     // [R..., D]
  Tensor gate;  // [R..., D] or [R..., 1]
  OpDesc desc() const;
};

}  // namespace portllm
