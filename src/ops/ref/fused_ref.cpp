// Reference of the fused ops: by definition the composition of the unfused references, so a fused
// kernel is checked against exactly what the ops it replaces compute (rounding points included).
#include <memory>
#include <vector>

#include "ops/op_args.h"
#include "ops/ref/ref_kernels.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
template <class Args>
void run_reference(Op op, const Args& a, Stream& s) {
  KernelRegistry::instance().reference(op)->run(&a, s);
}

void qk_norm_rope_kv_write(const QkNormRopeKvWriteArgs& a, Stream& s) {
  if (a.q_norm.defined()) {
    run_reference(Op::RMS_NORM, RmsNormArgs{a.q, a.q, a.q_norm, a.eps, a.weight_offset}, s);
    run_reference(Op::RMS_NORM, RmsNormArgs{a.k, a.k, a.k_norm, a.eps, a.weight_offset}, s);
  }
  run_reference(Op::ROPE, RopeArgs{a.q, a.k, a.positions, a.cos_sin, a.rot_dim, a.interleaved}, s);
  run_reference(Op::KV_WRITE, KvWriteArgs{a.k, a.v, a.k_cache, a.v_cache, a.slot_mapping}, s);
}
void matmul_silu_mul(const MatmulSiluMulArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), I = a.out.size(1);
  // The unfused path's [M, 2I] gate_up output, in the activation dtype.
  auto buf = std::make_shared<std::vector<char>>(size_t(M * 2 * I) * dtype_size(a.out.dtype));
  const Tensor gu = Tensor::view_of(buf->data(), a.out.dtype, {M, 2 * I}, DeviceKind::CPU, 0, buf);
  run_reference(Op::MATMUL, MatmulArgs{gu, a.x, a.w, {}, {}, 0, 0}, s);
  run_reference(Op::SILU_MUL, SiluMulArgs{a.out, gu.slice(1, 0, I), gu.slice(1, I, I)}, s);
}
void add_rms_norm_matmul(const AddRmsNormMatmulArgs& a, Stream& s) {
  const int64_t M = a.residual.size(0), K = a.residual.size(1);
  run_reference(Op::ADD, AddArgs{a.residual_out, a.residual, a.x}, s);
  std::shared_ptr<std::vector<char>> buf;
  Tensor h = a.h;
  if (!h.defined()) {
    buf = std::make_shared<std::vector<char>>(size_t(M * K) * dtype_size(a.residual.dtype));
    h = Tensor::view_of(buf->data(), a.residual.dtype, {M, K}, DeviceKind::CPU, 0, buf);
  }
  run_reference(Op::RMS_NORM, RmsNormArgs{h, a.residual_out, a.norm_weight, a.eps, a.weight_offset}, s);
  if (a.gated) matmul_silu_mul(MatmulSiluMulArgs{a.out, h, a.w}, s);
  else run_reference(Op::MATMUL, MatmulArgs{a.out, h, a.w, a.bias, {}, 0, 0}, s);
}
void matmul_add_rms_norm(const MatmulAddRmsNormArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0);
  auto buf = std::make_shared<std::vector<char>>(size_t(M * N) * dtype_size(a.residual.dtype));
  const Tensor y = Tensor::view_of(buf->data(), a.residual.dtype, {M, N}, DeviceKind::CPU, 0, buf);
  run_reference(Op::MATMUL, MatmulArgs{y, a.x, a.w, a.bias, {}, 0, 0}, s);
  run_reference(Op::ADD_RMS_NORM, AddRmsNormArgs{a.residual, a.h, y, a.norm_weight, a.eps, a.weight_offset}, s);
}
}  // namespace

void register_fused_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  register_kernel<QkNormRopeKvWriteArgs>(Op::QK_NORM_ROPE_KV_WRITE, DeviceKind::CPU, "ref.qk_norm_rope_kv_write",
                                         KernelInfo::kReferencePriority, any, qk_norm_rope_kv_write);
  register_kernel<MatmulSiluMulArgs>(Op::MATMUL_SILU_MUL, DeviceKind::CPU, "ref.matmul_silu_mul",
                                     KernelInfo::kReferencePriority, any, matmul_silu_mul);
  register_kernel<AddRmsNormMatmulArgs>(Op::ADD_RMS_NORM_MATMUL, DeviceKind::CPU, "ref.add_rms_norm_matmul",
                                        KernelInfo::kReferencePriority, any, add_rms_norm_matmul);
  register_kernel<MatmulAddRmsNormArgs>(Op::MATMUL_ADD_RMS_NORM, DeviceKind::CPU, "ref.matmul_add_rms_norm",
                                        KernelInfo::kReferencePriority, any, matmul_add_rms_norm);
}

}  // namespace portllm::ref
