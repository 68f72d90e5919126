// TEST-ONLY emulation of MCCL over NCCL (see musa_runtime.h). Used only when the tree is built
// with collectives (PORTLLM_HAVE_GPUCCL) and NCCL is installed.
#pragma once
#include <nccl.h>

using mcclComm_t = ncclComm_t;
using mcclUniqueId = ncclUniqueId;
using mcclResult_t = ncclResult_t;
#define mcclSuccess ncclSuccess
#define mcclGetUniqueId ncclGetUniqueId
#define mcclCommInitRank ncclCommInitRank
#define mcclCommDestroy ncclCommDestroy
#define mcclAllReduce ncclAllReduce
#define mcclAllGather ncclAllGather
#define mcclGetErrorString ncclGetErrorString
#define mcclFloat32 ncclFloat32
#define mcclFloat16 ncclFloat16
#define mcclBfloat16 ncclBfloat16
#define mcclSum ncclSum
