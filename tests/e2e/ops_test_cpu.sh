#!/usr/bin/env bash
# `portllm ops test` on the CPU backend passes and prints its summary; an unknown op is an error.
set -uo pipefail
bin=$1
out=$("$bin" ops test -b cpu 2>&1); rc=$?
echo "$out" | tail -3
[ $rc -eq 0 ] || { echo "FAIL: ops test exited $rc"; exit 1; }
grep -qE "ops test on cpu: [0-9]+ passed, 0 failed" <<<"$out" || { echo "FAIL: no summary"; exit 1; }
if "$bin" ops test -o NO_SUCH_OP >/dev/null 2>&1; then echo "FAIL: unknown op accepted"; exit 1; fi
"$bin" ops support --format md | grep -q "| MATMUL |" || { echo "FAIL: support table"; exit 1; }
exit 0
