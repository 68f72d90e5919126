#!/usr/bin/env bash
# Machine-code size of GPU kernels: compiles one source of src/backends/gpu for sm_90 to a cubin
# (the compile command of build-gpu/compile_commands.json, one architecture) and prints the size of
# each kernel's .text section, largest first, filtered by an extended regex on the demangled name.
# Why: a short decode kernel runs its code once per launch, and the seventeenth session's stamps
# suggest instruction fetch is part of their latency (docs/backends/gpu.md); this is the number to
# watch when shrinking one, with no GPU and no disassembler needed (readelf only).
# BUILD_DIR (default build-gpu) names the build whose compile_commands.json is used.
# Usage: scripts/kernel_code_size.sh <file.cu> [regex]   e.g.
#   scripts/kernel_code_size.sh attention_decode_mma.cu 'attn_decode_mma_kernel<__nv_bfloat16, 128, false'
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-gpu}
[ -f "$BUILD_DIR/compile_commands.json" ] || { echo "no $BUILD_DIR/compile_commands.json: configure that build first (README)" >&2; exit 1; }
CUBIN=$(mktemp --suffix=.cubin)
trap 'rm -f "$CUBIN"' EXIT
python3 - "$1" "$CUBIN" <<'PY'
import json, os, shlex, subprocess, sys
name, cubin = sys.argv[1], sys.argv[2]
db = os.path.join(os.environ["BUILD_DIR"], "compile_commands.json")
entries = [e for e in json.load(open(db)) if e["file"].endswith("/src/backends/gpu/" + name)]
if not entries:
    sys.exit(f"{name}: not a source of src/backends/gpu in {db}")
e = entries[0]
args, out, skip = shlex.split(e["command"]), [], False
for a in args:
    if skip:
        skip = False
        continue
    if a in ("-o", "-gencode", "--generate-code"):
        skip = True
        continue
    if a == "-c" or a.startswith(("--generate-code=", "-gencode=", "-arch")):
        continue
    out.append(a)
r = subprocess.run(out + ["-arch=sm_90", "-cubin", "-o", cubin], cwd=e["directory"], capture_output=True, text=True)
if r.returncode:
    sys.exit(r.stderr[-3000:])
PY
readelf -S -W "$CUBIN" 2>/dev/null | sed -nE 's/.*\] \.text\.(\S+)\s+PROGBITS\s+\S+\s+\S+\s+(\S+).*/\2 \1/p' |
  while read -r size mangled; do
    printf '%8d  %s\n' "$((16#$size))" "$(c++filt "$mangled" | sed 's/portllm::gpu:://g; s/(anonymous namespace):://g')"
  done | sort -rn | grep -E -- "${2:-.}" || true
