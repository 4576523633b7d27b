#!/usr/bin/env bash
# Streams benchmark (HLS and DASH): the 10-minute 720p recording of Samples/make-large.sh packaged
# as people serve it — HLS with MPEG-TS segments, HLS with fMP4 segments, DASH (SegmentTemplate
# with a timeline) — each with two video variants (720p as recorded, a 360p encode) and 4 s
# segments. A cold probe, a prefetch of 10 s at 300 s and 10 thumbnails, mprobe against ffprobe
# and ffmpeg (`-ss T -i URL`) on the same origin, through bench/latency_proxy.py (60 ms RTT,
# 50 Mbit/s, one shared link): wall seconds, requests and bytes nginx sent; best of ROUNDS.
#
# Usage: bench/streams.sh [ROUNDS=3] [LINK=60/50] [JOBS="probe prefetch thumbs"]
#        (MPROBE_BIN=path: that binary, no build)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
if [ -n "${MPROBE_BIN:-}" ]; then M=$MPROBE_BIN; else bench_prepare; fi
ROUNDS=${1:-3}
LINK=${2:-60/50}
JOBS=${3:-probe prefetch thumbs}
bench_start_origin
bench_make_streams
rtt=${LINK%/*} mbit=${LINK#*/}
bench_start_proxy "$rtt" "$mbit" --shared --queue $((4 << 20)) --status "$WORK/link-busy"
SETTLE=$(python3 -c "print(f'{2 * $rtt / 1000 + 0.2:.2f}')")
base="http://127.0.0.1:$PROXY_PORT/streams"
TIMES=$(python3 -c "print(' '.join(str(i * 60) for i in range(10)))")
mb() { python3 -c "print(f'{$1 / 1e6:.2f}')"; }
row() { # STREAM JOB M_LINE PEER P_LINE
    local m=($3) p=($5)
    echo "| $1 | $2 | ${m[0]} | ${m[1]} | $(mb "${m[2]}") | $4 | ${p[0]} | ${p[1]} | $(mb "${p[2]}") | $(python3 -c "print(f'{${m[0]} / ${p[0]}:.2f}')") |"
}

echo "## ${rtt} ms RTT, ${mbit} Mbit/s, shared link; best of $ROUNDS, cold cache"
echo
echo "| stream | job | mprobe s | req | MB sent | peer | peer s | req | MB sent | mprobe ÷ peer |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for stream in ts/master.m3u8 fmp4/master.m3u8 dash/manifest.mpd; do
    url="$base/$stream"
    if [[ " $JOBS " == *" probe "* ]]; then
        row "$stream" probe "$(bench_best_of "'$M' '$url' --cache-dir '$WORK/cache' > /dev/null")" \
            "ffprobe" "$(bench_best_of "ffprobe -v error -show_format -show_streams '$url' > /dev/null")"
    fi
    if [[ " $JOBS " == *" prefetch "* ]]; then
        row "$stream" "prefetch 10 s at 300 s" \
            "$(bench_best_of "'$M' prefetch '$url' --start 300 --seconds 10 --quiet --cache-dir '$WORK/cache' > /dev/null")" \
            "ffmpeg -ss 300 -t 10 -c copy" \
            "$(bench_best_of "ffmpeg -v error -ss 300 -i '$url' -t 10 -map 0:v:0 -map 0:a:0 -c copy -f null - ")"
    fi
    if [[ " $JOBS " == *" thumbs "* ]]; then
        row "$stream" "10 thumbnails" \
            "$(bench_best_of "'$M' thumbs '$url' --count 10 --out '$WORK/out' --cache-dir '$WORK/cache' > /dev/null")" \
            "ffmpeg -ss T -frames:v 1, ×10" \
            "$(bench_best_of "mkdir -p '$WORK/out'; for t in $TIMES; do ffmpeg -v error -y -ss \$t -i '$url' -frames:v 1 -s 320x180 '$WORK/out/f-\$t.jpg'; done")"
    fi
done
