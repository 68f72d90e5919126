#!/usr/bin/env bash
# Rule 1 of the portable GPU tree: no CUDA/cuBLAS/NCCL/driver call outside
# src/backends/gpu/vendor/ (kernels and host code use the neutral gpu*/gpublas* names).
# usage: gpu_vendor_layer.sh <portllm-binary> <source-dir>
set -u
src=${2:?source dir}
hits=$(grep -rnP '\b(cuda[A-Z]\w*|cublas\w*|nccl[A-Z]\w*|cu(Mem|Ctx|Device|Stream|Launch)\w*)\s*\(' \
  "$src/src" "$src/tests" "$src/scripts" 2>/dev/null | grep -v "/src/backends/gpu/vendor/" | grep -v "/tests/musa_emulation/" | grep -v "gpu_vendor_layer.sh")
if [ -n "$hits" ]; then
  echo "vendor API calls outside src/backends/gpu/vendor/:"
  echo "$hits"
  exit 1
fi
echo "ok: no vendor API calls outside src/backends/gpu/vendor/"
