// Reference: RMSNorm and fused residual-add + RMSNorm, as transformers computes them in float32:
// x * rsqrt(mean(x^2) + eps) * (offset + w). The add is rounded to the activation dtype first.
#include <cmath>

#include "ops/op_args.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;
auto any = [](const OpDesc&, const DeviceCaps&) { return true; };

double get(const Tensor& t, int64_t r, int64_t j) { return load(t.dtype, t.data, t.row_offset(r) + j); }
void set(const Tensor& t, int64_t r, int64_t j, double v) { store(t.dtype, t.data, t.row_offset(r) + j, v); }

void normalize_row(const Tensor& out, const Tensor& src, const Tensor& w, int64_t r, float eps,
                   float offset) {
  const int64_t D = src.size(-1);
  double ss = 0;
  for (int64_t j = 0; j < D; ++j) ss += get(src, r, j) * get(src, r, j);
  const double inv = 1.0 / std::sqrt(ss / double(D) + eps);
  for (int64_t j = 0; j < D; ++j) set(out, r, j, get(src, r, j) * inv * (offset + load(w.dtype, w.data, j)));
}

void rms_norm(const RmsNormArgs& a, Stream&) {
  for (int64_t r = 0; r < a.x.num_rows(); ++r) normalize_row(a.out, a.x, a.weight, r, a.eps, a.weight_offset);
}

void add_rms_norm(const AddRmsNormArgs& a, Stream&) {
  for (int64_t r = 0; r < a.x.num_rows(); ++r) {
    for (int64_t j = 0; j < a.x.size(-1); ++j) set(a.residual, r, j, get(a.residual, r, j) + get(a.x, r, j));
    normalize_row(a.out, a.residual, a.weight, r, a.eps, a.weight_offset);
  }
}
}  // namespace

void register_norm_ref() {
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "ref.rms_norm", P, any, rms_norm);
  register_kernel<AddRmsNormArgs>(Op::ADD_RMS_NORM, DeviceKind::CPU, "ref.add_rms_norm", P, any,
                                  add_rms_norm);
}

}  // namespace portllm::ref
