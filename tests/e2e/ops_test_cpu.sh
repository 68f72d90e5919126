#!/usr/bin/env bash
# `portllm ops test` on the CPU backend passes and prints its summary; an unknown op is an error;
# `ops perf --cold` (caches evicted before each call: a no-op on the CPU) times a case, and times a
# perf case whose tensors are seeded on demand (OpCase::build) once its pattern selects it.
set -uo pipefail
bin=$1
out=$("$bin" ops test -b cpu 2>&1); rc=$?
echo "$out" | tail -3
[ $rc -eq 0 ] || { echo "FAIL: ops test exited $rc"; exit 1; }
grep -qE "ops test on cpu: [0-9]+ passed, 0 failed" <<<"$out" || { echo "FAIL: no summary"; exit 1; }
if "$bin" ops test -o NO_SUCH_OP >/dev/null 2>&1; then echo "FAIL: unknown op accepted"; exit 1; fi
# ops perf refuses what selects nothing, and a malformed -p names the option.
for args in "-o NO_SUCH_OP" "-o RMS_NORM -p no-such-kernel" "-p ("; do
  err=$("$bin" ops perf -b cpu $args 2>&1) && { echo "FAIL: ops perf $args accepted"; exit 1; }
  grep -Eq "^error: (ops perf: unknown op|ops perf: no kernel matched|-p/--pattern)" <<<"$err" ||
    { echo "$err"; echo "FAIL: ops perf $args: no clear error"; exit 1; }
done
"$bin" ops support --format md | grep -q "| MATMUL |" || { echo "FAIL: support table"; exit 1; }
perf=$("$bin" ops perf -b cpu -o RMS_NORM --dtypes f32 --cold -p "^cpu.rms_norm k norm T=1 " 2>&1) ||
  { echo "$perf"; echo "FAIL: ops perf --cold"; exit 1; }
grep -Eq "^RMS_NORM +cpu.rms_norm +k norm T=1 .* [0-9]+\.[0-9] +[0-9.]+ +-$" <<<"$perf" ||
  { echo "$perf"; echo "FAIL: no timed row from ops perf --cold"; exit 1; }
perf=$("$bin" ops perf -b cpu -o ATTN_DECODE --dtypes bf16 -p "q/ctx=1/192 .*cache=bf16" 2>&1) ||
  { echo "$perf"; echo "FAIL: ops perf on a deferred case"; exit 1; }
grep -Eq "^ATTN_DECODE +[a-z.0-9_]+ +q/ctx=1/192 Hq=32 Hkv=4 .*cache=bf16 .* [0-9]+\.[0-9] " <<<"$perf" ||
  { echo "$perf"; echo "FAIL: no timed row for the deferred ATTN_DECODE case"; exit 1; }
exit 0
