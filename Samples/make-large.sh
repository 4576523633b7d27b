#!/usr/bin/env bash
# Makes the larger test media that are not committed: a 10-minute 720p H.264+AAC MP4 with the
# moov at the end and a faststart copy (used by benchmarks), in Samples/large/ by default.
#   Samples/make-large.sh [OUT_DIR] [SECONDS]
set -euo pipefail
out="${1:-$(dirname "$0")/large}"
seconds="${2:-600}"
mkdir -p "$out"
if [ ! -s "$out/long-moov-end.mp4" ]; then
    ffmpeg -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -t "$seconds" -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -b:v 2000k -maxrate 2000k -bufsize 4000k \
        -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "$out/long-moov-end.mp4"
fi
if [ ! -s "$out/long-faststart.mp4" ]; then
    ffmpeg -hide_banner -loglevel error -y -i "$out/long-moov-end.mp4" -c copy -movflags +faststart "$out/long-faststart.mp4"
fi
ls -l "$out"
