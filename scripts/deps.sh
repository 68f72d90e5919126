#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages portllm builds and tests with, if any are missing.
# Sourced by setup.sh and test.sh; safe to run again (does nothing when all are present).
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config ccache
      nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libcpp-httplib-dev
      libpcre2-dev libutf8proc-dev libopenblas-dev libxxhash-dev
      libgtest-dev libgmock-dev libbenchmark-dev curl nodejs npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# node/npm may come from outside Debian (e.g. a preinstalled Node.js): accept those.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]}"
if ((${#missing[@]})); then
  echo "portllm: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is optional: when present, the GPU tree is compiled too.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
