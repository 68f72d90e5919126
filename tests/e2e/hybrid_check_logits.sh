#!/usr/bin/env bash
# Qwen3-Next / Qwen3.5 / Qwen3.5-MoE hybrids end to end through the portllm binary:
#  - check-logits against transformers' reference logits (1e-3) for qwen35text-tiny,
#    qwen3next-tiny and qwen35moetext-tiny: whole prefill, chunks of 3 (chunked prefill with
#    carried conv / delta-rule state) and chunks of 1 (the decode ops);
#  - with PORTLLM_TEST_BIG=1: the published Qwen3.5-27B, Qwen3.5-35B-A3B and
#    Qwen3-Next-80B-A3B configs with dummy weights at 4 layers (3 linear + 1 full attention)
#    generate tokens (several GB of dummy weights each: vocab 248320 x hidden, 256-512 experts).
# Usage: bash hybrid_check_logits.sh <portllm-binary> <source-dir>
set -euo pipefail
BIN="$1"
SRC="$2"
DATA="$SRC/tests/data"

for name in qwen35text-tiny qwen3next-tiny qwen35moetext-tiny; do
  for chunk in 0 3 1; do
    out=$("$BIN" check-logits --model "$DATA/models/$name" -r "$DATA/models/$name/reference.safetensors" \
          --tol 1e-3 --chunk-size "$chunk")
    echo "$name chunk=$chunk: $(echo "$out" | tail -1)"
  done
done

if [ "${PORTLLM_TEST_BIG:-0}" = "1" ]; then
  for name in Qwen3.5-35B-A3B Qwen3-Next-80B-A3B-Instruct Qwen3.5-27B; do
    out=$("$BIN" generate --model "$DATA/configs/$name" --load-format dummy --num-layers 4 \
          --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 3 --ignore-eos 2>&1)
    echo "$name dummy x4 layers: $out"
    if echo "$out" | grep -qi 'nan\|error'; then echo "FAIL: $name: $out"; exit 1; fi
  done
fi
echo "hybrid_check_logits: OK"
