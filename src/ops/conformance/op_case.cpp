#include "ops/conformance/op_case.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "ops/ref/ref_util.h"

namespace portllm::conformance {

namespace {
std::map<Op, CaseGenerator>& generators() {
  static std::map<Op, CaseGenerator> g;
  return g;
}
std::map<Op, CaseGenerator>& perf_generators() {
  static std::map<Op, CaseGenerator> g;
  return g;
}
std::mutex g_mu;

Tensor host_alloc(DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  const size_t bytes = std::max<size_t>(1, size_t(n) * dtype_size(dtype));
  auto buf = std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
  return Tensor::view_of(buf.get(), dtype, shape, DeviceKind::CPU, 0, buf);
}
}  // namespace

void register_case_generator(Op op, CaseGenerator gen) {
  std::lock_guard<std::mutex> lk(g_mu);
  generators()[op] = std::move(gen);
}

const CaseGenerator* case_generator(Op op) {
  register_builtin_case_generators();
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = generators().find(op);
  return it == generators().end() ? nullptr : &it->second;
}

void register_perf_case_generator(Op op, CaseGenerator gen) {
  std::lock_guard<std::mutex> lk(g_mu);
  perf_generators()[op] = std::move(gen);
}

const CaseGenerator* perf_case_generator(Op op) {
  register_builtin_case_generators();
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = perf_generators().find(op);
  return it == perf_generators().end() ? nullptr : &it->second;
}

void defer_tensors(OpCase& c, std::function<OpCase()> make) {
  c.build = [make = std::move(make)](OpCase& self) {
    OpCase full = make();
    self.tensors = std::move(full.tensors);
    self.outputs = std::move(full.outputs);
    self.tol = full.tol;
    self.invoke = std::move(full.invoke);
  };
}

uint64_t CaseRng::next() {
  // splitmix64: tiny, seedable, good enough for test data.
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double CaseRng::uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
int64_t CaseRng::integer(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }

Tensor CaseRng::tensor(DType dtype, std::vector<int64_t> shape, double lo, double hi) {
  Tensor t = host_alloc(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) ref::store(dtype, t.data, i, uniform(lo, hi));
  return t;
}

Tensor CaseRng::ints(std::vector<int32_t> values, std::vector<int64_t> shape) {
  Tensor t = host_alloc(DType::I32, shape);
  std::memcpy(t.data, values.data(), values.size() * 4);
  return t;
}

Tensor CaseRng::filled(DType dtype, std::vector<int64_t> shape, double value) {
  Tensor t = host_alloc(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) ref::store(dtype, t.data, i, value);
  return t;
}

ExpertWeights expert_weights(CaseRng& r, DType wt, int64_t E, int64_t N, int64_t K, int64_t bn, int64_t bk,
                             double wmax) {
  const double ws = 1.0 / std::sqrt(double(K));
  if (wt != DType::F8E4M3) return {r.tensor(wt, {E, N, K}, -ws, ws), Tensor()};
  Tensor w = r.tensor(wt, {E, N, K}, -wmax, wmax);
  return {w, r.tensor(DType::F32, {E, (N + bn - 1) / bn, (K + bk - 1) / bk}, 0.5 * ws / wmax, 1.5 * ws / wmax)};
}

double default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.5e-2;
    case DType::F8E4M3: return 8e-2;
    default: return 0;
  }
}

}  // namespace portllm::conformance
