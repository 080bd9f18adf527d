#!/usr/bin/env bash
# The remote kernel cache's figures on this host (bench/results/remote-cache.md):
# starts a redis-server on a free localhost port (no persistence, a temporary
# directory) and a fleet key, then
#   1. fusegen_bench_remote_cache: a fresh process's prepare from the store
#      per fusion, and what a dead store adds to a process;
#   2. a fleet: N `fusegen warmup` processes, each with its own empty disk
#      cache, started at once on the same M keys; the compiles they report,
#      added up (then again with FUSEGEN_REMOTE_CACHE_WAIT_MS=0, i.e. without
#      waiting for each other, for contrast).
# Stops the server on exit. Usage: bench/remote_cache.sh [BUILD_DIR] [REPEAT] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
repeat=${2:-9}
fleet=${3:-32}
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize no \
  --loglevel warning >"$work/redis.log" 2>&1 &
server=$!
trap 'kill -CONT $server 2>/dev/null; kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
url=redis://127.0.0.1:$port
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/fleet.key"
chmod 600 "$work/fleet.key"
export FUSEGEN_CACHE_KEY_FILE=$work/fleet.key

"$build/bench/fusegen_bench_remote_cache" --remote "$url" --key-file "$work/fleet.key" --server-pid "$server" \
  --repeat "$repeat"

# The fleet: M = 8 keys (the elementwise test fusion at 8 batch sizes).
cat >"$work/act.fg" <<'SPEC'
fusion scale_relu {
  input x : f32[N, 64]
  param s : f32[64]
  h = relu(x * s)
  output y = h + 1.0
}
SPEC
run_fleet() { # $1: extra environment; prints the total compiles
  redis-cli -p "$port" flushall >/dev/null
  local pids=()
  for i in $(seq "$fleet"); do
    mkdir -p "$work/fleet-$i" && chmod 700 "$work/fleet-$i"
    env $1 FUSEGEN_CACHE_DIR="$work/fleet-$i" FUSEGEN_REMOTE_CACHE="$url" FUSEGEN_REMOTE_CACHE_TIMEOUT_MS=2000 \
      "$build/cli/fusegen" warmup "$work/act.fg" --dims N=8,16,24,32,40,48,56,64 >"$work/fleet-$i.out" 2>&1 &
    pids+=($!)
  done
  local failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  local compiled
  compiled=$(cat "$work"/fleet-*.out | awk '/^[0-9]+ compiled,/ { total += $1 } END { print total + 0 }')
  rm -rf "$work"/fleet-*
  echo "$compiled compiles, $failed failed processes"
}
start=$SECONDS
with=$(run_fleet "FUSEGEN_REMOTE_CACHE_WAIT_MS=120000")
took=$((SECONDS - start))
without=$(run_fleet "FUSEGEN_REMOTE_CACHE_WAIT_MS=0")
echo "fleet of $fleet processes x 8 keys, each with its own disk cache:"
echo "  single flight: $with (${took} s)"
echo "  no waiting (FUSEGEN_REMOTE_CACHE_WAIT_MS=0): $without"
