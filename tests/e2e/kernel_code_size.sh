#!/usr/bin/env bash
# scripts/kernel_code_size.sh against this build's compile commands: one known kernel must come out
# with a plausible machine-code size, and an unknown source must fail with a message naming it.
# Skips (exit 0, saying so) where the build compiled no GPU tree (no nvcc).
# Usage: bash kernel_code_size.sh <portllm-binary> <source-dir>
set -euo pipefail
BIN=$1
SRC=$2
BUILD=$(cd "$(dirname "$BIN")" && pwd)
if ! grep -q 'qk_norm_rope_kv_write.cu' "$BUILD/compile_commands.json" 2>/dev/null; then
  echo "SKIPPED: $BUILD compiled no GPU tree"
  exit 0
fi
out=$(BUILD_DIR=$BUILD bash "$SRC/scripts/kernel_code_size.sh" qk_norm_rope_kv_write.cu \
  'qk_norm_rope_kv_write_kernel<__nv_bfloat16, __nv_bfloat16>')
echo "$out"
[ "$(wc -l <<<"$out")" -eq 1 ] || { echo "expected exactly one kernel"; exit 1; }
size=$(awk '{print $1}' <<<"$out")
[ "$size" -gt 1000 ] && [ "$size" -lt 1000000 ] || { echo "implausible size $size"; exit 1; }
if BUILD_DIR=$BUILD bash "$SRC/scripts/kernel_code_size.sh" no_such_file.cu 2>"$BUILD/kcs.err"; then
  echo "expected a failure for an unknown source"; exit 1
fi
grep -q "no_such_file.cu: not a source" "$BUILD/kcs.err"
echo "kernel_code_size: ok"
