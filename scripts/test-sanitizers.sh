#!/usr/bin/env bash
# The unit suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
# then the fuzzers: the front end over the kept regression inputs, then for
# FUSEGEN_FUZZ_SECONDS (default 60) seeded with every spec in the repository,
# and the disk cache entry decoder for FUSEGEN_FUZZ_ENTRY_SECONDS (default 30),
# then the property test on generated specs for FUSEGEN_PROPERTY_SECONDS
# (default 120).
# Fails on any test failure, crash, leak, hang or sanitizer report, including
# reports from child processes of passing tests (every report is logged to a
# file, and any such file fails the run). Run by .ci/run after scripts/test.sh.
#
# To save CI time the instrumented build reuses the template header that the
# normal build ($FUSEGEN_BUILD_DIR, default ./build) generated with the Clang
# template tool, when it is newer than every template: the tool and its tests
# are plain (uninstrumented) code that the normal build already runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_ASAN_BUILD_DIR:-$root/build-asan}
normal_build=${FUSEGEN_BUILD_DIR:-$root/build}
jobs=${FUSEGEN_JOBS:-2}
seconds=${FUSEGEN_FUZZ_SECONDS:-60}
start=$SECONDS

"$root/scripts/install-deps.sh"
extra=()
template_text=$normal_build/generated/fusegen/TemplateText.h
if [[ -f $template_text && -z $(find "$root/templates" "$root/compiler/include/fusegen/hooks" \
  "$root/compiler/include/fusegen/TemplateHooks.h" "$root/compiler/include/fusegen/KernelLimits.h" -newer "$template_text" -print -quit 2>/dev/null) ]]; then
  echo "test-sanitizers: reusing $template_text (templates unchanged since it was generated)"
  extra+=("-DFUSEGEN_TEMPLATE_TEXT_PREBUILT=$template_text")
else
  extra+=("-UFUSEGEN_TEMPLATE_TEXT_PREBUILT")
fi
# Debug keeps assertions; -O1 (as ASan recommends) keeps the instrumented
# suite fast enough for its timing bounds on a loaded 2-core machine.
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
  -DFUSEGEN_WERROR=ON -DFUSEGEN_SANITIZE=ON -DFUSEGEN_FUZZ=ON "${extra[@]}"
cmake --build "$build" -j "$jobs"
echo "test-sanitizers: instrumented build done after $((SECONDS - start)) s"

logs=$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:log_path=$logs/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan
# Reports written to files are not in a failing test's output: show them.
check_logs() {
  if compgen -G "$logs/*" >/dev/null; then
    echo "test-sanitizers: sanitizer reports in $logs:" >&2
    head -n 60 "$logs"/* >&2
    exit 1
  fi
}
# Left to the normal build: the NVRTC and nvcc compile tests, which drive
# CUDA's own (uninstrumented) libraries, and install_consumer, which links a
# plain outside program against the library (here instrumented). Every test
# has 5 minutes (hangs); the 8-process cache test runs 3 rounds, not 8.
status=0
(cd "$build" && FUSEGEN_CACHE_LOAD_ITERATIONS=3 ctest --output-on-failure -j "$jobs" --timeout 300 \
  -E 'nvcc|Nvrtc|NVRTC|Codegen|install_consumer') || status=$?
check_logs
[[ $status -eq 0 ]] || exit "$status"
echo "test-sanitizers: test suite done after $((SECONDS - start)) s"

# Runs fuzz target $1 on corpus folder $2 for $3 seconds; fails on any
# crash, leak, timeout (a hang) or sanitizer report.
fuzz() {
  local target=$1 corpus=$2 time=$3 status=0
  echo "fuzzing $target for ${time}s with $(ls "$corpus" | wc -l) seeds"
  # -error_exitcode and -timeout_exitcode make every kind of failure a
  # non-zero exit; leaks are checked by libFuzzer itself (-detect_leaks).
  "$build/tests/fuzz/$target" -max_total_time="$time" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -print_final_stats=1 -error_exitcode=77 -timeout_exitcode=78 -artifact_prefix="$build/$target-" "$corpus" \
    >"$build/$target.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::)' "$build/$target.log" || tail -5 "$build/$target.log"
  if [[ $status -ne 0 ]]; then
    tail -60 "$build/$target.log" >&2
    echo "$target found a failure (exit $status); the input is saved as $build/$target-*" >&2
    check_logs
    exit 1
  fi
  check_logs
  echo "$target: no failures in ${time}s"
}

# Inputs that once failed: each is run once.
regressions=("$root"/tests/fuzz/regressions/*.fg)
"$build/tests/fuzz/fusegen_fuzz_frontend" "${regressions[@]}" >"$build/fuzz-regressions.log" 2>&1 || {
  cat "$build/fuzz-regressions.log" >&2
  check_logs
  exit 1
}
entry_regressions=("$root"/tests/fuzz/regressions/cache_entry/*)
"$build/tests/fuzz/fusegen_fuzz_cache_entry" "${entry_regressions[@]}" >>"$build/fuzz-regressions.log" 2>&1 || {
  cat "$build/fuzz-regressions.log" >&2
  check_logs
  exit 1
}
echo "test-sanitizers: $((${#regressions[@]} + ${#entry_regressions[@]})) fuzzer regression inputs pass"

# The front end. Seed corpus: every spec in the repository, one file each
# (named by path, as files in different folders share names), with the
# diagnostics suite's files split into their cases (at "# -----" lines).
corpus=$build/fuzz-corpus
rm -rf "$corpus"
mkdir -p "$corpus"
while IFS= read -r -d '' spec; do
  relative=${spec#"$root"/}
  name=$corpus/${relative//\//_}
  if [[ $relative == tests/diagnostics/* ]]; then
    awk -v out="$name" 'BEGIN { n = 0 } /^# -----$/ { n++; next } { print > (out "." n) }' "$spec"
  else
    cp "$spec" "$name"
  fi
done < <(find "$root/specs" "$root/tests" -name '*.fg' -print0)
fuzz fusegen_fuzz_frontend "$corpus" "$seconds"

# The cache entry decoder, from an empty corpus (the target builds its own
# valid entry to mutate).
entry_corpus=$build/fuzz-corpus-cache-entry
rm -rf "$entry_corpus"
mkdir -p "$entry_corpus"
fuzz fusegen_fuzz_cache_entry "$entry_corpus" "${FUSEGEN_FUZZ_ENTRY_SECONDS:-30}"

# The property test (tests/property/run_property.py) against the instrumented
# CLI, for FUSEGEN_PROPERTY_SECONDS (default 120): generated specs that check
# accepts must generate, compile with NVRTC and run on the reference. Its
# seeds start after the normal build's ctest slice (0:150). NVRTC runs
# uninstrumented inside the instrumented process, with no report (checked on
# 60 seeds); FUSEGEN_PROPERTY_NVRTC=0 leaves that step out.
property_args=(--binary "$build/cli/fusegen" --seeds "${FUSEGEN_PROPERTY_SEEDS:-150:1000000}"
  --time-budget "${FUSEGEN_PROPERTY_SECONDS:-120}" --jobs "$jobs" --timeout 300 --keep "$build/property-failures")
if [[ ${FUSEGEN_PROPERTY_NVRTC:-1} == 0 ]]; then
  property_args+=(--no-nvrtc)
fi
rm -rf "$build/property-failures"
python3 "$root/tests/property/run_property.py" "${property_args[@]}" || {
  check_logs
  echo "test-sanitizers: the property test failed; the specs are in $build/property-failures" >&2
  exit 1
}
check_logs
echo "test-sanitizers: passed in $((SECONDS - start)) s"
