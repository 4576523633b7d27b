#!/usr/bin/env bash
# Start time, measured: each player's seconds from its start to its first frame at T = 300 s of the
# 10-minute 720p recording (MP4 faststart, MP4 with the moov at the end, HLS with MPEG-TS segments),
# (a) from the local file, (b) straight from the origin through bench/latency_proxy.py (60 ms RTT,
# 50 Mbit/s), (c) through `mprobe serve` with a cold cache, (d) through `mprobe serve` after a
# prefetch job of [300 s, +20) (the default plan, for every player), with the origin's requests
# during (d) counted. Best of ROUNDS; the columns of a row run one after another, players interleaved.
#
# Usage: bench/players.sh [ROUNDS=3] [PLAYERS="ffmpeg mpv vlc gstreamer chromium"]
#        (MPROBE_BIN=path: that binary, no build)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
if [ -n "${MPROBE_BIN:-}" ]; then M=$MPROBE_BIN; else bench_prepare; fi
ROUNDS=${1:-3}
PLAYERS=${2:-ffmpeg mpv vlc gstreamer chromium}
T=300
bench_start_origin
bench_make_streams
bench_start_proxy 60 50
SERVE_PID=""
trap 'bench_stop_nginx; kill $PROXY_PID $SERVE_PID 2>/dev/null; rm -rf "$WORK"' EXIT

serve_start() { # a fresh cache each time -> SERVE (base URL)
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rm -rf "$WORK/serve-cache"
    "$M" serve --listen "127.0.0.1:$port" --allow-host 127.0.0.1 --cache-dir "$WORK/serve-cache" 2> "$WORK/serve.log" &
    SERVE_PID=$!
    SERVE="http://127.0.0.1:$port"
    for _ in $(seq 100); do curl -sf "$SERVE/healthz" > /dev/null && return; sleep 0.05; done
    echo "mprobe serve did not start: $(cat "$WORK/serve.log")" >&2; exit 1
}
serve_stop() { kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=""; }
stream_url() { echo "$SERVE/v1/stream?url=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")"; }
prefetch() { # ORIGIN-URL: a prefetch job of [T, +20), waited for
    local id state
    id=$(curl -sf -H 'Content-Type: application/json' -d "{\"type\":\"prefetch\",\"url\":\"$1\",\"start\":$T,\"seconds\":20}" \
        "$SERVE/v1/jobs" | jq -r .id)
    for _ in $(seq 1200); do
        state=$(curl -sf "$SERVE/v1/jobs/$id" | jq -r .state)
        [ "$state" = done ] && return
        [ "$state" = failed ] && { echo "prefetch job failed: $(curl -sf "$SERVE/v1/jobs/$id")" >&2; exit 1; }
        sleep 0.1
    done
    echo "prefetch job did not end" >&2; exit 1
}
play() { python3 bench/players.py "$1" "$T" "$2"; }
best() { python3 -c '
import sys
times = [float(t) for t in sys.argv[1:] if not t.startswith("failed")]
failed = [t.replace("_", " ") for t in sys.argv[1:] if t.startswith("failed")]
print(f"{min(times):.2f}" + (f" ({len(failed)} failed)" if failed else "") if times else failed[0])' "$@"; }

echo "## Seconds to the first frame at $T s; origin through 60 ms RTT, 50 Mbit/s; best of $ROUNDS"
echo
echo "| input | player | local file | origin | mprobe cold | mprobe prefetched | origin requests while prefetched plays |"
echo "|---|---|---|---|---|---|---|"
for input in long-faststart.mp4 long-moov-end.mp4 streams/ts/master.m3u8; do
    origin="http://127.0.0.1:$PROXY_PORT/$input"
    declare -A local_t=() origin_t=() cold_t=() warm_t=() warm_req=()
    for round in $(seq "$ROUNDS"); do
        for p in $PLAYERS; do
            local_t[$p]+=" $(play "$p" "$LARGE/$input" | tr ' ' '_')"
            origin_t[$p]+=" $(play "$p" "$origin" | tr ' ' '_')"
            serve_start
            cold_t[$p]+=" $(play "$p" "$(stream_url "$origin")" | tr ' ' '_')"
            serve_stop
            serve_start
            prefetch "$origin"
            before=$(bench_log_requests)
            warm_t[$p]+=" $(play "$p" "$(stream_url "$origin")" | tr ' ' '_')"
            warm_req[$p]+=" $(($(bench_log_requests) - before))"
            serve_stop
        done
    done
    for p in $PLAYERS; do
        # shellcheck disable=SC2086
        echo "| $input | $p | $(best ${local_t[$p]}) | $(best ${origin_t[$p]}) | $(best ${cold_t[$p]}) | $(best ${warm_t[$p]}) | $(echo ${warm_req[$p]} | tr ' ' ',') |"
    done
done
