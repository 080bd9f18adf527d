#!/usr/bin/env bash
# Offline generation's architecture guard: a file generated for sm_90a (the
# default) or sm_80 compiles with nvcc for that arch and stops, with the
# generated #error naming the right -arch, for another one or without -arch.
# Usage: arch-guard.sh FUSEGEN NVCC SOURCE_DIR
set -euo pipefail
fusegen=${1:?usage: arch-guard.sh FUSEGEN NVCC SOURCE_DIR}
nvcc=${2:?}
spec=${3:?}/tests/codegen_golden/pointwise_chain.fg
work=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-arch-guard.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

# expect_compile FILE TARGET ok|fails NVCC_ARGS...
expect_compile() {
  local file=$1 target=$2 expect=$3
  shift 3
  local rc=0
  "$nvcc" "$@" -c "$work/$file" -o "$work/out.o" >"$work/nvcc.log" 2>&1 || rc=$?
  if [[ $expect == ok && $rc -ne 0 ]]; then
    echo "FAIL: nvcc $* $file: expected to compile"
    cat "$work/nvcc.log"
    failures=$((failures + 1))
  elif [[ $expect == fails ]] &&
    ! { [[ $rc -ne 0 ]] && grep -q "generated for $target; compile with -arch=$target" "$work/nvcc.log"; }; then
    echo "FAIL: nvcc $* $file: expected the #error for $target (rc $rc)"
    cat "$work/nvcc.log"
    failures=$((failures + 1))
  else
    echo "ok: nvcc $* $file ($expect)"
  fi
}

"$fusegen" generate "$spec" -o "$work/sm90a.cu"
"$fusegen" "$spec" --arch sm_80 -o "$work/sm80.cu"
grep -q "^// Target sm_90a (nvcc -arch=sm_90a)" "$work/sm90a.cu" || {
  echo "FAIL: sm90a.cu does not state its target"
  failures=$((failures + 1))
}
expect_compile sm90a.cu sm_90a ok -arch=sm_90a
expect_compile sm90a.cu sm_90a ok -arch=sm_90a -DFUSEGEN_DEVICE_ONLY
expect_compile sm90a.cu sm_90a fails -arch=sm_80
expect_compile sm90a.cu sm_90a fails # nvcc's default arch
expect_compile sm80.cu sm_80 ok -arch=sm_80
expect_compile sm80.cu sm_80 fails -arch=sm_90a
[[ $failures -eq 0 ]] || exit 1
echo "arch-guard: ok"
