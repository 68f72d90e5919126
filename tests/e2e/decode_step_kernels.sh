#!/usr/bin/env bash
# scripts/decode_step_kernels.py (gpu-check.sh's `timeline` stage) on a synthetic Nsight Compute
# CSV: it must pick the kernels between the last two sampler launches, group them by kernel and
# grid, and convert ns / us units. Args: <portllm binary (unused)> <source dir>.
set -euo pipefail
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
hdr='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
row() {  # id name grid unit value
  echo "\"$1\",\"1\",\"portllm\",\"h\",\"$2\",\"1\",\"7\",\"(256, 1, 1)\",\"$3\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"$4\",\"$5\""
}
{
  echo "==PROF== Connected to process 1"
  echo "$hdr"
  row 0 "void portllm::gpu::(anonymous namespace)::gemv_kernel<bf16, 1>(float *, int)" "(512, 1, 1)" usecond 99.0   # prefill
  row 1 "void portllm::gpu::(anonymous namespace)::sample_kernel(int *)" "(1, 1, 1)" nsecond "2,000"
  row 2 "void portllm::gpu::(anonymous namespace)::gemv_kernel<bf16, 1>(float *, int)" "(512, 1, 1)" usecond 20.0
  row 3 "void portllm::gpu::(anonymous namespace)::gemv_kernel<bf16, 1>(float *, int)" "(512, 1, 1)" usecond 30.0
  row 4 "void portllm::gpu::(anonymous namespace)::gemv_kernel<bf16, 1>(float *, int)" "(384, 1, 1)" nsecond "5,000"
  row 5 "void portllm::gpu::(anonymous namespace)::sample_kernel(int *)" "(1, 1, 1)" nsecond "3,000"
} >"$T/step.csv"
out=$(python3 "$SRC/scripts/decode_step_kernels.py" "$T/step.csv")
echo "$out"
grep -q "one decode step: 4 kernels, 58.0 us of kernel time" <<<"$out"
grep -Eq "^ +50.0 us .* 2 x +25.00 us +grid +\(512, 1, 1\) +gemv_kernel<bf16, 1>$" <<<"$out"
grep -Eq "^ +5.0 us .* 1 x +5.00 us +grid +\(384, 1, 1\) +gemv_kernel<bf16, 1>$" <<<"$out"
grep -Eq "^ +3.0 us .* 1 x +3.00 us .*sample_kernel$" <<<"$out"
# Fewer than two sampler launches: a clear error, not a table.
head -4 "$T/step.csv" >"$T/short.csv"
if python3 "$SRC/scripts/decode_step_kernels.py" "$T/short.csv" 2>"$T/err"; then
  echo "expected a failure on a CSV without two sampler launches"; exit 1
fi
grep -q "fewer than two sampler launches" "$T/err"
echo "decode_step_kernels: ok"
