#!/usr/bin/env bash
# README command 2: install what is missing, build, and run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
# torch for the Python package's tests (the custom op, fake tensors: they run on
# the CPU), for the interpreter ctest runs them with; FUSEGEN_TORCH=0 skips it.
if [[ ${FUSEGEN_TORCH:-1} != 0 ]]; then
  python=$(sed -n 's/^_\?Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -n 1)
  torch_dir=$(PYTHON=${python:-python3} "$root/scripts/install-torch.sh" | tail -n 1)
  [[ -z $torch_dir ]] || export PYTHONPATH=$torch_dir${PYTHONPATH:+:$PYTHONPATH}
  export FUSEGEN_REQUIRE_TORCH=1 # the torch tests fail instead of skipping
fi
cd "$build"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "test: no NVIDIA GPU here: the GPU tests will be listed as (Skipped) with 'skipped: no GPU';"
  echo "test: scripts/gpu-check.sh runs them on a GPU machine"
fi
ctest --output-on-failure -j "${FUSEGEN_JOBS:-2}"
