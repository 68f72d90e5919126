#!/usr/bin/env bash
# check-logits on the dense fixtures and the embedded stories260K (CPU, tolerance 1e-3), the
# main job's output, and one clear error line + non-zero exit for bad input.
set -uo pipefail
bin=$1; src=$2
source "$src/tests/e2e/check_logits_common.bash"
fail=0
check() {  # name dir reference
  out=$("$bin" check-logits --model "$2" --reference "$3" --tol 1e-3 2>&1)
  rc=$?
  last=$(printf '%s\n' "$out" | tail -1)
  if ! logits_pass $rc "$last"; then
    echo "FAIL check-logits $1: rc=$rc: $out"; fail=1
  else
    echo "ok   check-logits $1: $last"
  fi
}
for m in llama3-tiny qwen2-tiny qwen3-tiny; do
  check $m "$src/tests/data/models/$m" "$src/tests/data/models/$m/reference.safetensors"
done
check stories260K "$src/models/stories260K" "$src/models/stories260K/reference.safetensors"
# Chunked feeding must give the same logits (the cache carries the prefix).
out=$("$bin" check-logits --model "$src/tests/data/models/qwen3-tiny" --reference "$src/tests/data/models/qwen3-tiny/reference.safetensors" --chunk-size 3 2>&1) \
  || { echo "FAIL chunked check-logits: $out"; fail=1; }

# A too-strict tolerance must fail (the check can fail).
if "$bin" check-logits --model "$src/models/stories260K" --reference "$src/models/stories260K/reference.safetensors" --tol 1e-9 >/dev/null 2>&1; then
  echo "FAIL check-logits accepted --tol 1e-9"; fail=1
fi

# The main job: the embedded model tells its story.
story=$("$bin" generate --max-tokens 40 2>&1)
case "$story" in
  "Once upon a time, there was a little girl named Lily."*) echo "ok   generate: ${story:0:60}...";;
  *) echo "FAIL generate: $story"; fail=1;;
esac

# Bad input: one error line naming the problem, non-zero exit, no crash.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
expect_error() {  # description pattern command...
  local desc=$1 pat=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL $desc: rc=$rc: $out"; fail=1
  else
    echo "ok   $desc: $(tail -1 <<<"$out")"
  fi
}
expect_error "missing config" "config.json: cannot open" "$bin" check-logits --model "$tmp" --reference "$src/models/stories260K/reference.safetensors"
echo '{"architectures":["GPT2LMHeadModel"],"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":1,"vocab_size":8}' > "$tmp/config.json"
expect_error "unsupported architecture" "unsupported architecture 'GPT2LMHeadModel'" "$bin" generate --model "$tmp" --prompt-ids 1
cp "$src/models/stories260K/config.json" "$tmp/config.json"
head -c 1000 "$src/models/stories260K/model.safetensors" > "$tmp/model.safetensors"
expect_error "truncated safetensors" "model.safetensors" "$bin" generate --model "$tmp" --prompt-ids 1
expect_error "unknown device" "unknown backend" "$bin" generate --device tpu --prompt-ids 1
expect_error "out-of-vocab prompt" "outside the vocabulary" "$bin" generate --prompt-ids 1,99999
exit $fail
