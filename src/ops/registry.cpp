#include "ops/registry.h"
#include "ops/ran_tolerance.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"

namespace portllm {

namespace {
std::mutex g_reg_mu;

// PORTLLM_DISABLE_KERNELS=name[,name...]: kernels the dispatcher never picks (same-binary A/B
// measurements of a fast path; the op layer then takes the next kernel or the unfused ops).
bool disabled(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> v;
    const char* e = std::getenv("PORTLLM_DISABLE_KERNELS");
    std::stringstream ss(e ? e : "");
    for (std::string n; std::getline(ss, n, ',');)
      if (!n.empty()) v.insert(n);
    return v;
  }();
  return !names.empty() && names.count(name) > 0;
}
// The largest min_tolerance of the kernels run on this thread since the last reset (ran_tolerance.h).
thread_local double t_ran_min_tolerance = 0;
}  // namespace

double ran_min_tolerance() { return t_ran_min_tolerance; }
void reset_ran_min_tolerance() { t_ran_min_tolerance = 0; }

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry r;
  return r;
}

void KernelRegistry::add(KernelInfo k) {
  if (k.min_tolerance > 0) {  // record that this kernel ran (ran_tolerance.h)
    k.run = [run = std::move(k.run), t = k.min_tolerance](const void* a, Stream& s) {
      t_ran_min_tolerance = std::max(t_ran_min_tolerance, t);
      run(a, s);
    };
  }
  std::lock_guard<std::mutex> lk(g_reg_mu);
  for (auto& existing : kernels_)
    if (existing->name == k.name && existing->device == k.device && existing->op == k.op) return;  // idempotent
  kernels_.push_back(std::make_unique<KernelInfo>(std::move(k)));
}

std::vector<const KernelInfo*> KernelRegistry::kernels(Op op, DeviceKind device) const {
  std::lock_guard<std::mutex> lk(g_reg_mu);
  std::vector<const KernelInfo*> v;
  for (auto& k : kernels_)
    if (k->op == op && k->device == device) v.push_back(k.get());
  std::stable_sort(v.begin(), v.end(),
                   [](auto* a, auto* b) { return a->priority > b->priority; });
  return v;
}

const KernelInfo* KernelRegistry::reference(Op op) const {
  std::lock_guard<std::mutex> lk(g_reg_mu);
  for (auto& k : kernels_)
    if (k->op == op && k->device == DeviceKind::CPU && k->is_reference()) return k.get();
  return nullptr;
}

const KernelInfo* KernelRegistry::find(const std::string& name) const {
  std::lock_guard<std::mutex> lk(g_reg_mu);
  for (auto& k : kernels_)
    if (k->name == name) return k.get();
  return nullptr;
}

std::vector<const KernelInfo*> KernelRegistry::all() const {
  std::lock_guard<std::mutex> lk(g_reg_mu);
  std::vector<const KernelInfo*> v;
  for (auto& k : kernels_) v.push_back(k.get());
  return v;
}

const KernelInfo* Dispatcher::try_select(const OpDesc& desc) {
  const uint64_t key = desc.key();
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const KernelInfo* chosen = nullptr;
  for (const KernelInfo* k : KernelRegistry::instance().kernels(desc.op, device_.kind())) {
    if (disabled(k->name)) continue;
    if (!k->supports || k->supports(desc, device_.caps())) {
      chosen = k;
      break;
    }
  }
  cache_[key] = chosen;
  return chosen;
}

const KernelInfo& Dispatcher::select(const OpDesc& desc) {
  const KernelInfo* k = try_select(desc);
  if (!k) PL_THROW("no kernel on {} supports {}", device_.name(), desc.str());
  return *k;
}

OpContext::OpContext(Device& d)
    : device(&d), stream(&d.stream()), owned_(std::make_shared<Dispatcher>(d)) {
  dispatcher = owned_.get();
  act_dtype = d.kind() == DeviceKind::CPU ? DType::F32 : DType::BF16;
}

}  // namespace portllm
