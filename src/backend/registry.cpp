#include "backend/registry.h"

#include <mutex>

#include "core/error.h"

namespace portllm {

namespace {
std::mutex g_mu;
}

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry r;
  return r;
}

void BackendRegistry::add(BackendInfo info) {
  std::lock_guard<std::mutex> lk(g_mu);
  for (auto& b : backends_)
    if (b.name == info.name) return;  // registering twice is harmless
  backends_.push_back(std::move(info));
}

const BackendInfo* BackendRegistry::find(const std::string& name) const {
  for (auto& b : backends_)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> v;
  for (auto& b : backends_) v.push_back(b.name);
  return v;
}

std::shared_ptr<Device> BackendRegistry::device(const std::string& spec) {
  std::string name = spec;
  int index = 0;
  if (auto colon = spec.find(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    try {
      index = std::stoi(spec.substr(colon + 1));
    } catch (...) {
      PL_THROW("--device '{}': expected NAME or NAME:INDEX", spec);
    }
  }
  std::lock_guard<std::mutex> lk(g_mu);
  const BackendInfo* b = nullptr;
  for (auto& x : backends_)
    if (x.name == name) b = &x;
  if (!b) {
    std::string known;
    for (auto& x : backends_) known += (known.empty() ? "" : ", ") + x.name;
    PL_THROW("--device '{}': unknown backend (this build has: {})", spec, known);
  }
  std::string key = name + ":" + std::to_string(index);
  for (auto& [k, d] : devices_)
    if (k == key) return d;
  int count = b->device_count ? b->device_count() : 1;
  if (index < 0 || index >= count)
    PL_THROW("--device '{}': no such device ({} {} device(s) visible)", spec, count, name);
  auto d = b->create(index);
  devices_.emplace_back(key, d);
  return d;
}

}  // namespace portllm
