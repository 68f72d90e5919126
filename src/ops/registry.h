// The kernel registry. A kernel is {op, device kind, name, priority, supports, run}; dispatch
// picks the highest-priority kernel whose supports() accepts the op descriptor on this device's
// caps. Reference kernels (ops/ref) are the lowest-priority CPU kernels and the conformance oracle.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/device.h"
#include "ops/op.h"

namespace portllm {

struct KernelInfo {
  Op op;
  DeviceKind device;
  std::string name;  // "ref.rms_norm", "cpu.matmul_avx2", "gpu.attn_decode_split_kv"
  int priority = 0;  // reference kernels use kReferencePriority
  std::function<bool(const OpDesc&, const DeviceCaps&)> supports;
  std::function<void(const void* args, Stream& stream)> run;  // args: the op's *Args struct
  // Error the kernel's numerics cost by design, beyond the case's tolerance (e.g. a W8A8 GEMM
  // rounds activations to e4m3: 3 mantissa bits). The conformance runner compares it at
  // max(case tolerance, min_tolerance); 0 for every kernel that computes what the reference does.
  double min_tolerance = 0;

  static constexpr int kReferencePriority = -100;
  bool is_reference() const { return priority == kReferencePriority; }
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(KernelInfo k);
  // All kernels for op on device kind, highest priority first.
  std::vector<const KernelInfo*> kernels(Op op, DeviceKind device) const;
  const KernelInfo* reference(Op op) const;  // the CPU reference kernel of op
  const KernelInfo* find(const std::string& name) const;
  std::vector<const KernelInfo*> all() const;

 private:
  std::vector<std::unique_ptr<KernelInfo>> kernels_;
};

// Convenience for kernel files: register_kernel<RmsNormArgs>(Op::RMS_NORM, ...).
template <class Args, class Supports, class Run>
void register_kernel(Op op, DeviceKind device, std::string name, int priority, Supports supports,
                     Run run, double min_tolerance = 0) {
  KernelInfo k;
  k.min_tolerance = min_tolerance;
  k.op = op;
  k.device = device;
  k.name = std::move(name);
  k.priority = priority;
  k.supports = supports;
  k.run = [run](const void* a, Stream& s) { run(*static_cast<const Args*>(a), s); };
  KernelRegistry::instance().add(std::move(k));
}

// Chooses (and caches) a kernel per op descriptor for one device.
class Dispatcher {
 public:
  explicit Dispatcher(Device& device) : device_(device) {}
  const KernelInfo& select(const OpDesc& desc);  // throws Error when no kernel supports desc
  const KernelInfo* try_select(const OpDesc& desc);

 private:
  Device& device_;
  std::unordered_map<uint64_t, const KernelInfo*> cache_;
};

// What model code holds while it runs: the device, its stream and the dispatcher.
struct OpContext {
  Device* device = nullptr;
  Stream* stream = nullptr;
  Dispatcher* dispatcher = nullptr;
  DType act_dtype = DType::F32;  // activation dtype the backend computes in

  explicit OpContext(Device& d);
  Tensor empty(DType t, std::vector<int64_t> shape) const { return device->empty(t, std::move(shape)); }
  Tensor act(std::vector<int64_t> shape) const { return device->empty(act_dtype, std::move(shape)); }

 private:
  std::shared_ptr<Dispatcher> owned_;
};

}  // namespace portllm
