// WeightLoader hands model code its weights by name, checked against the shape the model
// expects, already on the target device (CPU: zero-copy views of the mmap'd files). It tracks
// which checkpoint tensors were consumed so that an unexpected tensor is an error naming it.
// --load-format dummy fills the same tensors with seeded random values from config.json alone.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/device.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace portllm {

// Which slice of a weight this rank owns: dim -1 = replicated; else the weight is split in
// `world` equal parts along `dim` and this rank takes part `rank` (tensor parallelism).
struct ShardSpec {
  int dim = -1;
  int rank = 0;
  int world = 1;
};

class WeightLoader {
 public:
  // format: "auto" (safetensors), "safetensors" or "dummy".
  WeightLoader(std::string dir, std::string format, const ModelConfig& cfg, Device& device,
               uint64_t seed = 0);

  Device& device() const { return *device_; }
  const ModelConfig& config() const { return *cfg_; }
  bool is_dummy() const { return dummy_; }

  bool has(const std::string& name) const;
  // The shape a tensor has in the checkpoint (dummy or missing: dummy_shape). For tensors whose
  // stored shape varies between exporters, e.g. a per-tensor fp8 scale stored as [] or [1].
  std::vector<int64_t> stored_shape(const std::string& name, const std::vector<int64_t>& dummy_shape) const;
  // The dtype a tensor has in the checkpoint (dummy: the config dtype, or f8_e4m3 for the
  // weights of an fp8-quantized linear layer).
  DType stored_dtype(const std::string& name) const;
  // Loads `name` (full, unsharded shape `shape`) and returns this rank's slice on the device.
  Tensor load(const std::string& name, const std::vector<int64_t>& shape, ShardSpec shard = {},
              std::optional<DType> dummy_dtype = std::nullopt);
  std::optional<Tensor> load_optional(const std::string& name, const std::vector<int64_t>& shape,
                                      ShardSpec shard = {});
  // Host view (CPU) of a checkpoint tensor, for weights the model transforms before upload.
  Tensor load_host(const std::string& name, const std::vector<int64_t>& shape,
                   std::optional<DType> dummy_dtype = std::nullopt);
  // A device tensor computed from the config rather than read (the RoPE table): made by `make`
  // on the first call for `key`, then the same tensor for every layer that asks.
  Tensor derived(const std::string& key, const std::function<Tensor()>& make);
  // Whether linear layer `prefix` is fp8-quantized (checkpoint dtype, or config for dummy).
  bool is_fp8_linear(const std::string& prefix) const;

  // Tensors under these prefixes are expected but unused (vision towers, MTP layers, ...).
  void ignore_prefix(const std::string& prefix) { ignored_.push_back(prefix); }
  // Tensors of decoder layers >= n ("model.layers.<i>.") are unused (reduced-depth runs).
  void ignore_layers_from(int64_t n) { ignore_layers_from_ = n; }
  // Throws naming the first checkpoint tensor the model did not consume.
  void finish() const;

 private:
  Tensor dummy_tensor(const std::string& name, const std::vector<int64_t>& shape, DType dtype) const;
  Tensor to_device(const Tensor& host, ShardSpec shard);

  std::string dir_;
  const ModelConfig* cfg_;
  Device* device_;
  uint64_t seed_;
  bool dummy_ = false;
  std::optional<Checkpoint> ckpt_;
  std::set<std::string> consumed_;
  std::map<std::string, Tensor> derived_;
  std::vector<std::string> ignored_;
  int64_t ignore_layers_from_ = -1;
};

}  // namespace portllm
