#!/usr/bin/env bash
# Thumbnail benchmark: 10 thumbnails of the remote 10-minute 720p moov-at-end sample with
# `mprobe thumbs --count 10`, with one `ffmpeg -ss T -i URL -frames:v 1` per thumbnail, and with one
# `ffmpeg -skip_frame nokey -i URL -vf fps=1/60` pass; on loopback nginx and through the latency
# proxy (60 ms RTT, 50 Mbit/s): requests, bytes the server sent, wall time.
# Usage: bench/thumbs.sh [--no-proxy-onepass]   (the one-pass run moves 160 MB: ~26 s through the proxy)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
bench_start_large
DURATION=600
TIMES=$(python3 -c "print(' '.join(str(i * $DURATION // 10) for i in range(10)))")

echo "## 10 thumbnails of the 10-minute 720p moov-at-end sample"
echo
echo "| path | tool | requests | bytes sent | wall s | time ÷ mprobe's |"
echo "|---|---|---|---|---|---|"
for path in loopback proxy; do
    port=$NGINX_PORT; [ "$path" = proxy ] && port=$PROXY_PORT
    url="http://127.0.0.1:$port/long-moov-end.mp4"
    rm -rf "$WORK/cache" "$WORK/out"; : > "$NGINX_LOG"
    t_m=$(bench_time sh -c "$M thumbs '$url' --count 10 --out '$WORK/out' --quiet --json --cache-dir '$WORK/cache' > '$WORK/t.json'")
    sleep 0.3
    floor=$(python3 -c "import json; print(json.load(open('$WORK/t.json'))['fetch']['floor_bytes'])")
    echo "| $path | mprobe thumbs --count 10 (floor $floor bytes) | $(bench_log_requests) | $(bench_log_bytes) | $t_m | 1 |"
    : > "$NGINX_LOG"
    t_f=$(bench_time sh -c "for t in $TIMES; do ffmpeg -v error -y -ss \$t -i '$url' -frames:v 1 -s 320x180 '$WORK/f-\$t.jpg'; done")
    sleep 0.3
    echo "| $path | ffmpeg -ss T -i URL -frames:v 1, ×10 | $(bench_log_requests) | $(bench_log_bytes) | $t_f | $(python3 -c "print(f'{$t_f/$t_m:.0f}')")× |"
    if [ "$path" = loopback ] || [ "${1:-}" != "--no-proxy-onepass" ]; then
        : > "$NGINX_LOG"
        t_o=$(bench_time sh -c "ffmpeg -v error -y -skip_frame nokey -i '$url' -vf 'fps=1/60,scale=320:180' -vsync vfr '$WORK/o-%03d.jpg'")
        sleep 0.3
        echo "| $path | ffmpeg -skip_frame nokey -vf fps=1/60 | $(bench_log_requests) | $(bench_log_bytes) | $t_o | $(python3 -c "print(f'{$t_o/$t_m:.0f}')")× |"
    fi
done
