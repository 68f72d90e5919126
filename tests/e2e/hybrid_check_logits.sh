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

# Through the engine: three requests (two with the same prompt) batched with 2 sequences at a
# time (the third reuses a freed state slot), chunked prefill of 3 tokens and a 5-block cache
# (requests wait / are preempted) must produce exactly the tokens each produces alone, and the
# repeated prompt must not hit the prefix cache (disabled for recurrent-state models).
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/in.jsonl" <<'JSONL'
{"prompt_ids":[192,257,367,188,415,385,205,91,350,255,484,368,275,89,148,491],"max_tokens":12,"ignore_eos":true}
{"prompt_ids":[192,257,367,188,415,385,205,91,350,255,484,368,275,89,148,491],"max_tokens":12,"ignore_eos":true}
{"prompt_ids":[7,8,9,10,11],"max_tokens":12,"ignore_eos":true}
JSONL
for name in qwen35text-tiny qwen3next-tiny qwen35moetext-tiny; do
  M="$DATA/models/$name"
  "$BIN" generate --model "$M" --input "$TMP/in.jsonl" --output "$TMP/batch.jsonl" --max-num-seqs 2 \
    --chunked-prefill-size 3 --num-kv-blocks 5 --page-size 8 > /dev/null
  : > "$TMP/seq.jsonl"
  for i in 1 2 3; do
    sed -n "${i}p" "$TMP/in.jsonl" > "$TMP/one.jsonl"
    "$BIN" generate --model "$M" --input "$TMP/one.jsonl" --output "$TMP/one_out.jsonl" > /dev/null
    cat "$TMP/one_out.jsonl" >> "$TMP/seq.jsonl"
  done
  got=$(grep -o '"token_ids":\[[^]]*\]' "$TMP/batch.jsonl")
  want=$(grep -o '"token_ids":\[[^]]*\]' "$TMP/seq.jsonl")
  [ "$(echo "$want" | grep -c ',')" = "3" ] || { echo "FAIL: $name: sequential runs gave no tokens"; exit 1; }
  [ "$got" = "$want" ] || { echo "FAIL: $name batched != sequential"; echo "$got"; echo "$want"; exit 1; }
  if grep -q '"cached_tokens":[1-9]' "$TMP/batch.jsonl"; then echo "FAIL: $name used the prefix cache"; exit 1; fi
  echo "$name engine batched = sequential: OK"
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
