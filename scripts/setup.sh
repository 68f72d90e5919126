#!/usr/bin/env bash
# One command for a fresh Debian/Ubuntu machine: install what is missing, build portllm, and run
# the main job (greedy story generation with the embedded stories260K model).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target portllm -j"$(nproc)"
./build/portllm generate --prompt "Once upon a time" --max-tokens 200
