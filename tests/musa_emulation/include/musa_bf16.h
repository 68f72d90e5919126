// TEST-ONLY emulation (see musa_runtime.h): MUSA spells the bf16 type __mt_bfloat16; its
// conversions keep CUDA's names (__bfloat162float, __float2bfloat16_rn).
#pragma once
#include <cuda_bf16.h>

using __mt_bfloat16 = __nv_bfloat16;
