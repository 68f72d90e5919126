// The model interface. One implementation per family in model/archs/, written against the op
// API (ops/ops.h) only; registered by architecture name in model/arch_registry.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/weight_loader.h"
#include "ops/registry.h"

namespace portllm {

class Model {
 public:
  virtual ~Model() = default;
  const ModelConfig& config() const { return cfg_; }
  // One entry per decoder layer.
  virtual std::vector<LayerCacheSpec> cache_spec() const = 0;
  // Runs the batch and writes next-token logits [batch.num_logits(), vocab] (f32) for the rows
  // batch.logits_indices names. Writes this step's K/V (or state) into `cache`.
  virtual void forward(OpContext& ctx, const ForwardBatch& batch, std::vector<LayerCache>& cache,
                       const Tensor& logits) = 0;

 protected:
  explicit Model(ModelConfig cfg) : cfg_(std::move(cfg)) {}
  ModelConfig cfg_;
};

struct ModelLoadOptions {
  std::string path;                   // model directory (config.json, safetensors)
  std::string load_format = "auto";   // auto | safetensors | dummy
  std::string dtype = "auto";         // activation dtype on GPUs: auto (the checkpoint's) | f32 | bf16 | f16
  int num_layers_override = 0;        // >0: keep only the first N layers (dummy benchmarks)
  uint64_t seed = 0;                  // dummy weights
  int tp_rank = 0, tp_size = 1;
};

using ArchFactory = std::function<std::unique_ptr<Model>(const ModelConfig&, WeightLoader&, OpContext&)>;

// Registers the architectures this build knows (archs call it in arch_registry.cpp).
void register_arch(const std::string& architecture, ArchFactory factory);
std::vector<std::string> registered_archs();
// Reads config.json, picks the architecture and loads its weights onto ctx's device.
std::unique_ptr<Model> load_model(const ModelLoadOptions& opts, OpContext& ctx);
// Parses config.json and checks that its architecture is supported (no weights read).
ModelConfig load_config(const std::string& model_dir, int num_layers_override = 0);

}  // namespace portllm
