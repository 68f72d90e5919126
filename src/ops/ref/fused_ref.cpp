// Reference of the fused ops: by definition the composition of the unfused references, so a fused
// kernel is checked against exactly what the ops it replaces compute (rounding points included).
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
}  // namespace

void register_fused_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  register_kernel<QkNormRopeKvWriteArgs>(Op::QK_NORM_ROPE_KV_WRITE, DeviceKind::CPU, "ref.qk_norm_rope_kv_write",
                                         KernelInfo::kReferencePriority, any, qk_norm_rope_kv_write);
}

}  // namespace portllm::ref
