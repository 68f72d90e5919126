// CUDA mapping of the neutral GPU names (see vendor.h). Only names the tree uses are mapped; add
// one line here (and in musa.h) before using a new runtime/BLAS call.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define PORTLLM_GPU_VENDOR "nvidia"
#define PORTLLM_GPU_VISIBLE_DEVICES_ENV "CUDA_VISIBLE_DEVICES"
#define PORTLLM_GPU_WARP_SIZE 32

// Types.
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp = cudaDeviceProp;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpu_bf16 = __nv_bfloat16;
using gpu_half = __half;
using gpublasHandle_t = cublasHandle_t;
using gpublasStatus_t = cublasStatus_t;
using gpuDataType_t = cudaDataType_t;
using gpublasComputeType_t = cublasComputeType_t;

// Runtime.
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrCooperativeLaunch cudaDevAttrCooperativeLaunch
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation

// Graphs (stream capture and replay).
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
// CUDA 12+ form (graph exec, graph, flags).
#define gpuGraphInstantiate(exec, graph) cudaGraphInstantiate((exec), (graph), 0ULL)
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy

// BLAS.
#define gpublasCreate cublasCreate
#define gpublasDestroy cublasDestroy
#define gpublasSetStream cublasSetStream
#define gpublasGemmEx cublasGemmEx
#define gpublasGemmStridedBatchedEx cublasGemmStridedBatchedEx
#define gpublasGetStatusString cublasGetStatusString
#define GPUBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define GPUBLAS_OP_N CUBLAS_OP_N
#define GPUBLAS_OP_T CUBLAS_OP_T
#define GPUBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define GPUBLAS_GEMM_DEFAULT CUBLAS_GEMM_DEFAULT
#define GPU_R_32F CUDA_R_32F
#define GPU_R_16F CUDA_R_16F
#define GPU_R_16BF CUDA_R_16BF
#define GPU_R_8F_E4M3 CUDA_R_8F_E4M3

// BLASLt (cuBLASLt): the block-scaled FP8 GEMM of matmul_fp8_w8a8.cpp, the timed-algorithm GEMM of
// matmul_lt_tuned.cpp, scripts/gpu_probe.cu and scripts/gemm_probe.cu (which also sets algorithm
// configurations).
// Descriptor attributes are set as int32_t / pointers / uint64_t, as cublasLt.h documents each.
using gpublasLtHandle_t = cublasLtHandle_t;
using gpublasLtMatmulDesc_t = cublasLtMatmulDesc_t;
using gpublasLtMatrixLayout_t = cublasLtMatrixLayout_t;
using gpublasLtMatmulPreference_t = cublasLtMatmulPreference_t;
using gpublasLtMatmulHeuristicResult_t = cublasLtMatmulHeuristicResult_t;
using gpublasLtMatmulAlgo_t = cublasLtMatmulAlgo_t;
using gpublasLtMatmulDescAttributes_t = cublasLtMatmulDescAttributes_t;
#define gpublasLtCreate cublasLtCreate
#define gpublasLtDestroy cublasLtDestroy
#define gpublasLtMatmulDescCreate cublasLtMatmulDescCreate
#define gpublasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define gpublasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define gpublasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define gpublasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define gpublasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define gpublasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define gpublasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define gpublasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define gpublasLtMatmul cublasLtMatmul
#define gpublasLtMatmulAlgoCheck cublasLtMatmulAlgoCheck
#define gpublasLtMatmulAlgoConfigGetAttribute cublasLtMatmulAlgoConfigGetAttribute
#define gpublasLtMatmulAlgoConfigSetAttribute cublasLtMatmulAlgoConfigSetAttribute
#define GPUBLASLT_ALGO_CONFIG_TILE_ID CUBLASLT_ALGO_CONFIG_TILE_ID
#define GPUBLASLT_ALGO_CONFIG_SPLITK_NUM CUBLASLT_ALGO_CONFIG_SPLITK_NUM
// The lower-level Lt API (own searches over algorithm configurations; scripts/gemm_probe.cu).
#define gpublasLtMatmulAlgoGetIds cublasLtMatmulAlgoGetIds
#define gpublasLtMatmulAlgoInit cublasLtMatmulAlgoInit
#define gpublasLtMatmulAlgoCapGetAttribute cublasLtMatmulAlgoCapGetAttribute
#define GPUBLASLT_ALGO_CAP_SPLITK_SUPPORT CUBLASLT_ALGO_CAP_SPLITK_SUPPORT
#define GPUBLASLT_ALGO_CAP_TILE_IDS CUBLASLT_ALGO_CAP_TILE_IDS
#define GPUBLASLT_ALGO_CAP_STAGES_IDS CUBLASLT_ALGO_CAP_STAGES_IDS
#define GPUBLASLT_ALGO_CONFIG_STAGES_ID CUBLASLT_ALGO_CONFIG_STAGES_ID
#define GPUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID
#define GPUBLASLT_ALGO_CONFIG_ID CUBLASLT_ALGO_CONFIG_ID
#define GPUBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define GPUBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define GPUBLASLT_MATMUL_DESC_A_SCALE_MODE CUBLASLT_MATMUL_DESC_A_SCALE_MODE
#define GPUBLASLT_MATMUL_DESC_B_SCALE_MODE CUBLASLT_MATMUL_DESC_B_SCALE_MODE
#define GPUBLASLT_MATMUL_DESC_A_SCALE_POINTER CUBLASLT_MATMUL_DESC_A_SCALE_POINTER
#define GPUBLASLT_MATMUL_DESC_B_SCALE_POINTER CUBLASLT_MATMUL_DESC_B_SCALE_POINTER
#define GPUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
#define GPUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
#define GPUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
#define GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES

