#include <map>
#include <mutex>

#include "core/error.h"
#include "model/archs/archs.h"
#include "model/model.h"

namespace portllm {

namespace {
std::map<std::string, ArchFactory>& archs() {
  static std::map<std::string, ArchFactory> m;
  return m;
}

void register_builtin_archs() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_llama_archs();
    register_qwen3_moe_archs();
    register_deepseek_archs();
    register_qwen3_next_archs();
  });
}
}  // namespace

void register_arch(const std::string& architecture, ArchFactory factory) {
  archs()[architecture] = std::move(factory);
}

std::vector<std::string> registered_archs() {
  register_builtin_archs();
  std::vector<std::string> v;
  for (auto& [k, f] : archs()) v.push_back(k);
  return v;
}

ModelConfig load_config(const std::string& model_dir, int num_layers_override) {
  register_builtin_archs();
  ModelConfig cfg = ModelConfig::from_file(model_dir + "/config.json");
  if (!archs().count(cfg.architecture)) {
    std::string known;
    for (auto& [k, f] : archs()) known += (known.empty() ? "" : ", ") + k;
    PL_THROW("{}: unsupported architecture '{}' (supported: {})", cfg.source, cfg.architecture, known);
  }
  if (num_layers_override > 0 && num_layers_override < cfg.num_layers) {
    cfg.num_layers = num_layers_override;
    cfg.raw["num_hidden_layers"] = num_layers_override;
  }
  return cfg;
}

std::unique_ptr<Model> load_model(const ModelLoadOptions& opts, OpContext& ctx) {
  ModelConfig cfg = load_config(opts.path, opts.num_layers_override);
  // Activations: f32 on the CPU (exact reference arithmetic, weights widened in registers);
  // on GPUs the checkpoint's own float dtype, as transformers computes (bf16 for bf16/fp8
  // checkpoints, f32 for f32 ones such as stories260K).
  // --dtype overrides that on GPUs (f32 activations separate bf16 rounding from kernel bugs).
  // Checked on every device, so a typo is caught on the CPU too, where it has no effect.
  std::optional<DType> forced;
  if (opts.dtype != "auto") {
    forced = dtype_from_name(opts.dtype);
    if (!forced || !(*forced == DType::F32 || *forced == DType::BF16 || *forced == DType::F16))
      PL_THROW("--dtype '{}': expected auto, f32, bf16 or f16", opts.dtype);
  }
  if (ctx.device->kind() != DeviceKind::CPU) {
    ctx.act_dtype = (cfg.dtype == DType::F32 || cfg.dtype == DType::F16) ? cfg.dtype : DType::BF16;
    if (forced) ctx.act_dtype = *forced;
  }
  WeightLoader loader(opts.path, opts.load_format, cfg, *ctx.device, opts.seed);
  // Reduced depth: tensors of the dropped layers are expected but unused.
  if (opts.num_layers_override > 0) loader.ignore_layers_from(cfg.num_layers);
  // Weights and tables (RoPE) are sized by the config: a failed allocation names it.
  auto does_not_fit = [&](const char* why) {
    return Error(fmt::format("{}: the model it describes does not fit (hidden_size {}, head_dim {}, {} layers, "
                             "max_position_embeddings {}): {}", cfg.source, cfg.hidden_size, cfg.head_dim,
                             cfg.num_layers, cfg.max_position_embeddings, why));
  };
  try {
    auto model = archs().at(cfg.architecture)(cfg, loader, ctx);
    loader.finish();
    return model;
  } catch (const OutOfMemory& e) {
    throw does_not_fit(e.what());
  } catch (const std::bad_alloc& e) {
    throw does_not_fit(e.what());
  }
}

}  // namespace portllm
