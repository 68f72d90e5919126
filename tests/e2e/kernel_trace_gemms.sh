#!/usr/bin/env bash
# scripts/kernel_trace_gemms.py (gpu-check.sh's `trace` stage with TRACE_TPUT) on a synthetic CUPTI
# CSV of a 2-layer dense model: a step's tokens from its embedding kernel's grid, its projections
# in launch order (4 per layer and the LM head; a split-K reduction charged to the GEMM before
# it), each against max(weight bytes / bandwidth, FLOPs / rate); decode steps bucketed by batch,
# prefill steps by tokens; a step with the wrong projection count skipped.
# Args: <portllm binary (unused)> <source dir>.
set -euo pipefail
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# hidden 1024, intermediate 2048, 8 query heads and 2 KV heads of 128, vocab 4096: qkv 1536 x 1024
# (3.146 MB of bf16 weights), o_proj 1024 x 1024 (2.097 MB), gate_up 4096 x 1024 (8.389 MB),
# down 1024 x 2048 (4.194 MB), LM head 4096 x 1024 (8.389 MB).
cat >"$T/config.json" <<'EOF'
{"hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 2, "num_attention_heads": 8,
 "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 4096}
EOF
embed=_ZN7portllm3gpu12_GLOBAL__N_112embed_kernelEv
gemv=_ZN7portllm3gpu12_GLOBAL__N_111gemv_kernelILi1EEEvv
blas=sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1
reduce=_ZN8cublasLt19splitKreduce_kernelILi32ELi16EEEvv
attn=_ZN7portllm3gpu12_GLOBAL__N_122attn_decode_mma_kernelILi128EEEvv
pre=_ZN7portllm3gpu12_GLOBAL__N_123attn_prefill_mma_kernelILi128EEEvv
norm=_ZN7portllm3gpu12_GLOBAL__N_120rms_norm_rows_kernelEv
samp=_ZN7portllm3gpu44_GLOBAL__N__2a54173a_11_sampling_cu_1e1e848c13sample_kernelEv
t=0
k() {  # name, grid x, duration in ns
  echo "$t,$((t + $3)),7,$2,1,1,128,$1"
  t=$((t + $3 + 100))
}
# At 1000 GB/s and 1000 TFLOP/s the weight streams take 3146 / 2097 / 8389 / 4194 / 8389 ns.
step() {  # attention kernel, tokens, then one GEMM kernel name for the projections
  local a=$1 m=$2 g=$3
  k $embed "$m" 1000
  for _ in 1 2; do
    k $norm "$m" 500
    k "$g" 64 6292           # qkv at 0.50
    k "$a" 8 4000
    k "$g" 32 2000; k $reduce 32 1495   # o_proj and its reduction: 3495 ns, 0.60
    k $norm "$m" 500
    k "$g" 64 8389           # gate_up at 1.00
    k "$g" 32 5243           # down at 0.80
  done
  k "$g" 64 8389             # LM head at 1.00 (decode: its rows are the step's tokens)
  k $samp 1 1000
}
{
  step "$pre" 4096 "$blas"   # prefill: 4096 tokens x 2 x 1536 x 1024 = 12.9 GFLOP for qkv = 12.9 us
  step "$attn" 5 "$gemv"     # decode, 5 rows: bucket 8
  step "$attn" 7 "$gemv"
  k $embed 3 1000; k "$gemv" 64 3000; k $samp 1 1000   # a step with 1 projection: skipped
} >"$T/trace.csv"
out=$(python3 "$SRC/scripts/kernel_trace_gemms.py" "$T/trace.csv" "$T/config.json" 1000 1000)
echo "$out"
grep -q "^4 steps, 1 skipped" <<<"$out"
# Decode, 2 steps at bucket 8: us per launch / ratio; attention 2 x 4 us per step.
grep -Eq "^decode +8 +2 +6\.3 / +0\.50 +3\.5 / +0\.60 +8\.4 / +1\.00 +5\.2 / +0\.80 +8\.4 / +1\.00 +8\.0$" <<<"$out"
# Prefill, 4096 tokens: every projection is FLOP-bound at 4096 rows (qkv 12.9 us against 6.3: 2.05);
# the LM head's rows are unknown there and it is compared with its weight stream.
grep -Eq "^prefill +4096 +1 +6\.3 / +2\.05 " <<<"$out"
grep -Eq "^  decode: qkv 0\.0 \(0\.50\), o_proj 0\.0 \(0\.60\), gate_up 0\.0 \(1\.00\), down 0\.0 \(0\.80\)" <<<"$out"
