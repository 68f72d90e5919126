// The input of a pre-norm sub-layer, handed over unevaluated: h = rmsnorm(residual + delta) *
// (weight_offset + weight), with the residual stream advanced to residual + delta.
//
// Why not evaluate it at once (ADD_RMS_NORM): at decode that is a launch of a few microseconds for
// a few KB of work, before a GEMV that must wait for it anyway. The sub-layer's first projection
// can compute h itself (ADD_RMS_NORM_MATMUL: every block of the GEMV normalizes the row while its
// first weights are in flight). That kernel's blocks all read the old residual while some of them
// store the new one, so the new residual goes to the second buffer (`spare`) and the decoder swaps
// the two. Without the fused kernel (the CPU, batches the GEMV does not take, fp8 or split
// weights), the first use evaluates h with ADD_RMS_NORM in place, as before.
//
// Where the first projection cannot take the norm (Qwen3-8B's gate_up: every one of its 3072 blocks
// normalizing lost) and the previous sub-layer's last projection is still pending (SublayerOut),
// that projection runs the norm instead, in its GEMV's last block (MATMUL_ADD_RMS_NORM).
#pragma once
#include <utility>

#include "model/linear.h"
#include "ops/registry.h"

namespace portllm {

// A sub-layer's output, the delta to the residual stream: a tensor, or the sub-layer's last
// projection not yet run (proj applied to proj_in), for the next NormedInput to run with the norm
// (see above). Sub-layers whose last step is not one float matrix return the tensor.
struct SublayerOut {
  Tensor delta;
  const Linear* proj = nullptr;
  Tensor proj_in;

  SublayerOut() = default;
  SublayerOut(Tensor d) : delta(std::move(d)) {}  // NOLINT: a sub-layer's evaluated output
  // l(in), left pending where l is one float matrix (what MATMUL_ADD_RMS_NORM takes), else run now.
  static SublayerOut last_projection(OpContext& ctx, const Linear& l, const Tensor& in);

  bool pending() const { return proj != nullptr; }
  bool defined() const { return pending() || delta.defined(); }
  // The delta, running the pending projection first.
  const Tensor& evaluate(OpContext& ctx);
};

class NormedInput {
 public:
  // residual, spare, h: [T, H] buffers of the decoder; delta: the previous sub-layer's output, or
  // undefined before the first layer (h = rmsnorm(residual), the residual unchanged).
  NormedInput(const Tensor& residual, const Tensor& spare, SublayerOut delta, const Tensor& weight, float eps,
              float weight_offset, const Tensor& h)
      : residual_(residual), spare_(spare), delta_(std::move(delta)), weight_(weight), h_(h), eps_(eps),
        offset_(weight_offset) {}

  int64_t rows() const { return residual_.size(0); }
  // h, evaluated on the first call.
  const Tensor& hidden(OpContext& ctx);
  // y = h @ W^T (+ bias). keep_h: h is read again after this call (it is then stored as well).
  void project(OpContext& ctx, const Linear& l, const Tensor& y, bool keep_h = false);
  Tensor project(OpContext& ctx, const Linear& l, bool keep_h = false);
  void project(OpContext& ctx, const Tensor& w, const Tensor& y, bool keep_h = false);  // float W, no bias
  // out = silu(h @ Wg^T) * (h @ Wu^T) for W = [Wg; Wu] (float).
  void project_silu_mul(OpContext& ctx, const Tensor& out, const Tensor& w);
  // The advanced residual stream, and the buffer that is free for the next sub-layer's update.
  const Tensor& residual(OpContext& ctx);
  const Tensor& spare() const { return spare_; }

 private:
  enum class State { Pending, ResidualDone, Done };  // nothing yet; residual advanced, h not stored; both
  bool fused(OpContext& ctx, const Tensor& w, const Tensor& bias, const Tensor& y, bool gated, bool keep_h);

  Tensor residual_, spare_;
  SublayerOut delta_;
  Tensor weight_, h_;
  float eps_, offset_;
  State state_ = State::Pending;
};

// The decoder's residual stream: the two buffers a fused norm alternates between, and h.
struct ResidualStream {
  Tensor residual, spare, h;

  ResidualStream(OpContext& ctx, int64_t tokens, int64_t hidden)
      : residual(ctx.act({tokens, hidden})), spare(ctx.act({tokens, hidden})), h(ctx.act({tokens, hidden})) {}
  // The next sub-layer's input: norm(residual + delta) (delta undefined: norm(residual)).
  NormedInput next(SublayerOut delta, const Tensor& weight, float eps, float weight_offset) const {
    return NormedInput(residual, spare, std::move(delta), weight, eps, weight_offset, h);
  }
  // After the sub-layer: where its input left the stream.
  void advance(OpContext& ctx, NormedInput& in) {
    residual = in.residual(ctx);
    spare = in.spare();
  }
};

}  // namespace portllm
