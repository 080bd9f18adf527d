#!/usr/bin/env bash
# Installs what fusegen needs to build and test, from the distribution's
# packages (Debian/Ubuntu). Does nothing when everything is already there.
set -euo pipefail

packages=(
  cmake ninja-build g++ make python3
  # The Python package's C call path (python/fusegen/_fastcall.c), and the
  # fresh virtual environments scripts/test-python-package.sh installs into.
  python3-dev python3-venv
  libgtest-dev googletest
  # The command line's parser (cli/CommandLine.cpp), header-only.
  libcli11-dev
  # Build-time only: the Clang LibTooling template tool.
  clang-14 libclang-14-dev libclang-cpp14-dev llvm-14-dev
  # scripts/test-sanitizers.sh: clang's ASan/UBSan/libFuzzer runtimes. Debian
  # 12 ships them apart from clang-14, which only recommends them (and
  # recommendations are not installed below).
  libclang-rt-14-dev
  # The remote kernel cache (runtime/src/RemoteCache.*): hiredis to speak to
  # Redis, libcrypto for the entries' HMAC-SHA256, and redis-server for its
  # tests (started on a free localhost port by the tests themselves).
  libhiredis-dev libssl-dev redis-server
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# NVRTC and nvcc come with the CUDA toolkit (not a Debian package at the
# version we need); code generation tests use them when present.
if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: note: no CUDA toolkit found (nvcc, NVRTC); CUDA compile tests will be skipped"
fi
