#!/usr/bin/env bash
# One command for the whole test suite: install what is missing, build everything (the GPU tree
# too when a CUDA toolkit is present; GPU tests skip without a GPU) and run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
