#!/usr/bin/env bash
# scripts/heads_n_emulation.cpp: the heads-as-N decode attention's fragment layouts (MMA,
# ldmatrix, movmatrix, the e4m3 chunk swizzle and byte permutes) computing attention on the host,
# for e4m3 and 16-bit tiles, 1-8 heads and partial tiles. Built with the host compiler (no GPU).
# Args: <portllm binary (unused)> <source dir>.
set -euo pipefail
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"${CXX:-c++}" -O2 -std=c++20 -Wall -Wextra -Werror "$SRC/scripts/heads_n_emulation.cpp" -o "$T/heads_n"
out=$("$T/heads_n")
echo "$out"
grep -q "^heads-as-N layouts: ok$" <<<"$out"
[ "$(grep -c "worst error" <<<"$out")" -eq 6 ]
