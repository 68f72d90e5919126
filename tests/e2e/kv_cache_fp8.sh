#!/usr/bin/env bash
# --kv-dtype fp8 on the CPU backend: the dense fixtures' logits stay within 0.15 of transformers'
# (an e4m3 cache, 3 mantissa bits: 0.05-0.08 measured, against 0.003-0.007 with a bf16 cache) with
# every confident greedy token agreeing; a bar the bf16 cache meets and fp8 does not shows the
# cache really is fp8; the embedded model's story is unchanged; a bad name gets one error line.
# Args: <portllm binary> <source dir>.
set -uo pipefail
bin=$1; src=$2
source "$src/tests/e2e/check_logits_common.bash"
fail=0
logits() {  # fixture kv tol -> the last line, and the exit status in rc
  local m=$src/tests/data/models/$1
  out=$("$bin" check-logits --model "$m" --reference "$m/reference.safetensors" --kv-dtype "$2" --tol "$3" 2>&1)
  rc=$?
  last=$(tail -1 <<<"$out")
}
for m in llama3-tiny qwen2-tiny qwen3-tiny; do
  logits $m fp8 0.15
  if ! logits_pass $rc "$last"; then
    echo "FAIL fp8 cache $m: rc=$rc: $out"; fail=1
  else
    echo "ok   fp8 cache $m: $last"
  fi
done
logits qwen3-tiny bf16 0.02
[ $rc -eq 0 ] || { echo "FAIL bf16 cache within 0.02: $last"; fail=1; }
logits qwen3-tiny fp8 0.02
if [ $rc -eq 0 ]; then echo "FAIL fp8 cache within 0.02 (was the cache fp8?): $last"; fail=1; else echo "ok   fp8 cache beyond 0.02: $last"; fi

story=$("$bin" generate --max-tokens 40 --kv-dtype fp8 2>&1)
case "$story" in
  "Once upon a time, there was a little girl named Lily."*) echo "ok   generate with an fp8 cache: ${story:0:60}...";;
  *) echo "FAIL generate with an fp8 cache: $story"; fail=1;;
esac
out=$("$bin" generate --max-tokens 4 --kv-dtype fp4 2>&1); rc=$?
if [ $rc -eq 0 ] || ! grep -q -- "--kv-dtype: 'fp4' is not one of" <<<"$out"; then
  echo "FAIL --kv-dtype fp4: rc=$rc: $out"; fail=1
else
  echo "ok   --kv-dtype fp4: $out"
fi
exit $fail
