#!/usr/bin/env bash
# The unit suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
# then the front-end fuzzer for FUSEGEN_FUZZ_SECONDS (default 60) seeded with
# every spec in the repository. Fails on any test failure, crash, leak, hang
# or sanitizer report. Run by .ci/run after scripts/test.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_ASAN_BUILD_DIR:-$root/build-asan}
jobs=${FUSEGEN_JOBS:-2}
seconds=${FUSEGEN_FUZZ_SECONDS:-60}

"$root/scripts/install-deps.sh"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DFUSEGEN_WERROR=ON -DFUSEGEN_SANITIZE=ON -DFUSEGEN_FUZZ=ON
cmake --build "$build" -j "$jobs"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The NVRTC and nvcc compile tests drive CUDA's own (uninstrumented) libraries;
# they run in the normal build, not here.
(cd "$build" && ctest --output-on-failure -j "$jobs" -E 'nvcc|Nvrtc|NVRTC|Codegen')

# Fuzz: seed corpus = every spec and diagnostics case, one file each.
corpus=$build/fuzz-corpus
mkdir -p "$corpus"
find "$root/specs" "$root/tests" -name '*.fg' -exec cp {} "$corpus/" \;
for regression in "$root"/tests/fuzz/regressions/*; do
  [[ -e $regression ]] && cp "$regression" "$corpus/"
done
echo "fuzzing the front end for ${seconds}s with $(ls "$corpus" | wc -l) seeds"
"$build/tests/fuzz/fusegen_fuzz_frontend" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-" "$corpus" 2>&1 | tail -20
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "fuzzer found a failure (exit $status); the input is saved as $build/fuzz-*" >&2
  exit 1
fi
echo "fuzzer: no failures in ${seconds}s"
