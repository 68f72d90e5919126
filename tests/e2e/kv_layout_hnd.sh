#!/usr/bin/env bash
# PORTLLM_KV_LAYOUT=hnd (runtime/kv_cache.cpp: each KV page stored head by head, seen through the
# same [block, token, head, dim] view with permuted strides) end to end on the CPU backend: the
# dense fixtures' logits match transformers' as with the default layout (whole prompt, and in
# chunks of 7 so later chunks read earlier pages), the embedded model's story is the default
# layout's, and a bad value gets one error line that names the variable (which also shows the
# variable is read). The kernels' head-major cases are in the conformance suite (`-p hnd`).
# Args: <portllm binary> <source dir>.
set -uo pipefail
bin=$1; src=$2
source "$src/tests/e2e/check_logits_common.bash"
fail=0
for m in llama3-tiny qwen2-tiny qwen3-tiny; do
  d=$src/tests/data/models/$m
  for chunk in 0 7; do
    args=(check-logits --model "$d" --reference "$d/reference.safetensors" --tol 1e-4)
    [ "$chunk" -gt 0 ] && args+=(--chunk-size "$chunk")
    out=$(PORTLLM_KV_LAYOUT=hnd "$bin" "${args[@]}" 2>&1); rc=$?
    last=$(tail -1 <<<"$out")
    if ! logits_pass $rc "$last"; then
      echo "FAIL hnd $m chunk=$chunk: rc=$rc: $out"; fail=1
    else
      echo "ok   hnd $m chunk=$chunk: $last"
    fi
  done
done

nhd=$("$bin" generate --max-tokens 60 2>&1)
hnd=$(PORTLLM_KV_LAYOUT=hnd "$bin" generate --max-tokens 60 2>&1)
if [ -n "$nhd" ] && [ "$nhd" = "$hnd" ]; then echo "ok   generate, hnd = nhd: ${hnd:0:60}..."
else echo "FAIL generate: nhd '$nhd' against hnd '$hnd'"; fail=1; fi

out=$(PORTLLM_KV_LAYOUT=foo "$bin" generate --max-tokens 4 2>&1); rc=$?
if [ $rc -eq 0 ] || [ "$(wc -l <<<"$out")" -ne 1 ] || ! grep -q "PORTLLM_KV_LAYOUT=foo: expected nhd or hnd" <<<"$out"; then
  echo "FAIL PORTLLM_KV_LAYOUT=foo: rc=$rc: $out"; fail=1
else
  echo "ok   PORTLLM_KV_LAYOUT=foo: $out"
fi
exit $fail
