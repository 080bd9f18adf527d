#!/usr/bin/env bash
# Installs a built fusegen into a temporary prefix and builds and runs the
# outside consumer (examples/consumer) against it with find_package(fusegen):
# what a host program does. Usage: scripts/test-install.sh BUILD_DIR
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
step cmake -S "$root/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"
step cmake --build "$work/consumer"
FUSEGEN_CACHE=0 "$work/consumer/consumer"
FUSEGEN_CACHE=0 "$work/consumer/consumer_c"
echo "test-install: ok"
