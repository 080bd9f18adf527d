#!/usr/bin/env bash
# README command 2: install what is missing, build, and run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "test: no NVIDIA GPU here: the GPU tests will be listed as (Skipped) with 'skipped: no GPU';"
  echo "test: scripts/gpu-check.sh runs them on a GPU machine"
fi
ctest --output-on-failure -j "${FUSEGEN_JOBS:-2}"
