#!/usr/bin/env bash
# GPU check, run on a machine with an NVIDIA GPU (e.g. the H100):
#   1. builds fusegen (cmake + ninja, -j16) into ./build-gpu;
#   2. runs the JIT runtime's tests (fusegen_runtime_tests, and the GPU ones,
#      fusegen_runtime_gpu_tests);
#   3. runs `fusegen run --device --compare` for the four KernelBench seed
#      chains at both shape sets (v0.1 in specs/kernelbench, v0 in
#      specs/kernelbench/small), strict and tf32, against the float64
#      reference interpreter;
#   4. if python3 can import torch with CUDA: runs scripts/torch_reference.py
#      (PyTorch on the GPU, fp32, TF32 off) and then `fusegen run --device
#      --inputs DIR --expect DIR` for the four chains at both shape sets at
#      KernelBench's batch sizes, with the same weights and inputs, strict
#      precision, allclose(atol=1e-4, rtol=1e-4), running stats included;
#   5. checks that a warmed disk cache makes a fresh process compile nothing;
#   6. runs part of fusegen_runtime_gpu_tests (the small-shape specs at edge
#      batch sizes, and the 16-thread test) under compute-sanitizer memcheck
#      (with leak checking), racecheck and synccheck;
#   7. runs a sample of the property test's generated specs
#      (tests/property/run_property.py, seeds FUSEGEN_CHECK_PROPERTY_SEEDS,
#      0:20) on the GPU with `fusegen run --device --compare`, under
#      compute-sanitizer memcheck when step 6 found it;
# and writes a short report to bench/results/gpu-check-<gpu>.md.
#
# On a GPU machine without GoogleTest, CLI11 or hiredis (and no package
# installs), build against the prefix scripts/device-deps.sh bundles on a
# machine that has them (its header says which variables to set).
#
# usage: scripts/gpu-check.sh
# Environment: FUSEGEN_JOBS (build jobs, 16), FUSEGEN_GPU_BUILD_DIR
# (./build-gpu), FUSEGEN_CHECK_N_V01 (batch for the v0.1 shapes, 32: their
# CPU reference is slow at the KernelBench sizes), FUSEGEN_CHECK_N_SMALL (128),
# PYTHON (python3, for the PyTorch step), FUSEGEN_CHECK_SANITIZER (1; 0 skips
# step 6 for a quick run), FUSEGEN_SANITIZER_TIMEOUT (seconds per sanitizer
# tool, 300: a tool that hangs or crawls fails instead of using up the machine).
# Exits 0 when everything passed, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_GPU_BUILD_DIR:-$root/build-gpu}
jobs=${FUSEGEN_JOBS:-16}
n_v01=${FUSEGEN_CHECK_N_V01:-32}
n_small=${FUSEGEN_CHECK_N_SMALL:-128}
check_sanitizer=${FUSEGEN_CHECK_SANITIZER:-1}
sanitizer_timeout=${FUSEGEN_SANITIZER_TIMEOUT:-300}

