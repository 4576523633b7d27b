#!/usr/bin/env bash
# What the player profiles cost: the plan (floor bytes: header, window, and what each profile adds)
# of a prefetch at 300 s of the 10-minute 720p recording (Samples/make-large.sh), faststart and moov
# at the end, for a 10 s and a 20 s window, per `--for`, against the plan for libavformat alone.
# Plans only: nothing is fetched but the header. Usage: bench/profiles.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
command -v jq > /dev/null || { echo "bench/profiles.sh needs jq (apt-get install jq)" >&2; exit 2; }
if [ -n "${MPROBE_BIN:-}" ]; then M=$MPROBE_BIN; else bench_prepare; fi
LARGE=${MPROBE_LARGE_SAMPLES:-$PWD/Samples/large}
Samples/make-large.sh "$LARGE" >&2
WORK=$(mktemp -d /tmp/mprobe-profiles.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
floor() { "$M" prefetch "$1" --start 300 --seconds "$2" --for "$3" --plan --json --cache-dir "$WORK/cache" | jq .floor_bytes; }
echo "| file | window | ffmpeg MB | chromium | vlc | avplayer, exoplayer, gstreamer | all |"
echo "|---|---|---|---|---|---|---|"
for f in long-faststart.mp4 long-moov-end.mp4; do
    for s in 10 20; do
        base=$(floor "$LARGE/$f" "$s" ffmpeg)
        row="| $f | 300 s, +$s | $(python3 -c "print(f'{$base / 1e6:.2f}')")"
        for p in chromium vlc avplayer,exoplayer,gstreamer all; do
            b=$(floor "$LARGE/$f" "$s" "$p")
            row="$row | $(python3 -c "print(f'{$b / $base:.3f}×')")"
        done
        echo "$row |"
    done
done
