#!/usr/bin/env bash
# Load benchmark of `mprobe serve`'s range proxy, beside nginx serving the same file, on loopback.
#
#  1. Cached ranges: wrk with CONNECTIONS connections for SECONDS, each request a random 256 KiB
#     range of a 200 MB file, through the proxy (cache warm) and straight from nginx. Requests/s,
#     MB/s, p50/p99 latency, errors, and the proxy's peak RSS; the proxy as a ratio of nginx.
#  2. Cold players: PLAYERS players start at once on one uncached URL and read its first 64 MB
#     through the proxy; the bytes nginx sent against the 64 MB they all read (shared fetches).
#
# Usage: bench/serve.sh [SECONDS=10] [CONNECTIONS=50] [PLAYERS=20]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
SECONDS_RUN=${1:-10}
CONNECTIONS=${2:-50}
PLAYERS=${3:-20}
command -v wrk >/dev/null || { echo "bench/serve.sh needs wrk (apt-get install wrk)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/mprobe-serve-bench.XXXXXX)
SERVE_PID=""
trap 'bench_stop_nginx; [ -n "$SERVE_PID" ] && kill $SERVE_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/www"
SIZE=$((200 * 1024 * 1024))
head -c "$SIZE" /dev/urandom > "$WORK/www/big.bin"
cp "$WORK/www/big.bin" "$WORK/www/cold.bin"
bench_start_nginx "$WORK/www" "$WORK/nginx"

# wrk's connections all come from one address, which the service would hold to 64 at once.
"$M" serve --listen 127.0.0.1:0 --cache-dir "$WORK/cache" --allow-host "127.0.0.1:$NGINX_PORT" \
    --max-cache-size 2G --max-connections-per-client 0 2> "$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 100); do grep -q "serving on" "$WORK/serve.log" && break; sleep 0.1; done
SERVE_PORT=$(grep -o 'serving on http://127.0.0.1:[0-9]*' "$WORK/serve.log" | grep -o '[0-9]*$')
ORIGIN="http://127.0.0.1:$NGINX_PORT"
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
PROXY_BIG="http://127.0.0.1:$SERVE_PORT/v1/stream?url=$(enc "$ORIGIN/big.bin")"
PROXY_COLD="http://127.0.0.1:$SERVE_PORT/v1/stream?url=$(enc "$ORIGIN/cold.bin")"

# Warm the cache with the whole file, and check it is the origin's.
curl -s "$PROXY_BIG" | cmp - "$WORK/www/big.bin"

cat > "$WORK/ranges.lua" <<LUA
math.randomseed(42)
local size, span = $SIZE, 256 * 1024
request = function()
  local start = math.random(0, size - span)
  return wrk.format("GET", nil, { ["Range"] = "bytes=" .. start .. "-" .. (start + span - 1) })
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.1f %.2f %.2f %d %d\n", summary.requests / (summary.duration / 1e6),
    summary.bytes / (summary.duration / 1e6) / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
    summary.requests))
end
LUA

peak_rss() { awk '/VmHWM/ { print $2 }' "/proc/$SERVE_PID/status"; }
load() { # URL -> "req/s MB/s p50ms p99ms errors requests"
    wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_RUN}s" --latency -s "$WORK/ranges.lua" "$1" | awk '/^RESULT/ { $1 = ""; print }'
}

read -r n_rps n_mbs n_p50 n_p99 n_err n_req <<< "$(load "$ORIGIN/big.bin")"
read -r p_rps p_mbs p_p50 p_p99 p_err p_req <<< "$(load "$PROXY_BIG")"
rss_kib=$(peak_rss)
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo "## Range proxy under load: $CONNECTIONS connections, random 256 KiB ranges of a cached 200 MB file, ${SECONDS_RUN} s"
echo
echo "| server | requests/s | MB/s | p50 ms | p99 ms | errors | requests |"
echo "|---|---|---|---|---|---|---|"
echo "| nginx (direct) | $n_rps | $n_mbs | $n_p50 | $n_p99 | $n_err | $n_req |"
echo "| mprobe serve (/v1/stream) | $p_rps | $p_mbs | $p_p50 | $p_p99 | $p_err | $p_req |"
echo "| proxy ÷ nginx | $(ratio "$p_rps" "$n_rps") | $(ratio "$p_mbs" "$n_mbs") | | | | |"
echo
echo "Peak RSS of mprobe serve: $((rss_kib / 1024)) MiB."
echo

# Cold players: everyone reads the first 64 MB of an uncached URL at once.
: > "$NGINX_LOG"
READ=$((64 * 1024 * 1024))
t0=$(date +%s.%N)
pids=()
for i in $(seq "$PLAYERS"); do
    curl -s -H "Range: bytes=0-$((READ - 1))" "$PROXY_COLD" -o "$WORK/player-$i" &
    pids+=($!)
done
wait "${pids[@]}"
t1=$(date +%s.%N)
sleep 0.5
ok=0
for i in $(seq "$PLAYERS"); do cmp -s -n "$READ" "$WORK/player-$i" "$WORK/www/cold.bin" && [ "$(stat -c %s "$WORK/player-$i")" = "$READ" ] && ok=$((ok + 1)); done
sent=$(bench_log_bytes)
echo "## $PLAYERS players starting cold on one uncached URL (first 64 MB each)"
echo
echo "| players with every byte right | bytes nginx sent | bytes they read (distinct) | origin ÷ distinct | wall s |"
echo "|---|---|---|---|---|"
echo "| $ok / $PLAYERS | $sent | $READ | $(ratio "$sent" "$READ") | $(python3 -c "print(f'{$t1 - $t0:.2f}')") |"
