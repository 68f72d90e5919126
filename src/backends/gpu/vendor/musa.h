// MUSA (Moore Threads) mapping of the neutral GPU names (see vendor.h; mirrors vendor/cuda.h name
// for name: add a line to both before the tree uses a new runtime/BLAS call).
// The same header serves two builds (cmake/musa.cmake):
//  - the MUSA SDK: <musa_runtime.h>, <mublas.h>, ... come from MUSA_PATH/include and the tree is
//    compiled by the SDK's clang (-x musa --cuda-gpu-arch=mp_XX);
//  - the emulation build (PORTLLM_MUSA_EMULATE): the same include names resolve to the test-only
//    headers in tests/musa_emulation/include, which map musa* onto cuda*, so this mapping compiles
//    with nvcc and runs on an NVIDIA GPU under a chosen MUSA capability profile.
#pragma once
#include <musa_bf16.h>
#include <musa_fp16.h>
#include <musa_runtime.h>
#include <mublas.h>

#define PORTLLM_GPU_VENDOR "mthreads"
#define PORTLLM_GPU_VISIBLE_DEVICES_ENV "MUSA_VISIBLE_DEVICES"

// Kernels are compiled with the warp size of the hardware they run on (ARCHITECTURE.md rule 5):
// 128 on MP21/MP22, the value musa.cmake derived from MUSA_ARCHITECTURES (PORTLLM_MUSA_WARP_SIZE).
// Under emulation the hardware is an NVIDIA GPU, so the constant is its physical 32 and the MUSA
// profile's nominal warp size is only reported (docs/backends/musa.md, "Warp size").
// GpuDevice asserts that the device reports the same value as this constant.
#if defined(PORTLLM_MUSA_EMULATE)
#define PORTLLM_GPU_WARP_SIZE 32
#elif defined(PORTLLM_MUSA_WARP_SIZE)
#define PORTLLM_GPU_WARP_SIZE PORTLLM_MUSA_WARP_SIZE
#else
#define PORTLLM_GPU_WARP_SIZE 128
#endif

// Types.
using gpuError_t = musaError_t;
using gpuStream_t = musaStream_t;
using gpuEvent_t = musaEvent_t;
using gpuDeviceProp = musaDeviceProp;
using gpuGraph_t = musaGraph_t;
using gpuGraphExec_t = musaGraphExec_t;
using gpu_bf16 = __mt_bfloat16;
using gpu_half = __half;
using gpublasHandle_t = mublasHandle_t;
using gpublasStatus_t = mublasStatus_t;
using gpuDataType_t = musaDataType_t;
// muBLAS takes the GEMM compute type as a musaDataType_t (as llama.cpp's ggml-musa maps it).
using gpublasComputeType_t = musaDataType_t;

// Runtime.
#define gpuSuccess musaSuccess
#define gpuGetErrorString musaGetErrorString
#define gpuGetLastError musaGetLastError
#define gpuGetDeviceCount musaGetDeviceCount
#define gpuSetDevice musaSetDevice
#define gpuGetDevice musaGetDevice
#define gpuGetDeviceProperties musaGetDeviceProperties
#define gpuDeviceGetAttribute musaDeviceGetAttribute
#define gpuDevAttrMaxSharedMemoryPerBlockOptin musaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrCooperativeLaunch musaDevAttrCooperativeLaunch
#define gpuDeviceSynchronize musaDeviceSynchronize
#define gpuDriverGetVersion musaDriverGetVersion
#define gpuRuntimeGetVersion musaRuntimeGetVersion
#define gpuMalloc musaMalloc
#define gpuFree musaFree
#define gpuMallocHost musaMallocHost
#define gpuFreeHost musaFreeHost
#define gpuMemGetInfo musaMemGetInfo
#define gpuMemcpyAsync musaMemcpyAsync
#define gpuMemsetAsync musaMemsetAsync
#define gpuMemcpyHostToDevice musaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost musaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice musaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags musaStreamCreateWithFlags
#define gpuStreamNonBlocking musaStreamNonBlocking
#define gpuStreamDestroy musaStreamDestroy
#define gpuStreamSynchronize musaStreamSynchronize
#define gpuStreamWaitEvent musaStreamWaitEvent
#define gpuEventCreate musaEventCreate
#define gpuEventDestroy musaEventDestroy
#define gpuEventRecord musaEventRecord
#define gpuEventSynchronize musaEventSynchronize
#define gpuEventElapsedTime musaEventElapsedTime
#define gpuFuncSetAttribute musaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize musaFuncAttributeMaxDynamicSharedMemorySize
#define gpuErrorMemoryAllocation musaErrorMemoryAllocation

