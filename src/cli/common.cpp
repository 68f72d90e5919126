#include "cli/common.h"

#include <unistd.h>

#include <filesystem>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "core/error.h"
#include "core/thread_pool.h"

#ifndef PORTLLM_SOURCE_DIR
#define PORTLLM_SOURCE_DIR ""
#endif

namespace portllm::cli {

void add_model_options(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--model,--model-path,-m", o.model_dir, "model directory (config.json, *.safetensors); default: embedded stories260K");
  cmd->add_option("--device,-d", o.device, "backend: cpu, cuda[:N], musa[:N]");
  cmd->add_option("--load-format", o.load_format, "auto | safetensors | dummy (seeded random weights)");
  cmd->add_option("--dtype", o.dtype, "activation dtype on GPUs: auto (the checkpoint's) | f32 | bf16 | f16");
  cmd->add_option("--threads,-t", o.threads, "CPU threads (default: all cores)");
  cmd->add_option("--num-layers", o.num_layers, "keep only the first N decoder layers (benchmarks)");
  cmd->add_option("--seed", o.seed, "seed for dummy weights");
}

std::string default_model_dir() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    fs::path dir = fs::path(exe).parent_path();
    candidates.push_back(dir / "models/stories260K");
    candidates.push_back(dir / "../models/stories260K");
    candidates.push_back(dir / "../share/portllm/models/stories260K");
  }
  if (*PORTLLM_SOURCE_DIR) candidates.push_back(fs::path(PORTLLM_SOURCE_DIR) / "models/stories260K");
  for (auto& c : candidates)
    if (fs::exists(c / "config.json")) return fs::weakly_canonical(c).string();
  PL_THROW("the embedded model (models/stories260K) was not found next to the binary; pass --model DIR");
}

std::string resolved_model_dir(const ModelOptions& o) { return o.model_dir.empty() ? default_model_dir() : o.model_dir; }

std::shared_ptr<Device> open_device(const ModelOptions& o) {
  if (o.threads > 0) ThreadPool::set_global_threads(o.threads);
  register_builtin_backends();
  return BackendRegistry::instance().device(o.device);
}

}  // namespace portllm::cli