echo "== build ($build, -j$jobs)"
# FUSEGEN_CMAKE_ARGS: extra configure arguments, e.g. -DFUSEGEN_TEMPLATE_TEXT_PREBUILT=<TemplateText.h
# from a full build> on a GPU machine without Clang's dev packages whose
# templates differ from the committed copy (generated/), which it uses otherwise.
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEGEN_WERROR=ON ${FUSEGEN_CMAKE_ARGS:-} >/dev/null || exit 1
# Only what the check runs, so that unrelated work in progress cannot stop it.
cmake --build "$build" -j "$jobs" --target fusegen fusegen_runtime_tests fusegen_runtime_gpu_tests || exit 1
fusegen=$build/cli/fusegen
cpu_tests=$build/tests/runtime/fusegen_runtime_tests
gpu_tests=$build/tests/runtime/fusegen_runtime_gpu_tests
[[ -x $fusegen && -x $gpu_tests ]] || { echo "gpu-check: error: the runtime was not built (no CUDA toolkit?)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A fresh cache, so that the compile path is what gets checked.
export FUSEGEN_CACHE_DIR=$work/cache
unset FUSEGEN_CACHE

gpu_name=unknown
driver=unknown
if command -v nvidia-smi >/dev/null 2>&1; then
  IFS=, read -r gpu_name driver < <(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0) || true
  gpu_name=$(echo "$gpu_name" | sed 's/^ *//; s/ *$//')
  driver=$(echo "$driver" | sed 's/^ *//; s/ *$//')
fi

overall=PASS
table=$work/table.md
: >"$table"

echo "== runtime CPU tests"
"$cpu_tests" >"$work/cpu-tests.log" 2>&1
cpu_tests_rc=$?
cpu_summary=$(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ tests?' "$work/cpu-tests.log" | tr '\n' ' ')
echo "$cpu_summary"
((cpu_tests_rc == 0)) || overall=FAIL

echo "== runtime GPU tests"
"$gpu_tests" --gtest_output="xml:$work/gpu-tests.xml" >"$work/gpu-tests.log" 2>&1
gpu_tests_rc=$?
tail -n 5 "$work/gpu-tests.log"
tests_passed=$(grep -c '^\[       OK \] ' "$work/gpu-tests.log" || true)
tests_skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' "$work/gpu-tests.log" || true)
failed_list=$(grep '^\[  FAILED  \] [^ ]*\.[^ ]*' "$work/gpu-tests.log" | grep -v 'listed below' |
  sed 's/^\[  FAILED  \] \([^ ]*\).*/- \1/' | sort -u)
tests_failed=$(grep -c '^- ' <<<"$failed_list" || true)
if ((gpu_tests_rc != 0)); then overall=FAIL; fi
if ((tests_passed == 0)); then
  overall=FAIL
  echo "gpu-check: no GPU test ran (no GPU?): $(grep -m1 'skipped: no GPU' "$work/gpu-tests.log")" >&2
fi

echo "== fusegen run --device --compare"
# One row per compared tensor: spec | shapes | N | precision | tensor | abs | rel | result
for spec in "$root"/specs/kernelbench/*.fg "$root"/specs/kernelbench/small/*.fg; do
  case $spec in */small/*) set_name=v0-small; n=$n_small ;; *) set_name=v0.1; n=$n_v01 ;; esac
  name=$(basename "$spec" .fg)
  for precision in strict tf32; do
    log=$work/run-$set_name-$name-$precision.log
    "$fusegen" run "$spec" --device --dims "N=$n" --compare --precision "$precision" >"$log" 2>&1
    rc=$?
    if [[ -z $gpu_name || $gpu_name == unknown ]]; then
      gpu_name=$(sed -n 's/^fusion .* on \(.*\) (sm_[0-9]*, driver .*/\1/p' "$log" | head -1)
    fi
    if [[ $driver == unknown ]]; then
      version=$(sed -n 's/^fusion .* (sm_[0-9]*, driver \([0-9]*\)).*/\1/p' "$log" | head -1)
      [[ -n $version ]] && driver="with CUDA $((version / 1000)).$((version % 1000 / 10))"
    fi
    result=pass
    ((rc == 0)) || { result=FAIL; overall=FAIL; }
    echo "$set_name $name $precision N=$n: $result"
    if grep -q '^compare ' "$log"; then
      sed -n 's/^compare \([a-z]*\) \([^:]*\): max_abs_err=\([^ ]*\) max_rel_err=\([^ ]*\) mismatches=\([^ ]*\) .*: \(.*\)$/\1 \2 \3 \4 \5 \6/p' "$log" |
        while read -r kind tensor abs rel mismatches ok; do
          echo "| $name | $set_name | $n | $precision | $kind $tensor | $abs | $rel | $mismatches | $ok |" >>"$table"
        done
    else
      error=$(grep -m1 'error' "$log" | cut -c1-160 | tr '|' '/')
      echo "| $name | $set_name | $n | $precision | - | - | - | - | FAIL: ${error:-see log} |" >>"$table"
      sed 's/^/    /' "$log" | tail -n 20
    fi
  done
done

echo "== against PyTorch on the GPU"
# One row per compared tensor: chain | shapes | N | tensor | abs | rel | mismatches | result
python=${PYTHON:-python3}
torch_table=$work/torch-table.md
: >"$torch_table"
torch_status="skipped: $python cannot import torch with CUDA available"
if "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  torch_dir=$work/torch
  if "$python" "$root/scripts/torch_reference.py" --out "$torch_dir" --shapes both --seed 0 >"$work/torch-reference.log" 2>&1; then
    torch_status="$(head -1 "$work/torch-reference.log")"
    cat "$work/torch-reference.log"
    # manifest.tsv: shapes, chain, spec, N, folder with inputs/ and expected/
    while IFS=$'\t' read -r shapes chain spec n folder; do
      case $shapes in small) set_name=v0-small ;; *) set_name=$shapes ;; esac
      log=$work/torch-$set_name-$chain.log
      "$fusegen" run "$spec" --device --dims "N=$n" --precision strict --inputs "$folder/inputs" \
        --expect "$folder/expected" </dev/null >"$log" 2>&1
      rc=$?
      result=pass
      ((rc == 0)) || { result=FAIL; overall=FAIL; }
      echo "$set_name $chain N=$n against PyTorch: $result"
      if grep -q '^compare ' "$log"; then
        sed -n 's/^compare \([a-z]*\) \([^:]*\): max_abs_err=\([^ ]*\) max_rel_err=\([^ ]*\) mismatches=\([^ ]*\) .*: \(.*\)$/\1 \2 \3 \4 \5 \6/p' "$log" |
          while read -r kind tensor abs rel mismatches ok; do
            echo "| $chain | $set_name | $n | $kind $tensor | $abs | $rel | $mismatches | $ok |" >>"$torch_table"
          done
        ((rc == 0)) || grep -A1 '^compare .*FAIL$' "$log" | sed 's/^/    /'
      else
        error=$(grep -m1 'error' "$log" | cut -c1-160 | tr '|' '/')
        echo "| $chain | $set_name | $n | - | - | - | - | FAIL: ${error:-see log} |" >>"$torch_table"
        sed 's/^/    /' "$log" | tail -n 20
      fi
    done <"$torch_dir/manifest.tsv"
    # The tensors are large (about 1.5 GB at the v0.1 shapes).
    rm -rf "$torch_dir"
  else
    torch_status="FAIL: scripts/torch_reference.py failed"
    overall=FAIL
    echo "| - | - | - | - | - | - | - | $torch_status |" >>"$torch_table"
    sed 's/^/    /' "$work/torch-reference.log" | tail -n 20
  fi
