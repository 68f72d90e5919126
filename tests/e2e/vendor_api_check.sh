#!/usr/bin/env bash
# Fails if a vendor API call (CUDA runtime/driver, cuBLAS(Lt), NCCL, MUSA, muBLAS, MCCL) appears in
# src/ outside the vendor layer src/backends/gpu/vendor/ (ARCHITECTURE.md rule 1): kernels and the
# rest of the engine use only the neutral gpu*/gpublas*/gpuccl* names, so one tree builds for both
# vendors. Usage: bash vendor_api_check.sh <portllm-binary> <source-dir> (the binary is unused).
# Optional extra roots to scan (e.g. a staging copy of the GPU tree): VENDOR_CHECK_EXTRA_ROOTS.
set -u
SRC=${2:?usage: vendor_api_check.sh <portllm-binary> <source-dir>}
PATTERN='\b(cuda[A-Z]\w*|cublas\w*|cublasLt\w*|nccl[A-Z]\w*|cu(Mem|Ctx|Device|Stream|Launch)\w*|musa[A-Z]\w*|mublas\w*|mccl[A-Z]\w*)\s*\('
status=0
for root in "$SRC/src" ${VENDOR_CHECK_EXTRA_ROOTS:-}; do
  [ -d "$root" ] || { echo "vendor_api_check: no such directory: $root"; exit 2; }
  hits=$(grep -rnP --include='*.cpp' --include='*.cc' --include='*.h' --include='*.hpp' --include='*.cu' \
           --include='*.cuh' "$PATTERN" "$root" | grep -v "/backends/gpu/vendor/" || true)
  if [ -n "$hits" ]; then
    echo "vendor API calls outside src/backends/gpu/vendor/ (use the neutral gpu* names of vendor.h):"
    echo "$hits"
    status=1
  fi
done
# The check must be able to see a violation: run the same pattern on a known-bad line.
# (The bad line is assembled at run time so this file itself stays clean for other scans.)
for bad in "cuda""Malloc(&p, n);" "mublas""GemmEx (h);" "cu""MemAlloc(&p, n);" "mccl""AllReduce(x);"; do
  printf '%s\n' "$bad" | grep -qP "$PATTERN" || { echo "vendor_api_check: the pattern misses: $bad"; status=1; }
done
[ $status -eq 0 ] && echo "vendor_api_check: OK (no vendor API calls outside the vendor layer)"
exit $status
