// Options shared by the commands that load a model.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model.h"

namespace portllm::cli {

struct ModelOptions {
  std::string model_dir;              // default: the embedded stories260K
  std::string device = "cpu";
  std::string load_format = "auto";
  std::string dtype = "auto";         // activation dtype on GPUs
  int threads = 0;                    // 0 = all cores (or PORTLLM_NUM_THREADS)
  int num_layers = 0;                 // >0: reduced depth (dummy benchmarks)
  uint64_t seed = 0;
};

void add_model_options(CLI::App* cmd, ModelOptions& o);
// The model directory shipped with portllm (stories260K).
std::string default_model_dir();
// Registers the backends, sets the thread count and returns the device.
std::shared_ptr<Device> open_device(const ModelOptions& o);
std::string resolved_model_dir(const ModelOptions& o);

}  // namespace portllm::cli
