#!/usr/bin/env bash
# PORTLLM_DISABLE_KERNELS: the dispatcher skips the named kernels, so a run takes the next one
# (here the CPU backend's MATMUL falls to the reference kernel), as PORTLLM_PROFILE_OPS=1's
# per-kernel table shows. Args: <portllm binary> <source dir (unused)>.
set -euo pipefail
PL=$1
run() { PORTLLM_PROFILE_OPS=1 "$PL" bench latency --batch-size 1 --input-len 8 --output-len 4 --num-iters 1 \
  --num-iters-warmup 0 2>&1; }
base=$(run)
grep -q " cpu.matmul | MATMUL" <<<"$base" || { echo "$base"; echo "expected cpu.matmul by default"; exit 1; }
off=$(PORTLLM_DISABLE_KERNELS=no.such.kernel,cpu.matmul run)
grep -q " ref.matmul | MATMUL" <<<"$off" || { echo "$off"; echo "expected ref.matmul with cpu.matmul disabled"; exit 1; }
if grep -q " cpu.matmul | MATMUL" <<<"$off"; then echo "$off"; echo "cpu.matmul ran although disabled"; exit 1; fi
echo "disable_kernels: ok"
