#!/usr/bin/env bash
# Prefetch benchmark: `mprobe prefetch --seconds 10 --for ffmpeg` (the plan for libavformat, which
# the floor models) of the 10-minute moov-at-end sample at T=0 and T=300, cold, on loopback nginx and through the latency proxy (60 ms RTT, 50 Mbit/s); requests and
# bytes the server sent against the plan's floor (header libavformat reads + the window's samples)
# and merged ranges; and `ffmpeg -ss T -t 10 -i URL -f null -` over the same link for comparison.
# Usage: bench/prefetch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
bench_start_large

echo "## Prefetch 10 s of the 10-minute 720p moov-at-end sample (cold cache)"
echo
echo "| start | path | tool | requests | merged ranges | bytes sent | floor bytes | sent ÷ floor | wall s |"
echo "|---|---|---|---|---|---|---|---|---|"
for start in 0 300; do
    for path in loopback proxy; do
        port=$NGINX_PORT; [ "$path" = proxy ] && port=$PROXY_PORT
        url="http://127.0.0.1:$port/long-moov-end.mp4"
        rm -rf "$WORK/cache"; : > "$NGINX_LOG"
        t=$(bench_time sh -c "$M prefetch '$url' --start $start --seconds 10 --for ffmpeg --json --quiet --cache-dir '$WORK/cache' > '$WORK/p.json'")
        sleep 0.3
        read -r floor merged < <(python3 -c "import json; p=json.load(open('$WORK/p.json')); print(p['floor_bytes'], len(p['sample_ranges']))")
        sent=$(bench_log_bytes)
        echo "| $start | $path | mprobe prefetch | $(bench_log_requests) | $merged | $sent | $floor | $(python3 -c "print(f'{$sent/$floor:.2f}')") | $t |"
        : > "$NGINX_LOG"
        t=$(bench_time sh -c "ffmpeg -v error -ss $start -t 10 -i '$url' -f null - 2>/dev/null")
        sleep 0.3
        echo "| $start | $path | ffmpeg -ss T -t 10 -f null | $(bench_log_requests) | | $(bench_log_bytes) | | | $t |"
    done
done
