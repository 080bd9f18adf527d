#!/usr/bin/env bash
# The Python package as a user installs it, each in a fresh virtual
# environment (pip fetches scikit-build-core from PyPI), each with Clang's
# development files out of reach (FUSEGEN_LLVM_ROOT=/nonexistent), as on a
# user's machine: the committed template text (generated/) is used, which
# the build log must say (scripts/test.sh builds the tool's path):
#   1. pip install ./python  (from this checkout)
#   2. scripts/python-sdist.sh, then pip wheel of that sdist, and its wheel
#      installed
# and after each: `fusegen --help`, `fusegen generate SPEC -o k.cu`, and the
# package's version against the library's. Each install compiles the C++
# project (about 5 minutes on 2 cores); pip -v shows the build as it goes.
# Usage: scripts/test-python-package.sh BUILD_DIR  (a configured build with
# the template tool, for the sdist's check of the committed template text);
# FUSEGEN_PYTHON_TESTS="checkout sdist" picks the parts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: test-python-package.sh BUILD_DIR}" && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
spec=$root/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg
no_clang=(-C cmake.define.FUSEGEN_LLVM_ROOT=/nonexistent)
committed="using the committed .*generated/fusegen/TemplateText.h"

# check_installed VENV: the console script and the package work.
check_installed() {
  local venv=$1
  echo "+ fusegen --help"
  "$venv/bin/fusegen" --help | head -n 3
  for command in check run plan warmup cache generate; do
    "$venv/bin/fusegen" "$command" --help >/dev/null
  done
  echo "+ fusegen generate $spec -o $work/k.cu"
  "$venv/bin/fusegen" generate "$spec" -o "$work/k.cu"
  grep -q "^#error \"generated for sm_90a" "$work/k.cu"
  echo "+ fusegen check $spec"
  "$venv/bin/fusegen" check "$spec" >/dev/null
  (cd "$work" && "$venv/bin/python" -c '
import fusegen
assert fusegen.__version__ == fusegen.library_version(), (fusegen.__version__, fusegen.library_version())
f = fusegen.load(__import__("sys").argv[1])
print("python: fusegen", fusegen.__version__, "from", fusegen.library_path())' "$spec")
}

for part in ${FUSEGEN_PYTHON_TESTS:-checkout sdist}; do
  start=$SECONDS
  rm -rf "$work/venv"
  "$python" -m venv "$work/venv"
  case $part in
  checkout)
    echo "+ pip install $root/python (FUSEGEN_LLVM_ROOT=/nonexistent: no Clang)"
    # A build folder of its own: the checkout's python/build is the developer's.
    "$work/venv/bin/pip" install -v "$root/python" -C build-dir="$work/pip-build" "${no_clang[@]}" \
      2>&1 | tee "$work/pip.log"
    ;;
  sdist)
    sdist=$("$root/scripts/python-sdist.sh" "$build" "$work/dist" | tail -n 1)
    echo "+ pip wheel $sdist (FUSEGEN_LLVM_ROOT=/nonexistent: no Clang)"
    "$work/venv/bin/pip" wheel -v "$sdist" --no-deps -w "$work/wheels" "${no_clang[@]}" 2>&1 | tee "$work/pip.log"
    "$work/venv/bin/pip" install "$work"/wheels/fusegen-*.whl
    ;;
  *)
    echo "test-python-package: unknown part '$part' (checkout or sdist)" >&2
    exit 2
    ;;
  esac
  grep -q "$committed" "$work/pip.log" || { echo "test-python-package: $part: the build did not use the committed template text" >&2; exit 1; }
  check_installed "$work/venv"
  echo "test-python-package: $part ok in $((SECONDS - start)) s"
done
