#include "ops/conformance/runner.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "ops/ref/ref_util.h"
#include "ops/ran_tolerance.h"
#include "ops/registry.h"

namespace portllm::conformance {

namespace {
constexpr size_t kGuard = 256;
constexpr uint8_t kGuardByte = 0x5a;

struct DeviceTensor {
  std::shared_ptr<void> mem;  // [guard | data | guard]
  Tensor t;
  size_t bytes;
};

DeviceTensor upload_guarded(Device& dev, const Tensor& host) {
  DeviceTensor d;
  d.bytes = host.nbytes();
  const size_t total = d.bytes + 2 * kGuard;
  d.mem = dev.allocate_bytes(total);
  std::vector<uint8_t> staging(total, kGuardByte);
  std::memcpy(staging.data() + kGuard, host.data, d.bytes);
  dev.copy_to_device(d.mem.get(), staging.data(), total);
  d.t = Tensor::view_of(static_cast<uint8_t*>(d.mem.get()) + kGuard, host.dtype, host.shape_vec(), dev.kind(), dev.index(), d.mem);
  return d;
}

std::string check_guards(Device& dev, const DeviceTensor& d, Tensor& out_host) {
  std::vector<uint8_t> staging(d.bytes + 2 * kGuard);
  dev.copy_to_host(staging.data(), d.mem.get(), staging.size());
  dev.synchronize();
  for (size_t i = 0; i < kGuard; ++i)
    if (staging[i] != kGuardByte || staging[kGuard + d.bytes + i] != kGuardByte) return "wrote outside its output (guard bytes changed)";
  std::memcpy(out_host.data, staging.data() + kGuard, d.bytes);
  return "";
}

// ||out - ref|| / ||ref|| with NaN/Inf agreement; exact comparison when tol == 0.
std::string compare(const Tensor& out, const Tensor& ref, double tol, double& err) {
  double diff2 = 0, ref2 = 0;
  const int64_t n = ref.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double a = ref::load(out.dtype, out.data, i), b = ref::load(ref.dtype, ref.data, i);
    if (std::isnan(a) != std::isnan(b)) return fmt::format("NaN mismatch at element {} (got {}, want {})", i, a, b);
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return fmt::format("Inf mismatch at element {} (got {}, want {})", i, a, b);
      continue;
    }
    if (std::isnan(a)) continue;
    if (tol == 0 && a != b) {
      err = std::abs(a - b);
      return fmt::format("element {}: got {}, want {} (exact op)", i, a, b);
    }
    diff2 += (a - b) * (a - b);
    ref2 += b * b;
  }
  err = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-30);
  if (err > tol) return fmt::format("normalized error {:.3g} > tolerance {:.3g}", err, tol);
  return "";
}

// Uploads fresh guarded copies of the case's tensors and runs kernel k on them, synchronously.
std::vector<DeviceTensor> run_on_device(Device& dev, const OpCase& c, const KernelInfo& k) {
  std::vector<DeviceTensor> dt_in;
  std::vector<Tensor> dev_t;
  for (auto& t : c.tensors) {
    if (!t.defined()) { dt_in.push_back({}); dev_t.push_back(t); continue; }
    dt_in.push_back(upload_guarded(dev, t));
    dev_t.push_back(dt_in.back().t);
  }
  c.invoke(dev_t, [&](const OpDesc&, const void* a) { k.run(a, dev.stream()); });
  dev.synchronize();
  return dt_in;
}

// "" when a and b (same dtype and shape) are the same bytes, else where they first differ.
std::string first_difference(const Tensor& a, const Tensor& b) {
  const size_t es = dtype_size(a.dtype);
  const auto* pa = static_cast<const uint8_t*>(a.data);
  const auto* pb = static_cast<const uint8_t*>(b.data);
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * es, pb + i * es, es) != 0)
      return fmt::format("element {} is {} in one run and {} in the other", i, ref::load(a.dtype, a.data, i),
                         ref::load(b.dtype, b.data, i));
  return "";
}
}  // namespace

Tensor clone_host(const Tensor& t) {
  if (!t.defined()) return t;
  const size_t bytes = std::max<size_t>(1, t.nbytes());
  auto buf = std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
  std::memcpy(buf.get(), t.data, t.nbytes());
  return Tensor::view_of(buf.get(), t.dtype, t.shape_vec(), DeviceKind::CPU, 0, buf);
}

