#!/usr/bin/env bash
# Installs a built fusegen into a temporary prefix and builds and runs the
# outside consumer (examples/consumer) against it with find_package(fusegen):
# what a host program does, at the compiler's default C++ standard (the
# package's target carries C++20). Usage: scripts/test-install.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: test-install.sh BUILD_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Quiet when it works; the whole log when a step fails.
step() {
  if ! "$@" >"$work/step.log" 2>&1; then
    cat "$work/step.log" >&2
    echo "test-install: failed: $*" >&2
    exit 1
  fi
}
step cmake --install "$build" --prefix "$work/prefix"
echo "test-install: installed into $work/prefix ($(find "$work/prefix" -type f | wc -l) files)"
# Every installed header compiles on its own: none includes an uninstalled
# (internal) header, and each includes what it uses.
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
for header in $(cd "$work/prefix/include" && find . -name '*.h' | sort); do
  header=${header#./}
  echo "#include <$header>" >"$work/header.cpp"
  step "${cxx:-c++}" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$work/prefix/include" "$work/header.cpp"
done
echo "test-install: $(cd "$work/prefix/include" && find . -name '*.h' | wc -l) public headers, each compiles alone"
step cmake -S "$root/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"
step cmake --build "$work/consumer"
FUSEGEN_CACHE=0 "$work/consumer/consumer"
FUSEGEN_CACHE=0 "$work/consumer/consumer_c"
echo "test-install: ok"
