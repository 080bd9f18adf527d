#!/usr/bin/env bash
# README command 1: install what is missing, build the fusegen command (not
# the test suite: scripts/test.sh builds that), and run it on an example spec.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUSEGEN_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
FUSEGEN_BUILD_TARGETS=fusegen "$root/scripts/build.sh"
spec=$root/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg
echo "+ fusegen check $spec"
"$build/cli/fusegen" check "$spec"
echo "+ fusegen run $spec --dims N=128 --reference"
"$build/cli/fusegen" run "$spec" --dims N=128 --reference