std::vector<CaseResult> run_conformance(Device& dev, const RunOptions& opts) {
  std::vector<CaseResult> results;
  auto record = [&](CaseResult r) {
    if (opts.on_result) opts.on_result(r);
    results.push_back(std::move(r));
  };
  std::regex pattern(opts.pattern.empty() ? ".*" : opts.pattern);
  auto& reg = KernelRegistry::instance();
  for (int oi = 0; oi < int(Op::COUNT); ++oi) {
    const Op op = Op(oi);
    if (!opts.op.empty()) {
      auto want = op_from_name(opts.op);
      if (!want) PL_THROW("ops test: unknown op '{}'", opts.op);
      if (*want != op) continue;
    }
    const CaseGenerator* gen = case_generator(op);
    const KernelInfo* refk = reg.reference(op);
    auto kernels = reg.kernels(op, dev.kind());
    if (!opts.include_reference)
      std::erase_if(kernels, [](const KernelInfo* k) { return k->is_reference(); });
    if (!gen || !refk || kernels.empty()) {
      for (auto* k : kernels)
        record({op, k->name, "(no cases)", DType::F32, CaseResult::Status::Fail, 0, 0,
                !gen ? "op has no conformance cases" : "op has no reference kernel"});
      continue;
    }
    for (DType dt : opts.dtypes) {
      std::vector<OpCase> cases = (*gen)(dt);
      for (OpCase& c : cases) {
        std::vector<Tensor> ref_t;  // computed lazily, once per case
        for (const KernelInfo* k : kernels) {
          double tol = std::max(c.tol, k->min_tolerance);
          CaseResult res{op, k->name, fmt::format("{} act={}", c.name, dtype_name(dt)), dt, CaseResult::Status::Pass, 0, tol, ""};
          if (!std::regex_search(res.kernel + " " + res.case_name, pattern)) continue;
          bool supported = true;
          c.invoke(c.tensors, [&](const OpDesc& d, const void*) { supported = !k->supports || k->supports(d, dev.caps()); });
          if (!supported) {
            res.status = CaseResult::Status::NotSupported;
            record(res);
            continue;
          }
          try {
            if (ref_t.empty()) {
              for (auto& t : c.tensors) ref_t.push_back(clone_host(t));
              Stream& cpu_stream = dev.stream();  // reference kernels ignore the stream
              c.invoke(ref_t, [&](const OpDesc&, const void* a) { refk->run(a, cpu_stream); });
            }
            reset_ran_min_tolerance();
            std::vector<DeviceTensor> dt_in = run_on_device(dev, c, *k);
            // A kernel that handed the call on is judged by the one that computed it.
            tol = res.tol = std::max(tol, ran_min_tolerance());
            std::vector<Tensor> first(c.tensors.size());
            for (size_t i = 0; i < c.tensors.size(); ++i) {
              if (!c.tensors[i].defined()) continue;
              Tensor out_host = clone_host(c.tensors[i]);
              std::string g = check_guards(dev, dt_in[i], out_host);
              if (!g.empty()) { res.status = CaseResult::Status::Fail; res.message = fmt::format("tensor {}: {}", i, g); break; }
              if (std::find(c.outputs.begin(), c.outputs.end(), int(i)) == c.outputs.end()) continue;
              double err = 0;
              std::string m = compare(out_host, ref_t[i], tol, err);
              res.error = std::max(res.error, err);
              if (!m.empty()) { res.status = CaseResult::Status::Fail; res.message = fmt::format("output {}: {}", i, m); break; }
              first[i] = out_host;
            }
            if (opts.repeat && res.status == CaseResult::Status::Pass) {
              std::vector<DeviceTensor> again = run_on_device(dev, c, *k);
              for (int i : c.outputs) {
                Tensor out_host = clone_host(c.tensors[i]);
                std::string m = check_guards(dev, again[i], out_host);
                if (m.empty()) m = first_difference(out_host, first[i]);
                if (!m.empty()) { res.status = CaseResult::Status::Fail; res.message = fmt::format("output {}: second run: {}", i, m); break; }
              }
            }
          } catch (const std::exception& e) {
            res.status = CaseResult::Status::Fail;
            res.message = e.what();
          }
          record(res);
        }
      }
    }
  }
  return results;
}

}  // namespace portllm::conformance
