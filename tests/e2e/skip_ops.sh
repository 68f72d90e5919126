#!/usr/bin/env bash
# PORTLLM_SKIP_OPS: the op layer launches nothing for the named ops (a timing aid), says once that
# outputs are wrong, and refuses unknown names and ops that write indices. PORTLLM_PROFILE_OPS=1's
# per-kernel table shows which ops ran. Args: <portllm binary> <source dir (unused)>.
set -uo pipefail
PL=$1
run() { PORTLLM_PROFILE_OPS=1 "$PL" bench latency --batch-size 1 --input-len 8 --output-len 4 --num-iters 1 \
  --num-iters-warmup 0 2>&1; }
base=$(run) || { echo "$base"; echo "the plain run failed"; exit 1; }
grep -q "| ATTN_DECODE" <<<"$base" || { echo "$base"; echo "expected ATTN_DECODE in the plain run"; exit 1; }
if grep -q "PORTLLM_SKIP_OPS" <<<"$base"; then echo "$base"; echo "warning without the variable"; exit 1; fi
skip=$(PORTLLM_SKIP_OPS=attn_decode,ADD run) || { echo "$skip"; echo "the skipping run failed"; exit 1; }
if grep -q "| ATTN_DECODE\|| ADD " <<<"$skip"; then echo "$skip"; echo "a skipped op ran"; exit 1; fi
grep -q "| RMS_NORM\|| ADD_RMS_NORM" <<<"$skip" || { echo "$skip"; echo "the other ops should still run"; exit 1; }
grep -q "warning: PORTLLM_SKIP_OPS=attn_decode,ADD: .*outputs are wrong" <<<"$skip" \
  || { echo "$skip"; echo "expected the warning"; exit 1; }
for bad in NO_SUCH_OP:"not an op name" MOE_ROUTE_SOFTMAX:"cannot be skipped"; do
  out=$(PORTLLM_SKIP_OPS=${bad%%:*} run) && { echo "$out"; echo "PORTLLM_SKIP_OPS=${bad%%:*} was accepted"; exit 1; }
  grep -q "PORTLLM_SKIP_OPS: .*${bad#*:}" <<<"$out" || { echo "$out"; echo "expected '${bad#*:}'"; exit 1; }
done
echo "skip_ops: ok"
