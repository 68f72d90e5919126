// Entry point of the GPU tree: registers the "cuda" (or "musa") backend and its kernels.
#pragma once

namespace portllm {

// Registers the backend even when no device or driver is present: its device_count() is then 0
// and --device cuda fails with a clear message, while the CPU backend keeps working.
void register_gpu_backend();

}  // namespace portllm
