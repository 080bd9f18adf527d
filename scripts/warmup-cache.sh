#!/usr/bin/env bash
# Warms the fusegen kernel cache from a manifest, compiling in parallel (no
# GPU needed). Each manifest line is
#
#   SPEC_PATH DIMS...        e.g.  62_matmul_groupnorm_leakyrelu_sum.fg N=128,1024
#
# with `#` comments and blank lines ignored; a relative SPEC_PATH is relative
# to the manifest's directory, and each DIMS word is one `--dims` of
# `fusegen warmup` (N=128,1024 is two values of N). Example:
# specs/kernelbench/warmup.manifest.
#
# usage: scripts/warmup-cache.sh MANIFEST [--arch sm_90] [--precision strict|tf32]
#                                [--cache-dir D] [--jobs N]
# The fusegen binary is $FUSEGEN, else build/cli/fusegen, else fusegen on
# PATH. Exits non-zero if any line fails (after running all of them).
set -euo pipefail

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}

(($# >= 1)) || usage
manifest=$1
shift
[[ -f $manifest ]] || { echo "warmup-cache: error: no manifest '$manifest'" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
fusegen=${FUSEGEN:-}
if [[ -z $fusegen ]]; then
  if [[ -x $root/build/cli/fusegen ]]; then fusegen=$root/build/cli/fusegen
  else fusegen=$(command -v fusegen || true); fi
fi
[[ -n $fusegen && -x $fusegen ]] || { echo "warmup-cache: error: no fusegen binary (set FUSEGEN)" >&2; exit 2; }

parallel=$(nproc 2>/dev/null || echo 2)
extra=()
while (($#)); do
  case $1 in
    --arch|--precision|--cache-dir)
      (($# >= 2)) || usage
      extra+=("$1" "$2"); shift 2 ;;
    --jobs)
      (($# >= 2)) || usage
      parallel=$2; shift 2 ;;
    *) echo "warmup-cache: error: unknown option '$1'" >&2; usage ;;
  esac
done
[[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "warmup-cache: error: bad --jobs '$parallel'" >&2; exit 2; }

manifest_dir=$(cd "$(dirname "$manifest")" && pwd)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One background `fusegen warmup` per line, at most $parallel at a time.
lines=()
pids=()
n=0
while IFS= read -r line || [[ -n $line ]]; do
  line=${line%%#*}
  read -r -a words <<<"$line" || true
  ((${#words[@]})) || continue
  spec=${words[0]}
  [[ $spec = /* ]] || spec=$manifest_dir/$spec
  dims=()
  for d in "${words[@]:1}"; do dims+=(--dims "$d"); done
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  "$fusegen" warmup "$spec" "${dims[@]}" "${extra[@]}" >"$logs/$n.log" 2>&1 &
  pids+=($!)
  lines+=("${words[*]}")
  n=$((n + 1))
done <"$manifest"

failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then status=ok; else status=FAILED; failed=$((failed + 1)); fi
  echo "== ${lines[$i]}: $status"
  cat "$logs/$i.log"
done
echo "warmup-cache: ${#pids[@]} specs, $failed failed"
((failed == 0))
