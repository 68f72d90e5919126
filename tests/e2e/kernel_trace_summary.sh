#!/usr/bin/env bash
# scripts/kernel_trace_summary.py (gpu-check.sh's `trace` stage) on a synthetic CUPTI CSV: it must
# take the stream with the most kernels, cut steps after each sampler kernel, keep the steps of the
# most common kernel sequence, and charge each kernel its end minus its predecessor's end (the
# first kernel of a step also the gap after the last step), and report its start against its
# predecessor's end (negative: a programmatic launch that started early). Args: <portllm binary (unused)> <source dir>.
set -euo pipefail
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gemv=_ZN7portllm3gpu12_GLOBAL__N_111gemv_kernelILi1EEEvv
attn=_ZN7portllm3gpu12_GLOBAL__N_122attn_decode_mma_kernelILi128EEEvv
samp=_ZN7portllm3gpu44_GLOBAL__N__2a54173a_11_sampling_cu_1e1e848c13sample_kernelEv
{
  # start,end,stream,grid x,y,z,block x,name (ns). A prefill step on stream 7 first (a different
  # sequence), then three decode steps of gemv -> attention (starting 1 us before the gemv ends,
  # as a programmatic launch does) -> sampler, 2 us apart; one kernel on another stream.
  echo "0,50000,7,512,1,1,128,$gemv"
  echo "50000,52000,7,1,1,1,256,$samp"
  t=54000
  for i in 1 2 3; do
    echo "$t,$((t + 10000)),7,512,1,1,128,$gemv"
    echo "$((t + 9000)),$((t + 16000)),7,8,1,16,128,$attn"
    echo "$((t + 16000)),$((t + 17000)),7,1,1,1,256,$samp"
    t=$((t + 19000))
  done
  echo "1000,900000,9,1,1,1,32,$gemv"
} >"$T/trace.csv"
out=$(python3 "$SRC/scripts/kernel_trace_summary.py" "$T/trace.csv")
echo "$out"
# The three decode steps (the first one's predecessor is the prefill step): each 19 us, 2 us of
# it before the gemv starts.
grep -q "^3 decode steps of 3 kernels; step 19.0 us (sampler end to sampler end), of which 2.0 us before" <<<"$out"
grep -Eq "^ +12.0 +63.2% +1 +12.00 +10.00 +2.00 +512x1x1 +gemv_kernel$" <<<"$out"
grep -Eq "^ +6.0 +31.6% +1 +6.00 +7.00 +-1.00 +8x1x16 +attn_decode_mma_kernel$" <<<"$out"
grep -Eq "^ +1.0 +5.3% +1 +1.00 +1.00 +0.00 +1x1x1 +sample_kernel$" <<<"$out"
# The last N steps only.
last=$(python3 "$SRC/scripts/kernel_trace_summary.py" "$T/trace.csv" 1)
grep -q "^1 decode steps of 3 kernels" <<<"$last"
# Memory copies (kernel_trace.cpp's MREC rows) are steps' members like kernels: a 1 us input copy
# ending 0.5 us before each gemv is now the step's first member (charged the 0.5 us gap before it
# too), and the gemv's increment counts from its end.
awk -F, -v OFS=, '$8 ~ /gemv/ && $3 == 7 && $1 > 50000 {print $1 - 1500, $1 - 500, 7, 600, 0, 0, 0, "memcpy_HtoD"} {print}' \
  "$T/trace.csv" >"$T/copies.csv"
copies=$(python3 "$SRC/scripts/kernel_trace_summary.py" "$T/copies.csv")
grep -q "^3 decode steps of 4 kernels; step 19.0 us (sampler end to sampler end), of which 0.5 us before" <<<"$copies"
grep -Eq "^ +1.5 +7.9% +1 +1.50 +1.00 +0.50 +600x0x0 +memcpy_HtoD$" <<<"$copies"
grep -Eq "^ +10.5 +55.3% +1 +10.50 +10.00 +0.50 +512x1x1 +gemv_kernel$" <<<"$copies"
# No sampler kernel: a clear error, not a table.
grep -v sample "$T/trace.csv" >"$T/nosamp.csv"
if python3 "$SRC/scripts/kernel_trace_summary.py" "$T/nosamp.csv" 2>"$T/err"; then
  echo "expected a failure on a trace without sampler kernels"; exit 1
fi
grep -q "no sampler kernel" "$T/err"
echo "kernel_trace_summary: ok"
