#!/usr/bin/env bash
# README command 1: install what is missing, build, and run fusegen on an
# example spec.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
spec=$root/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg
echo "+ fusegen check $spec"
"$build/cli/fusegen" check "$spec"
echo "+ fusegen run $spec --dims N=128 --reference"
"$build/cli/fusegen" run "$spec" --dims N=128 --reference
