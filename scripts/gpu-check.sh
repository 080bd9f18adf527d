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
# and writes a short report to bench/results/gpu-check-<gpu>.md.
#
# usage: scripts/gpu-check.sh
# Environment: FUSEGEN_JOBS (build jobs, 16), FUSEGEN_GPU_BUILD_DIR
# (./build-gpu), FUSEGEN_CHECK_N_V01 (batch for the v0.1 shapes, 32: their
# CPU reference is slow at the KernelBench sizes), FUSEGEN_CHECK_N_SMALL (128),
# PYTHON (python3, for the PyTorch step).
# Exits 0 when everything passed, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_GPU_BUILD_DIR:-$root/build-gpu}
jobs=${FUSEGEN_JOBS:-16}
n_v01=${FUSEGEN_CHECK_N_V01:-32}
n_small=${FUSEGEN_CHECK_N_SMALL:-128}

echo "== build ($build, -j$jobs)"
# FUSEGEN_CMAKE_ARGS: extra configure arguments, e.g. on a GPU machine without
# Clang's dev packages -DFUSEGEN_TEMPLATE_TEXT_PREBUILT=<TemplateText.h from a full build>.
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEGEN_WERROR=ON ${FUSEGEN_CMAKE_ARGS:-} >/dev/null || exit 1
# Only what the check runs, so that unrelated work in progress cannot stop it.
cmake --build "$build" -j "$jobs" --target fusegen fusegen_runtime_tests fusegen_runtime_gpu_tests || exit 1
fusegen=$build/compiler/fusegen
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

slug=$(echo "${gpu_name:-unknown}" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
mkdir -p "$root/bench/results"
report=$root/bench/results/gpu-check-${slug:-unknown}.md
nvrtc=$(sed -n 's/.*nvrtc \([0-9.]*\)$/\1/p' < <(FUSEGEN_CACHE_DIR=$work/cache "$fusegen" cache verify 2>/dev/null) | head -1)
{
  echo "# fusegen GPU check: ${gpu_name:-unknown}"
  echo
  echo "- result: **$overall**"
  echo "- GPU: ${gpu_name:-unknown} (sm_${arch:-?}), driver ${driver:-unknown}"
  echo "- fusegen $("$fusegen" --version | awk '{print $2}') (git $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ', with local changes')), NVRTC ${nvrtc:-?}, RelWithDebInfo"
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
} >"$report"
echo "== report: $report ($overall)"
[[ $overall == PASS ]]