fi
echo "PyTorch: $torch_status"

echo "== warmed cache in a fresh process"
arch=$(sed -n 's/^fusion .* (sm_\([0-9]*\), driver .*/\1/p' "$work"/run-*.log | head -1)
warm_spec=$root/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg
warm_result=FAIL
if [[ -n $arch ]]; then
  FUSEGEN_CACHE_DIR=$work/warm "$fusegen" warmup "$warm_spec" --dims N=64 --arch "sm_$arch" >"$work/warm.log" 2>&1
  FUSEGEN_CACHE_DIR=$work/warm "$fusegen" run "$warm_spec" --device --dims N=64 --compare >>"$work/warm.log" 2>&1 &&
    grep -q 'kernels: 0 compiled, 1 from the disk cache' "$work/warm.log" && warm_result=pass
fi
[[ $warm_result == pass ]] || overall=FAIL
echo "warmed cache: $warm_result"

echo "== compute-sanitizer"
# One row per tool: tool | options | filter | tests | wall time | summary | result
sanitizer_table=$work/sanitizer-table.md
sanitizer_errors=$work/sanitizer-errors.md
: >"$sanitizer_table"
: >"$sanitizer_errors"
# The sanitizers slow kernels down 10-100x (racecheck more on shared-memory
# heavy GEMM tiles), so they run only the tests that matter for them: every
# small-shape spec at the edge batch sizes (1 (5 for batch norm), 3, 127,
# 1025: partial tiles and bounds checks), both precisions, and the 16-thread
# test (many streams, concurrent first calls). Left out: the KernelBench
# batches (128, 33) and the v0.1 shapes, whose tiles the plain run above
# covers. racecheck is much slower on the GEMM's shared-memory pipelines
# (the 16-thread test alone ran past 170 s under it on the H100), so it runs
# the edge sizes 3 (partial tiles) and 127 (full tiles and a partial last
# one) of the small specs, strict precision, and chain 62 at 4500 (128-row
# blocks: the wgmma pipeline on an H100) and at 9000 in tf32 (128x256
# blocks, wgmma m64n256). The 9000-row cases (tf32's 256-column blocks) stay
# out of memcheck and synccheck: their partial tiles are the 4500 ones'.
edge_filter='KernelBench/GpuSpecs.*/small_*:GpuThreads.*-*_N128_*:*_N33_*:*_N9000_*'
race_filter='KernelBench/GpuSpecs.*/small_*_N3_strict:KernelBench/GpuSpecs.*/small_*_N127_strict'
race_filter+=':KernelBench/GpuSpecs.*/small_62_*_N4500_strict:KernelBench/GpuSpecs.*/small_62_*_N9000_tf32'
sanitizer=
if [[ $check_sanitizer == 0 ]]; then
  sanitizer_status="skipped (FUSEGEN_CHECK_SANITIZER=0)"