// Graphs (stream capture and replay; opt-in on MUSA through DeviceCaps::graphs).
#define gpuStreamBeginCapture musaStreamBeginCapture
#define gpuStreamEndCapture musaStreamEndCapture
#define gpuStreamCaptureModeThreadLocal musaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed musaStreamCaptureModeRelaxed
using gpuStreamCaptureStatus = musaStreamCaptureStatus;
#define gpuStreamIsCapturing musaStreamIsCapturing
#define gpuStreamCaptureStatusNone musaStreamCaptureStatusNone
// MUSA keeps the five-argument form (exec, graph, error node, log buffer, log size), as torch_musa
// and the ONNX Runtime MUSA provider call it.
#define gpuGraphInstantiate(exec, graph) musaGraphInstantiate((exec), (graph), nullptr, nullptr, 0)
#define gpuGraphLaunch musaGraphLaunch
#define gpuGraphDestroy musaGraphDestroy
#define gpuGraphExecDestroy musaGraphExecDestroy

// BLAS (muBLAS). Batched GEMMs, when the tree adds them, need their pointer arrays in device
// memory on muBLAS (rule 7).
#define gpublasCreate mublasCreate
#define gpublasDestroy mublasDestroy
#define gpublasSetStream mublasSetStream
#define gpublasGemmEx mublasGemmEx
#define gpublasGemmStridedBatchedEx mublasGemmStridedBatchedEx  // strides, no pointer arrays
#define gpublasGetStatusString mublasStatus_to_string
#define GPUBLAS_STATUS_SUCCESS MUBLAS_STATUS_SUCCESS
#define GPUBLAS_OP_N MUBLAS_OP_N
#define GPUBLAS_OP_T MUBLAS_OP_T
#define GPUBLAS_COMPUTE_32F MUSA_R_32F
#define GPUBLAS_GEMM_DEFAULT MUBLAS_GEMM_DEFAULT
#define GPU_R_32F MUSA_R_32F
#define GPU_R_16F MUSA_R_16F
#define GPU_R_16BF MUSA_R_16BF

// BLASLt (muBLASLt mirrors cuBLASLt name for name, as torchada maps it). Not mapped yet: the only
// user, the block-scaled FP8 GEMM of matmul_fp8_w8a8.cpp, is NVIDIA-only (cuBLASLt's VEC128 /
// BLK128x128 scale modes are a Hopper feature; muBLASLt's equivalent, if any, is unverified), and
// the emulation headers in tests/musa_emulation/include have no <mublasLt.h>. A MUSA port of that
// path adds the gpublasLt* lines of vendor/cuda.h here with the mublasLt* names.

// Collectives (MCCL replaces NCCL, rule 7). The tree has no collective calls yet (cuda.h maps
// none); these lines are the MCCL side of the gpuccl* names for when tensor parallelism lands.
#if defined(PORTLLM_HAVE_GPUCCL)
#include <mccl.h>
using gpucclComm_t = mcclComm_t;
using gpucclUniqueId = mcclUniqueId;
using gpucclResult_t = mcclResult_t;
#define gpucclSuccess mcclSuccess
#define gpucclGetUniqueId mcclGetUniqueId
#define gpucclCommInitRank mcclCommInitRank
#define gpucclCommDestroy mcclCommDestroy
#define gpucclAllReduce mcclAllReduce
#define gpucclAllGather mcclAllGather
#define gpucclGetErrorString mcclGetErrorString
#define gpucclFloat32 mcclFloat32
#define gpucclFloat16 mcclFloat16
#define gpucclBfloat16 mcclBfloat16
#define gpucclSum mcclSum
#endif

// Device-side helpers with vendor-specific spellings (musa_bf16.h / musa_fp16.h keep CUDA's).
#define gpu_bf16_to_f32 __bfloat162float
#define gpu_f32_to_bf16 __float2bfloat16_rn
#define gpu_half_to_f32 __half2float
#define gpu_f32_to_half __float2half_rn
#define gpu_shfl_xor(v, m) __shfl_xor_sync(0xffffffffu, (v), (m), PORTLLM_GPU_WARP_SIZE)
#define gpu_shfl(v, lane) __shfl_sync(0xffffffffu, (v), (lane), PORTLLM_GPU_WARP_SIZE)

// Programmatic dependent launch (see vendor/cuda.h) has no MUSA counterpart: launches stay ordered
// the ordinary way and the device-side calls are no-ops.
#define PORTLLM_GPU_PROGRAMMATIC_LAUNCH 0
#define gpu_wait_for_predecessor() ((void)0)
#define gpu_allow_successor() ((void)0)
#define gpu_load_settled(p) (*(p))  // launches are ordinary: every earlier kernel has finished
// No L2 eviction hints spelled for MUSA (vendor/cuda.h): a plain 16-byte load.
#define gpu_stream_policy() (0ull)
#define gpu_load_stream(p, policy) ((void)(policy), *reinterpret_cast<const uint4*>(p))
// Nor thread-block clusters (DeviceCaps::max_cluster_blocks = 0): the kernels that use them are
// NVIDIA-only fast paths, never built for MUSA.
#define PORTLLM_GPU_CLUSTERS 0