// Device-side helpers with vendor-specific spellings.
#define gpu_bf16_to_f32 __bfloat162float
#define gpu_f32_to_bf16 __float2bfloat16_rn
#define gpu_half_to_f32 __half2float
#define gpu_f32_to_half __float2half_rn
#define gpu_shfl_xor(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#define gpu_shfl(v, lane) __shfl_sync(0xffffffffu, (v), (lane))

// Programmatic dependent launch (sm_90+; DeviceCaps::programmatic_launch). A kernel launched with
// gpuLaunchProgrammatic may start while the kernel before it on the stream still runs: its blocks
// do what depends on no earlier kernel (a GEMV's first weight loads), then gpu_wait_for_predecessor()
// blocks until the predecessor has finished and its writes are visible. gpu_allow_successor() lets
// the next programmatic launch start early. On devices without it both are no-ops and launches are
// ordinary, which is also what the instructions mean when a kernel was launched the ordinary way.
#define PORTLLM_GPU_PROGRAMMATIC_LAUNCH 1
#if defined(__CUDACC__)
__device__ __forceinline__ void gpu_wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void gpu_allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// A load, before gpu_wait_for_predecessor(), of what a kernel before the predecessor wrote: from
// L2, where that kernel's writes are, not from a line an even earlier kernel left in this SM's L1.
#define gpu_load_settled(p) __ldcg(p)
// Weights stream through L2 once per step: ~15 GB against a 50 MB L2 at batch-1 decode. Loaded
// with an evict-first policy they leave L2 to what the step's short kernels read again: their
// code, the KV cache, norm weights, the step's metadata (load_weight16 in kernel_common.cuh).
__device__ __forceinline__ unsigned long long gpu_stream_policy() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// A 16-byte read-only load under such a policy.
__device__ __forceinline__ uint4 gpu_load_stream(const void* p, unsigned long long policy) {
  uint4 v;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}
// The pieces of a cudaLaunchKernelEx launch that the launchers below share.
inline cudaLaunchAttribute gpu_programmatic_attr() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}
inline cudaLaunchAttribute gpu_cluster_attr(unsigned cluster_z) {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = 1;
  a.val.clusterDim.y = 1;
  a.val.clusterDim.z = cluster_z;
  return a;
}
inline cudaLaunchConfig_t gpu_launch_config(dim3 grid, dim3 block, size_t smem, gpuStream_t s,
                                            cudaLaunchAttribute* attrs, unsigned num_attrs) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attrs;
  cfg.numAttrs = num_attrs;
  return cfg;
}
template <class... P, class... A>
inline gpuError_t gpuLaunchProgrammatic(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, gpuStream_t s,
                                        A&&... args) {
  cudaLaunchAttribute attr[1] = {gpu_programmatic_attr()};
  const cudaLaunchConfig_t cfg = gpu_launch_config(grid, block, smem, s, attr, 1);
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<A&&>(args)...);
}

// Thread-block clusters (sm_90+; DeviceCaps::max_cluster_blocks): the blocks of a cluster run at
// the same time on one GPC and read each other's shared memory (device side: cluster_sm90.cuh,
// NVIDIA-only kernels). gpuLaunchClustered launches `grid` as clusters of (1, 1, cluster_z) blocks,
// programmatically (as gpuLaunchProgrammatic) when asked. gpuMaxActiveClusters is how many such
// clusters of the kernel fit on the device at once, 0 when its resources do not allow the size;
// sizes above 8 (non-portable) are opted into there, so call it before the first launch.
#define PORTLLM_GPU_CLUSTERS 1
template <class... P, class... A>
inline gpuError_t gpuLaunchClustered(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, gpuStream_t s,
                                     unsigned cluster_z, bool programmatic, A&&... args) {
  cudaLaunchAttribute attr[2] = {gpu_cluster_attr(cluster_z), gpu_programmatic_attr()};
  const cudaLaunchConfig_t cfg = gpu_launch_config(grid, block, smem, s, attr, programmatic ? 2 : 1);
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<A&&>(args)...);
}
template <class... P>
inline int gpuMaxActiveClusters(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, unsigned cluster_z) {
  if (cluster_z > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  cudaLaunchAttribute attr[1] = {gpu_cluster_attr(cluster_z)};
  const cudaLaunchConfig_t cfg = gpu_launch_config(grid, block, smem, nullptr, attr, 1);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}
#endif
