#!/usr/bin/env bash
# scripts/kernel_trace_totals.py (gpu-check.sh's `trace` stage with TRACE_TPUT=1) on a synthetic
# CUPTI CSV: all streams merged, each kernel charged the part of its interval no earlier kernel
# covers, steps cut after each sampler kernel and split into prefill steps (a prefill attention
# kernel in them) and decode steps, library GEMMs grouped, idle time = span - busy. Then
# scripts/kernel_trace_gaps.py on the same CSV: where that idle time sits.
# Args: <portllm binary (unused)> <source dir>.
set -euo pipefail
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gemv=_ZN7portllm3gpu12_GLOBAL__N_111gemv_kernelILi1EEEvv
pre=_ZN7portllm3gpu12_GLOBAL__N_123attn_prefill_mma_kernelILi128EEEvv
attn=_ZN7portllm3gpu12_GLOBAL__N_122attn_decode_mma_kernelILi128EEEvv
samp=_ZN7portllm3gpu44_GLOBAL__N__2a54173a_11_sampling_cu_1e1e848c13sample_kernelEv
blas=sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1
flush=_ZN7portllm3gpu12_GLOBAL__N_115l2_flush_kernelEv
embed=_ZN7portllm3gpu12_GLOBAL__N_112embed_kernelEv
{
  # start,end,stream,grid x,y,z,block x,name (ns). Start-up first (a tuning kernel, a warm-up
  # embedding and sampler); then, 10 us later, times below relative to t0: a prefill step (its
  # embedding inside its GEMM's interval: 1 of its 40 us): a cuBLAS GEMM 0-40 us, the
  # prefill attention 40-60, the sampler 60-62. Then two decode steps 70-90 and 100-120: a gemv of
  # 10 us, an attention starting 2 us before the gemv ends (7 us long: 5 us its own), a 1 us
  # sampler, each after a 1 us input copy; a kernel on another stream inside the first gemv adds
  # nothing.
  echo "0,4000,7,132,1,1,256,$flush"
  echo "4000,5000,7,1,1,1,256,$embed"
  echo "5000,6000,7,1,1,1,256,$samp"
  t0=16000
  echo "$t0,$((t0 + 1000)),7,8,1,1,256,$embed"
  echo "$t0,$((t0 + 40000)),7,64,1,1,256,$blas"
  echo "$((t0 + 40000)),$((t0 + 60000)),7,8,1,1,128,$pre"
  echo "$((t0 + 60000)),$((t0 + 62000)),7,1,1,1,256,$samp"
  for t in $((t0 + 70000)) $((t0 + 100000)); do
    echo "$((t - 6000)),$((t - 5000)),7,600,0,0,0,memcpy_HtoD"  # the step's inputs (kernel_trace.cpp's MREC rows)
    echo "$t,$((t + 10000)),7,512,1,1,128,$gemv"
    echo "$((t + 8000)),$((t + 15000)),7,8,1,16,128,$attn"
    echo "$((t + 19000)),$((t + 20000)),7,1,1,1,256,$samp"
  done
  echo "$((t0 + 71000)),$((t0 + 72000)),9,1,1,1,32,$gemv"
} >"$T/trace.csv"
out=$(python3 "$SRC/scripts/kernel_trace_totals.py" "$T/trace.csv")
echo "$out"
# Start-up apart; busy: 62 us of the prefill step + 2 x (1 + 15 + 1) us of decode = 96 us of a
# 120 us span; the 24 us idle all before decode steps' kernels and copies (2 + 5 + 4, 4 + 5 + 4).
grep -q "^start-up: 3 kernels over 0.006 ms" <<<"$out"
grep -q "^span 0.120 ms, device busy 0.096 ms (80.0%), idle 0.024 ms; 13 kernels, 3 steps (1 with prefill)" <<<"$out"
prefill=$(sed -n '/^prefill steps/,/^$/p' <<<"$out")
decode=$(sed -n '/^decode steps/,$p' <<<"$out")
grep -q "^prefill steps: busy 0.062 ms, idle before their kernels 0.000 ms" <<<"$prefill"
grep -q "^decode steps: busy 0.034 ms, idle before their kernels 0.024 ms" <<<"$decode"
grep -Eq "^vendor BLAS GEMM +1 +0.039 +62.9%" <<<"$prefill"
grep -Eq "^embed_kernel +1 +0.001 +1.6%" <<<"$prefill"
grep -Eq "^attn_prefill_mma_kernel +1 +0.020 +32.3%" <<<"$prefill"
# Decode: gemv 2 x 10 us of 34 (58.8%; the other stream's one adds nothing), attention 2 x 5 us
# (29.4%), sampler and input copy 2 x 1 each (5.9%); the attention's duration 7 us per launch.
grep -Eq "^gemv_kernel +3 +0.020 +58.8% .* +7.0$" <<<"$decode"
grep -Eq "^attn_decode_mma_kernel +2 +0.010 +29.4% .* +7.0$" <<<"$decode"
grep -Eq "^sample_kernel +2 +0.002 +5.9%" <<<"$decode"
grep -Eq "^memcpy_HtoD +2 +0.002 +5.9%" <<<"$decode"
gaps=$(python3 "$SRC/scripts/kernel_trace_gaps.py" "$T/trace.csv")
echo "$gaps"
# The 24 us: after each sampler before the next step's copy 2 + 4 us (the step boundary), and
# inside the decode steps copy -> gemv 5 + 5 and attention -> sampler 4 + 4.
grep -q "^span 0.120 ms, idle 0.024 ms (20.00%)" <<<"$gaps"
grep -Eq "^  inside a step +4 gaps +0.018 ms" <<<"$gaps"
grep -Eq "^  step boundary \(after the sampler\) +2 gaps +0.006 ms" <<<"$gaps"
grep -Eq "^  memcpy_HtoD +-> gemv_kernel +2 +0.010 ms" <<<"$gaps"
grep -Eq "^  attn_decode_mma_kernel +-> sample_kernel +2 +0.008 ms" <<<"$gaps"
grep -Eq "^  sample_kernel +-> memcpy_HtoD +2 +0.006 ms" <<<"$gaps"
grep -q "of 0 of 100 us or more" <<<"$gaps"
# A 250 us gap before the third step's embedding is listed on its own.
{ cat "$T/trace.csv"; echo "$((t0 + 370000)),$((t0 + 371000)),7,8,1,1,256,$embed"; } >"$T/trace2.csv"
gaps=$(python3 "$SRC/scripts/kernel_trace_gaps.py" "$T/trace2.csv")
grep -Eq "^ +250.0 us before step +3's embed_kernel +after sample_kernel" <<<"$gaps"
echo "kernel_trace_totals, kernel_trace_gaps: ok"