else
  # Not always on PATH; $CUDA_HOME before /usr/local/cuda, as the toolkit
  # that was asked for.
  for candidate in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:+$CUDA_HOME/bin/compute-sanitizer}" \
    /usr/local/cuda/bin/compute-sanitizer; do
    [[ -n $candidate && -x $candidate ]] && { sanitizer=$candidate; break; }
  done
  if [[ -n $sanitizer ]]; then
    sanitizer_status="$sanitizer, $("$sanitizer" --version 2>/dev/null | grep -m1 -i 'version' | sed 's/^ *//')"
  else
    sanitizer_status="FAIL: compute-sanitizer not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
    overall=FAIL
    echo "| - | - | - | - | - | - | $sanitizer_status |" >>"$sanitizer_table"
  fi
fi
echo "compute-sanitizer: $sanitizer_status"
if [[ -n $sanitizer ]]; then
  # Lines of tool|options|filter. --error-exitcode 1 makes any report fail the
  # run; without reports compute-sanitizer exits with the tests' own status.
  # racecheck: --racecheck-detect-level warn (its default, spelled out) shows
  # warnings as well as errors, and both fail the step: its warnings are
  # hazards that assume warp-synchronous execution, which sm_70 and later do
  # not guarantee. --racecheck-report all prints each hazard and the analysis.
  while IFS='|' read -r tool options filter; do
    log=$work/sanitizer-$tool.log
    echo "-- $tool $options --gtest_filter=$filter"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout --kill-after=30 "$sanitizer_timeout" "$sanitizer" --tool "$tool" $options --error-exitcode 1 \
      "$gpu_tests" --gtest_filter="$filter" </dev/null >"$log" 2>&1
    rc=$?
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f s", b - a }')
    ran=$(grep -c '^\[       OK \] ' "$log" || true)
    skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' "$log" || true)
    failed=$(grep '^\[  FAILED  \] [^ ]*\.[^ ]*' "$log" | grep -v 'listed below' |
      sed 's/^\[  FAILED  \] \([^ ]*\).*/\1/' | sort -u)
    # "ERROR SUMMARY: 0 errors", or for racecheck
    # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
    summary=$(grep -E '^=+ (ERROR|RACECHECK|LEAK) SUMMARY' "$log" | sed 's/^=* //' | paste -sd ';' - | sed 's/;/; /g')
    warnings=$(sed -n 's/^=* RACECHECK SUMMARY: .* \([0-9][0-9]*\) warnings\{0,1\}).*/\1/p' "$log" | head -1)
    why=
    if ((rc == 124 || rc == 137)); then
      why="timed out after $sanitizer_timeout s"
    elif ((rc != 0)); then
      why="exit status $rc"
    elif [[ -n $failed ]]; then
      why="tests failed"
    elif ((ran == 0)); then
      why="no test ran ($skipped skipped)"
    elif [[ -z $summary ]]; then
      why="no sanitizer summary in the output"
    elif [[ ${warnings:-0} != 0 ]]; then
      why="$warnings racecheck warnings"
    fi
    result=pass
    if [[ -n $why ]]; then
      result="FAIL: $why"
      overall=FAIL
      {
        echo "### $tool: $why"
        echo
        [[ -n $failed ]] && { echo "- ${failed//$'\n'/$'\n'- }"; echo; }
        echo '```'
        # The first reports, or the end of the log when there are none.
        if grep -q '^========= [A-Z]' "$log"; then
          grep '^=========' "$log" | head -n 60
        else
          tail -n 30 "$log"
        fi
        echo '```'
        echo
      } >>"$sanitizer_errors"
      tail -n 20 "$log" | sed 's/^/    /'
    fi
    echo "$tool: $ran tests passed, $wall, ${summary:-no summary}: $result"
    echo "| $tool | \`${options:--}\` | \`$filter\` | $ran | $wall | ${summary:--} | $result |" >>"$sanitizer_table"
  done <<EOF
