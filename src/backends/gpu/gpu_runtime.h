// What kernel files' host code needs from the backend: the native stream, scratch memory from the
// caching allocator, and a launch check. Kept free of fmt so .cu files stay light to compile.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/device.h"
#include "backends/gpu/vendor/vendor.h"

namespace portllm::gpu {

// The device kind this build's kernels register for.
constexpr DeviceKind kGpuKind =
#if defined(PORTLLM_GPU_MUSA)
    DeviceKind::MUSA;
#else
    DeviceKind::CUDA;
#endif

gpuStream_t native_stream(Stream& s);
// Scratch device memory, returned to the cache when the owner is released (stream-ordered reuse).
std::shared_ptr<void> scratch(Stream& s, size_t bytes);
const DeviceCaps& caps_of(Stream& s);
// The BLAS element type of a float dtype (f32, bf16, f16; throws otherwise). matmul.cpp.
gpuDataType_t blas_type(DType t);
// Whether 16-byte vector loads from p are legal (kernels check views before taking a vector path).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
// Throws portllm::Error naming `what` if the last launch failed.
void check_launch(const char* what);
[[noreturn]] void fail(const char* what);
// Runs the registered kernel `name` on args (a kernel handing a case it does not take to a sibling
// or to the unfused ops); throws naming it if no such kernel is registered.
void run_kernel(const char* name, const void* args, Stream& s);

}  // namespace portllm::gpu
