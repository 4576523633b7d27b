#!/usr/bin/env bash
# Two builds of mprobe side by side, interleaved: the requests and bytes nginx sent for a cold probe,
# a 10 s prefetch at 300 s and 10 thumbnails of each layout of bench/layouts.sh. For a change that
# must not alter what mprobe fetches (a refactor): every row should read the same for both, but for
# readahead that follows timing (MPEG-TS thumbnails vary by a few requests from run to run).
# Usage: bench/compare.sh OLD-BINARY NEW-BINARY   (layouts made by bench/layouts.sh, in
#        $MPROBE_LARGE_SAMPLES/layouts)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
OLD=$1 NEW=$2
L=${MPROBE_LARGE_SAMPLES:-$PWD/Samples/large}/layouts
[ -s "$L/stream.ts" ] || { echo "no layouts in $L: run bench/layouts.sh first" >&2; exit 2; }
WORK=$(mktemp -d /tmp/mprobe-compare.XXXXXX)
trap 'bench_stop_nginx; rm -rf "$WORK"' EXIT
bench_start_nginx "$L" "$WORK/nginx"
echo "| job | layout | old requests | old bytes | new requests | new bytes |"
echo "|---|---|---|---|---|---|"
for job in probe prefetch thumbs; do
    for f in faststart.mp4 moov-end.mp4 frag-mfra.mp4 frag-no-mfra.mp4 frag-sidx.mp4 cues.mkv no-cues.mkv vbr.mp3 music.mp3 stream.ts; do
        [ "$job" = thumbs ] && [[ $f == *.mp3 ]] && continue
        row="| $job | $f"
        for M in "$OLD" "$NEW"; do
            url="http://127.0.0.1:$NGINX_PORT/$f"
            rm -rf "$WORK/cache" "$WORK/thumbs"; : > "$NGINX_LOG"
            case $job in
                probe) "$M" probe "$url" --json --cache-dir "$WORK/cache" > /dev/null 2>&1 || true ;;
                prefetch) "$M" prefetch "$url" --start 300 --seconds 10 --cache-dir "$WORK/cache" > /dev/null 2>&1 || true ;;
                thumbs) "$M" thumbs "$url" --count 10 --out "$WORK/thumbs" --cache-dir "$WORK/cache" > /dev/null 2>&1 || true ;;
            esac
            sleep 0.3 # nginx logs a request once its response is sent
            row="$row | $(bench_log_requests) | $(bench_log_bytes)"
        done
        echo "$row |"
    done
done
