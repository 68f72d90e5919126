#!/usr/bin/env bash
# CI compile of the MUSA code path: configures a separate build dir with
# -DPORTLLM_GPU=musa -DPORTLLM_MUSA_EMULATE=ON (test-only MUSA headers over CUDA, see
# tests/musa_emulation/README.md) and builds only the GPU library for one CUDA arch, so every
# vendor/musa.h mapping the tree uses is compiled. Skips (exit 0, saying so) where no nvcc exists.
# Usage: bash musa_emulation_build.sh <portllm-binary> <source-dir>
set -u
BIN=${1:?usage: musa_emulation_build.sh <portllm-binary> <source-dir>}
SRC=${2:?usage: musa_emulation_build.sh <portllm-binary> <source-dir>}
NVCC=${CUDACXX:-$(command -v nvcc || true)}
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then
  echo "SKIPPED: no nvcc on this machine, the MUSA emulation build was not compiled"
  exit 0
fi
ROOT=$SRC/src
if [ ! -f "$ROOT/backends/gpu/gpu_device.cpp" ]; then
  echo "SKIPPED: no GPU tree under $ROOT/backends/gpu, nothing to compile"
  exit 0
fi
BUILD=${MUSA_EMU_BUILD_DIR:-$(cd "$(dirname "$BIN")" && pwd)/musa-emulation-check}
extra=()
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$SRC" -B "$BUILD" "${gen[@]}" -DPORTLLM_GPU=musa -DPORTLLM_MUSA_EMULATE=ON \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 "${extra[@]}" >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log"; echo "FAIL: configure of the MUSA emulation build"; exit 1; }
grep -q "GPU backend ON (musa" "$BUILD.configure.log" || { cat "$BUILD.configure.log"; echo "FAIL: MUSA path not taken"; exit 1; }
cmake --build "$BUILD" --target portllm_backends_gpu -j2 >"$BUILD.build.log" 2>&1 ||
  { tail -60 "$BUILD.build.log"; echo "FAIL: build of portllm_backends_gpu (MUSA emulation)"; exit 1; }
# The objects must come from the MUSA path: the vendor name compiled into them is "mthreads".
lib=$(find "$BUILD" -name 'libportllm_backends_gpu.a' | head -1)
[ -n "$lib" ] && strings "$lib" | grep -q "MUSA_VISIBLE_DEVICES" ||
  { echo "FAIL: libportllm_backends_gpu.a does not carry the MUSA device selector"; exit 1; }
echo "OK: MUSA emulation build of portllm_backends_gpu ($BUILD)"
