#!/usr/bin/env bash
# Layouts benchmark: what a cold probe, a 10 s prefetch at 300 s and 10 thumbnails cost for each
# layout people serve, from the same 10-minute 720p H.264+AAC recording (Samples/make-large.sh),
# remuxed without re-encoding (the MP3 is its audio, encoded): requests and bytes nginx sent, on
# loopback, against ffprobe on the same origin; and the duration each reports.
#   faststart / moov at end        plain MP4
#   fragmented, mfra / no mfra     -movflags frag_keyframe+empty_moov (+skip_trailer): 300 fragments
#   fragmented with sidx           -movflags dash+global_sidx (one sidx per track, as DASH on demand)
#   Matroska with Cues             ffmpeg's matroska muxer (SeekHead, Cues at the end)
#   Matroska without Cues          written to a pipe, as a browser's MediaRecorder writes WebM
#   MP3 VBR                        libmp3lame -q:a 4 (Xing header), of the tone and of pink noise
#   MPEG-TS                        -f mpegts
# Usage: bench/layouts.sh [JOBS="probe prefetch thumbs"]   (JOBS=none: only make the layouts)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
if [ -n "${MPROBE_BIN:-}" ]; then M=$MPROBE_BIN; else bench_prepare; fi
JOBS=${1:-probe prefetch thumbs}
LARGE=${MPROBE_LARGE_SAMPLES:-$PWD/Samples/large}
Samples/make-large.sh "$LARGE" >&2
SRC="$LARGE/long-moov-end.mp4"
L="$LARGE/layouts"
mkdir -p "$L"
layout() { # NAME FFMPEG-ARGS..., unless made before
    local name=$1; shift
    [ -s "$L/$name" ] && return
    ffmpeg -hide_banner -loglevel error -y -i "$SRC" "$@" "$L/$name.part"
    mv -f "$L/$name.part" "$L/$name"
}
layout frag-mfra.mp4 -c copy -movflags frag_keyframe+empty_moov -f mp4
layout frag-no-mfra.mp4 -c copy -movflags frag_keyframe+empty_moov+skip_trailer -f mp4
layout frag-sidx.mp4 -c copy -movflags dash+global_sidx -f mp4
layout cues.mkv -c copy -f matroska
[ -s "$L/no-cues.mkv" ] || ffmpeg -hide_banner -loglevel error -i "$SRC" -c copy -f matroska - > "$L/no-cues.mkv"
layout vbr.mp3 -vn -c:a libmp3lame -q:a 4 -f mp3
# The recording's tone encodes at 32 kb/s: the same quality setting over stereo pink noise gives a
# music bit rate (140 kb/s).
noise="anoisesrc=c=pink:a=0.2:d=600:r=44100"
[ -s "$L/music.mp3" ] || ffmpeg -hide_banner -loglevel error -filter_complex "$noise:s=1[a];$noise:s=2[b];[a][b]amerge=inputs=2" \
    -c:a libmp3lame -q:a 4 -f mp3 "$L/music.mp3"
layout stream.ts -c copy -f mpegts
ln -sf ../long-faststart.mp4 "$L/faststart.mp4"
ln -sf ../long-moov-end.mp4 "$L/moov-end.mp4"

WORK=$(mktemp -d /tmp/mprobe-bench.XXXXXX)
trap 'bench_stop_nginx; rm -rf "$WORK"' EXIT
bench_start_nginx "$L" "$WORK/nginx"

cost() { sleep 0.3; echo "$(bench_log_requests) $(bench_log_bytes)"; } # nginx logs once a response is sent
mb() { python3 -c "print(f'{$1 / 1e6:.2f}')"; }
# "FLOOR-MB RATIO" of SENT bytes against bench/floor.py JOB ARGS..., "- -" for a layout without an index.
floor_of() {
    local sent=$1 floor; shift
    read -r floor _ < <(python3 bench/floor.py "$@")
    if [ "$floor" = - ]; then echo "- -"; else echo "$(mb "$floor") $(python3 -c "print(f'{$sent / $floor:.2f}')")"; fi
}

