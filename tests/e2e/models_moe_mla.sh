#!/usr/bin/env bash
# MoE / MLA / FP8 models end to end through the portllm binary:
#  - check-logits against transformers' reference (whole prefill and chunks of 3) for
#    qwen3moe-tiny, deepseekv2-tiny, deepseekv3-tiny (1e-3) and deepseekv3fp8-tiny (1e-2);
#  - generate from --prompt-ids on each fixture (they ship no tokenizer);
#  - real configs (DeepSeek-V2-Lite, Qwen3-30B-A3B, Qwen3-30B-A3B-FP8) with dummy weights at
#    reduced depth produce tokens. DeepSeek-V3 (a 129k x 7168 embedding; its first MoE layer,
#    256 fp8 experts, alone is 11 GB, so only its 3 dense layers) runs only with
#    PORTLLM_TEST_BIG=1.
# Usage: bash models_moe_mla.sh <portllm-binary> <source-dir>
set -euo pipefail
BIN="$1"
SRC="$2"
DATA="$SRC/tests/data"

check() {
  local name="$1" tol="$2"
  shift 2
  local out
  out=$("$BIN" check-logits --model "$DATA/models/$name" -r "$DATA/models/$name/reference.safetensors" --tol "$tol" "$@")
  echo "$name $*: $(echo "$out" | tail -1)"
}

for spec in qwen3moe-tiny:1e-3 deepseekv2-tiny:1e-3 deepseekv3-tiny:1e-3 deepseekv3fp8-tiny:1e-2; do
  name="${spec%%:*}"
  tol="${spec##*:}"
  check "$name" "$tol"
  check "$name" "$tol" --chunk-size 3
  out=$("$BIN" generate --model "$DATA/models/$name" --prompt-ids 1,2,3,4 --max-tokens 4 --ignore-eos)
  echo "$name generate: $out"
  [ -n "$out" ] || { echo "FAIL: $name generated nothing"; exit 1; }
done

# DeepSeek-V2-Lite with DeepSeek-V3's block-FP8 quantization_config (the GSM8K-shaped FP8 serving
# run of gpu-check): its dense layer 0 has 10944 = 85.5 x 128 MLP rows, so gate and up cannot
# share one scale grid and run as separate GEMMs into one output (Linear::parts).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/DeepSeek-V2-Lite-FP8"
sed 's/"model_type": "deepseek_v2",/"model_type": "deepseek_v2", "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]},/' \
  "$DATA/configs/DeepSeek-V2-Lite-Chat/config.json" >"$tmp/DeepSeek-V2-Lite-FP8/config.json"
grep -q quantization_config "$tmp/DeepSeek-V2-Lite-FP8/config.json" || { echo "FAIL: could not derive the FP8 config"; exit 1; }

big=(configs/DeepSeek-V2-Lite-Chat:2 configs/Qwen3-30B-A3B:1 configs/Qwen3-30B-A3B-FP8:1 "$tmp/DeepSeek-V2-Lite-FP8:2")
if [ "${PORTLLM_TEST_BIG:-0}" = "1" ]; then big+=(configs/DeepSeek-V3:3); fi
for spec in "${big[@]}"; do
  name="${spec%%:*}"
  layers="${spec##*:}"
  [[ "$name" = /* ]] || name="$DATA/$name"
  out=$("$BIN" generate --model "$name" --load-format dummy --num-layers "$layers" \
        --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 3 --ignore-eos)
  echo "$name dummy x$layers layers: $out"
  echo "$out" | grep -Eq '[0-9]' || { echo "FAIL: $name produced no tokens"; exit 1; }
  if echo "$out" | grep -qi 'nan\|error'; then echo "FAIL: $name: $out"; exit 1; fi
done
echo "models_moe_mla: OK"
