// TEST-ONLY emulation of the MUSA runtime over CUDA (tests/musa_emulation/README.md).
// Each musa* name the GPU tree reaches through src/backends/gpu/vendor/musa.h is mapped onto its
// CUDA twin, so the MUSA code path compiles with nvcc and runs on an NVIDIA GPU. Never shipped:
// only the emulation build (-DPORTLLM_MUSA_EMULATE=ON) puts this folder on the include path.
#pragma once
#include <cuda_runtime.h>

using musaError_t = cudaError_t;
using musaStream_t = cudaStream_t;
using musaEvent_t = cudaEvent_t;
using musaDeviceProp = cudaDeviceProp;
using musaGraph_t = cudaGraph_t;
using musaGraphExec_t = cudaGraphExec_t;
using musaDataType_t = cudaDataType_t;

#define musaSuccess cudaSuccess
#define musaErrorMemoryAllocation cudaErrorMemoryAllocation
#define musaGetErrorString cudaGetErrorString
#define musaGetLastError cudaGetLastError
#define musaGetDeviceCount cudaGetDeviceCount
#define musaSetDevice cudaSetDevice
#define musaGetDevice cudaGetDevice
#define musaGetDeviceProperties cudaGetDeviceProperties
#define musaDeviceGetAttribute cudaDeviceGetAttribute
#define musaDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define musaDevAttrCooperativeLaunch cudaDevAttrCooperativeLaunch
#define musaDeviceSynchronize cudaDeviceSynchronize
#define musaDriverGetVersion cudaDriverGetVersion
#define musaRuntimeGetVersion cudaRuntimeGetVersion
#define musaMalloc cudaMalloc
#define musaFree cudaFree
#define musaMallocHost cudaMallocHost
#define musaFreeHost cudaFreeHost
#define musaMemGetInfo cudaMemGetInfo
#define musaMemcpyAsync cudaMemcpyAsync
#define musaMemsetAsync cudaMemsetAsync
#define musaMemcpyHostToDevice cudaMemcpyHostToDevice
#define musaMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define musaMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define musaStreamCreateWithFlags cudaStreamCreateWithFlags
#define musaStreamNonBlocking cudaStreamNonBlocking
#define musaStreamDestroy cudaStreamDestroy
#define musaStreamSynchronize cudaStreamSynchronize
#define musaStreamWaitEvent cudaStreamWaitEvent
#define musaEventCreate cudaEventCreate
#define musaEventDestroy cudaEventDestroy
#define musaEventRecord cudaEventRecord
#define musaEventSynchronize cudaEventSynchronize
#define musaEventElapsedTime cudaEventElapsedTime
#define musaFuncSetAttribute cudaFuncSetAttribute
#define musaFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define musaStreamBeginCapture cudaStreamBeginCapture
#define musaStreamEndCapture cudaStreamEndCapture
#define musaStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define musaStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
using musaStreamCaptureStatus = cudaStreamCaptureStatus;
#define musaStreamIsCapturing cudaStreamIsCapturing
#define musaStreamCaptureStatusNone cudaStreamCaptureStatusNone
// The MUSA SDK keeps CUDA 11's five-argument form; CUDA 12+ takes (exec, graph, flags).
inline cudaError_t musaGraphInstantiate(musaGraphExec_t* exec, musaGraph_t graph, cudaGraphNode_t* error_node,
                                        char* log, size_t log_size) {
  (void)error_node;
  (void)log;
  (void)log_size;
  return cudaGraphInstantiate(exec, graph, 0ULL);
}
#define musaGraphLaunch cudaGraphLaunch
#define musaGraphDestroy cudaGraphDestroy
#define musaGraphExecDestroy cudaGraphExecDestroy

#define MUSA_R_32F CUDA_R_32F
#define MUSA_R_16F CUDA_R_16F
#define MUSA_R_16BF CUDA_R_16BF