FILES="faststart.mp4 moov-end.mp4 frag-mfra.mp4 frag-no-mfra.mp4 frag-sidx.mp4 cues.mkv no-cues.mkv vbr.mp3 music.mp3 stream.ts"
if [[ " $JOBS " == *" probe "* ]]; then
    echo "## Cold probe"
    echo
    echo "The bound (issue 14): 3 requests, and the header and index (bench/floor.py probe) and 256 KiB."
    echo
    echo "| layout | MB | mprobe req | mprobe KB sent | bound KB | ffprobe req | ffprobe MB sent | mprobe duration s | ffprobe duration s |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for f in $FILES; do
        url="http://127.0.0.1:$NGINX_PORT/$f"
        rm -rf "$WORK/cache"; : > "$NGINX_LOG"
        d1=$("$M" probe "$url" --json --cache-dir "$WORK/cache" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("duration"))')
        read -r r1 b1 < <(cost)
        : > "$NGINX_LOG"
        d2=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$url")
        read -r r2 b2 < <(cost)
        read -r header _ < <(python3 bench/floor.py probe "$L/$f")
        echo "| $f | $(mb "$(stat -L -c %s "$L/$f")") | $r1 | $((b1 / 1000)) | $(((header + 262144) / 1000)) | $r2 | $(mb "$b2") | $d1 | $d2 |"
    done
    echo
fi
if [[ " $JOBS " == *" prefetch "* ]]; then
    echo "## Prefetch 10 s at 300 s, against its floor and ffmpeg reading the window"
    echo
    echo "The floor (bench/floor.py): the header and index that place the window, and every packet from"
    echo "the key frame a player starts from to 310 s."
    echo
    echo "| layout | req | MB sent | floor MB | × floor | ffmpeg -ss 300 -t 10 -c copy req | MB sent | what the planner said |"
    echo "|---|---|---|---|---|---|---|---|"
    for f in $FILES; do
        url="http://127.0.0.1:$NGINX_PORT/$f"
        rm -rf "$WORK/cache"; : > "$NGINX_LOG"
        note=$("$M" prefetch "$url" --start 300 --seconds 10 --for ffmpeg --cache-dir "$WORK/cache" 2>&1 | grep -E "^mprobe:" | head -1 | tr '|' '/' || true)
        read -r r1 b1 < <(cost)
        read -r floor ratio < <(floor_of "$b1" prefetch "$L/$f" 300 10)
        : > "$NGINX_LOG"
        ffmpeg -v error -ss 300 -i "$url" -t 10 -c copy -f null - || echo "  (ffmpeg failed for $f)" >&2
        read -r r2 b2 < <(cost)
        echo "| $f | $r1 | $(mb "$b1") | $floor | $ratio | $r2 | $(mb "$b2") | ${note:-from the sample index} |"
    done
    echo
fi
if [[ " $JOBS " == *" thumbs "* ]]; then
    echo "## 10 thumbnails, against their floor and an ffmpeg command per time"
    echo
    echo "The floor (bench/floor.py): the header and index that place the key frames and state the"
    echo "duration, and the packets of the key frames the pictures were decoded from."
    echo
    echo "| layout | req | MB sent | floor MB | × floor | ffmpeg req | ffmpeg MB sent |"
    echo "|---|---|---|---|---|---|---|"
    for f in $FILES; do
        [[ "$f" == *.mp3 ]] && continue
        url="http://127.0.0.1:$NGINX_PORT/$f"
        rm -rf "$WORK/cache" "$WORK/thumbs"; : > "$NGINX_LOG"
        "$M" thumbs "$url" --count 10 --out "$WORK/thumbs" --cache-dir "$WORK/cache" > /dev/null 2>&1 || echo "  (thumbs failed for $f)" >&2
        read -r r1 b1 < <(cost)
        read -r floor ratio < <(floor_of "$b1" thumbs "$L/$f" "$WORK/thumbs/manifest.json")
        # What a thumbnail script does: one ffmpeg per time, seeking on input, at the same times.
        : > "$NGINX_LOG"
        for t in $(python3 -c 'import json,sys; print(" ".join(str(t["time"]) for t in json.load(open(sys.argv[1]))["thumbnails"]))' "$WORK/thumbs/manifest.json"); do
            ffmpeg -v error -ss "$t" -i "$url" -frames:v 1 -vf scale=320:-2 -y "$WORK/ffmpeg.jpg" || echo "  (ffmpeg failed for $f at $t)" >&2
        done
        read -r r2 b2 < <(cost)
        echo "| $f | $r1 | $(mb "$b1") | $floor | $ratio | $r2 | $(mb "$b2") |"
    done
fi
