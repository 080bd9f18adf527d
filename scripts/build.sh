#!/usr/bin/env bash
# Configures and builds fusegen into ./build (or $FUSEGEN_BUILD_DIR): every
# target, or only those named in $FUSEGEN_BUILD_TARGETS (e.g. "fusegen").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_BUILD_DIR:-$root/build}
jobs=${FUSEGEN_JOBS:-2}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${FUSEGEN_BUILD_TYPE:-RelWithDebInfo} -DFUSEGEN_WERROR=ON "$@"
targets=()
for target in ${FUSEGEN_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
