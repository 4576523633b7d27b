#!/usr/bin/env bash
# What the player profiles cost: the plan (floor bytes: header, window, and what each profile adds)
# of a prefetch at 300 s of the 10-minute 720p recording (Samples/make-large.sh), faststart and moov
# at the end, for a 10 s and a 20 s window, per `--for`, against the plan for libavformat alone.
# Plans only: nothing is fetched but the header. Then the same per player for the HLS and DASH
# packagings of that recording (bench_make_streams), against the window alone. Usage: bench/profiles.sh
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
echo "| file | window | ffmpeg MB | chromium, firefox | vlc | avplayer, exoplayer, gstreamer | all |"
echo "|---|---|---|---|---|---|---|"
for f in long-faststart.mp4 long-moov-end.mp4; do
    for s in 10 20; do
        base=$(floor "$LARGE/$f" "$s" ffmpeg)
        row="| $f | 300 s, +$s | $(python3 -c "print(f'{$base / 1e6:.2f}')")"
        for p in chromium,firefox vlc avplayer,exoplayer,gstreamer all; do
            b=$(floor "$LARGE/$f" "$s" "$p")
            row="$row | $(python3 -c "print(f'{$b / $base:.3f}×')")"
        done
        echo "$row |"
    done
done

# The same for HLS and DASH (bench_make_streams), against the window alone (the played variant's
# segments of the window and their initialization sections: what a prefetch kept before the
# profiles): the bytes of the parts each plan names (whole segments, or their byte ranges), read
# from the files on disk.
bench_make_streams >&2
stream_bytes() { # URL SECONDS FOR [window] -> bytes of the plan, or of its window parts
    "$M" prefetch "$1" --start 300 --seconds "$2" --for "$3" --plan --json --no-cache | python3 -c '
import json, os, sys, urllib.parse
plan = json.load(sys.stdin)
window = len(sys.argv) > 1
def size(part):
    r = part["range"]
    return r["end"] - r["start"] if r else os.path.getsize(urllib.parse.urlparse(part["uri"]).path)
total = 0
for playlist in plan["playlists"]:
    played = any(p["why"] == "window" for p in playlist["parts"])
    for p in playlist["parts"]:
        if not window or p["why"] == "window" or (played and p["why"] == "initialization"):
            total += size(p)
print(total)' ${4:+window}
}
echo
echo "| stream | window | window MB | ffmpeg | chromium | vlc | gstreamer | avplayer | exoplayer | all |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for s in ts/master.m3u8 fmp4/master.m3u8 dash/manifest.mpd; do
    for w in 10 20; do
        base=$(stream_bytes "$S/$s" "$w" all window)
        row="| $s | 300 s, +$w | $(python3 -c "print(f'{$base / 1e6:.2f}')")"
        for p in ffmpeg chromium vlc gstreamer avplayer exoplayer all; do
            b=$(stream_bytes "$S/$s" "$w" "$p")
            row="$row | $(python3 -c "print(f'{$b / $base:.3f}×')")"
        done
        echo "$row |"
    done
done
