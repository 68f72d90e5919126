// Backends register a factory under a name ("cpu", "cuda", "musa"); commands take --device NAME
// or NAME:INDEX. Adding a backend = one folder in backends/ plus one registration line
// (backends/builtin.h).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace portllm {

using DeviceFactory = std::function<std::shared_ptr<Device>(int index)>;

struct BackendInfo {
  std::string name;
  DeviceFactory create;
  std::function<int()> device_count;  // 0 when the runtime finds no device
};

class BackendRegistry {
 public:
  static BackendRegistry& instance();
  void add(BackendInfo info);
  const BackendInfo* find(const std::string& name) const;
  std::vector<std::string> names() const;
  // "cpu", "cuda", "cuda:1": one device per (name, index), created once and shared.
  std::shared_ptr<Device> device(const std::string& spec);

 private:
  std::vector<BackendInfo> backends_;
  std::vector<std::pair<std::string, std::shared_ptr<Device>>> devices_;
};

}  // namespace portllm