memcheck|--leak-check full|$edge_filter
racecheck|--racecheck-detect-level warn --racecheck-report all|$race_filter
synccheck||$edge_filter
EOF
fi

echo "== property sample on the GPU"
# Each generated spec that check accepts: generation, NVRTC, the reference,
# then `fusegen run --device --compare` (under memcheck when step 6 runs).
# Failed specs are kept in $build/property-failed (the work folder goes at exit).
property_log=$work/property.log
rm -rf "$build/property-failed"
property_args=(--binary "$fusegen" --seeds "${FUSEGEN_CHECK_PROPERTY_SEEDS:-0:20}" --device
  --timeout "$sanitizer_timeout" --keep "$build/property-failed")
[[ -n $sanitizer ]] && property_args+=(--sanitizer "$sanitizer")
python3 "$root/tests/property/run_property.py" "${property_args[@]}" </dev/null >"$property_log" 2>&1
property_rc=$?
property_summary=$(grep -m1 '^property: [0-9]' "$property_log")
property_result=pass
if ((property_rc != 0)); then
  property_result=FAIL
  overall=FAIL
  tail -n 40 "$property_log" | sed 's/^/    /'
fi
echo "property sample: ${property_summary:-no summary}: $property_result"

slug=$(echo "${gpu_name:-unknown}" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
mkdir -p "$root/bench/results"
report=$root/bench/results/gpu-check-${slug:-unknown}.md
nvrtc=$(sed -n 's/.*nvrtc \([0-9.]*\)$/\1/p' < <(FUSEGEN_CACHE_DIR=$work/cache "$fusegen" cache verify 2>/dev/null) | head -1)
{
  echo "# fusegen GPU check: ${gpu_name:-unknown}"
  echo
  echo "- result: **$overall**"
  echo "- GPU: ${gpu_name:-unknown} (sm_${arch:-?}), driver ${driver:-unknown}"
  # FUSEGEN_COMMIT names the commit when the tree is a snapshot without its
  # own repository (git archive); git would look at an enclosing one.
  if [[ -n ${FUSEGEN_COMMIT:-} ]]; then
    revision="$FUSEGEN_COMMIT (snapshot)"
  else
    revision="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ', with local changes')"
  fi
  echo "- fusegen $("$fusegen" --version | awk '{print $2}') (git $revision), NVRTC ${nvrtc:-?}, RelWithDebInfo"
  echo "- date: $(date -u +%Y-%m-%d)"
  echo
  echo "## Runtime GPU tests"
  echo
  echo "fusegen_runtime_gpu_tests: $tests_passed passed, $tests_failed failed, $tests_skipped skipped."
  echo "fusegen_runtime_tests (no GPU needed): ${cpu_summary:-did not run}"
  [[ -n $failed_list ]] && { echo; echo "$failed_list"; }
  echo
  echo "## fusegen run --device --compare"
  echo
  echo "Random inputs (seed 0) against the float64 reference interpreter; passes when"
  echo "|gpu - ref| <= atol + rtol*|ref| for every element (1e-4 strict, 1e-2 tf32)."
  echo "The v0.1 shapes use N=$n_v01 (the CPU reference is slow at KernelBench's batch sizes)."
  echo
  echo "| chain | shapes | N | precision | tensor | max abs err | max rel err | mismatches | result |"
  echo "|---|---|---|---|---|---|---|---|---|"
  cat "$table"
  echo
  echo "## Against PyTorch on the GPU"
  echo
  echo "scripts/torch_reference.py builds the KernelBench modules (seed 0, inputs torch.rand) and runs them"
  echo "on the GPU in fp32 with TF32 off; \`fusegen run --device --precision strict --inputs --expect\` runs"
  echo "the same weights and inputs and passes when |gpu - torch| <= 1e-4 + 1e-4*|torch| for every element"
  echo "of every output and state tensor (KernelBench's allclose). PyTorch: $torch_status."
  echo
  echo "| chain | shapes | N | tensor | max abs err | max rel err | mismatches | result |"
  echo "|---|---|---|---|---|---|---|---|"
  cat "$torch_table"
  echo
  echo "## Warm disk cache"
  echo
  echo "fusegen warmup (sm_${arch:-?}) then fusegen run --device in a fresh process compiles nothing: $warm_result."
  echo
  echo "## compute-sanitizer"
  echo
  echo "fusegen_runtime_gpu_tests under \`compute-sanitizer --tool TOOL OPTIONS --error-exitcode 1\`: the small-shape"
  echo "specs at edge batch sizes, both precisions, and the 16-thread test. A tool passes when it reports"
  echo "nothing (racecheck: no errors and no warnings) and every test it ran passed."
  echo "compute-sanitizer: $sanitizer_status."
  if [[ -s $sanitizer_table ]]; then
    echo
    echo "| tool | options | --gtest_filter | tests passed | wall time | summary | result |"
    echo "|---|---|---|---|---|---|---|"
    cat "$sanitizer_table"
  fi
  if [[ -s $sanitizer_errors ]]; then
    echo
    cat "$sanitizer_errors"
  fi
  echo
  echo "## Property sample"
  echo
  echo "tests/property/run_property.py --device${sanitizer:+ --sanitizer (memcheck)}: generated specs that"
  echo "check accepts must generate, compile, run on the reference and match it on the GPU."
  echo
  echo "- ${property_summary:-no summary}: $property_result"
  if ((property_rc != 0)); then
    echo
    echo '```'
    grep -E '^(FAIL seed|property: |  [a-z].*: )' "$property_log" | head -n 40
    echo '```'
    echo
    echo "The failed specs are in $build/property-failed."
  fi
} >"$report"
echo "== report: $report ($overall)"
[[ $overall == PASS ]]
