#!/usr/bin/env bash
# Two builds of mprobe side by side: what each prints (JSON, timings and paths left out) for plans
# at 0, 300 and 590 s, a prefetch and an offline check of it, and thumbnails (--count, --at with a
# time past the end, --accurate, --skip-black), of every layout of bench/layouts.sh, as a file and
# through nginx. For a change that must not alter what mprobe does (a refactor): every line should
# read "same". Header ranges of a plan over HTTP may differ by a readahead block from run to run
# (what libavformat read depends on what had arrived): rerun a row that differs only there.
# Usage: bench/compare-outputs.sh OLD-BINARY NEW-BINARY   (outputs kept in $OUT, default a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
command -v jq > /dev/null || { echo "bench/compare-outputs.sh needs jq (apt-get install jq)" >&2; exit 2; }
OLD=$1 NEW=$2
L=${MPROBE_LARGE_SAMPLES:-$PWD/Samples/large}/layouts
[ -s "$L/stream.ts" ] || { echo "no layouts in $L: run bench/layouts.sh first" >&2; exit 2; }
WORK=$(mktemp -d /tmp/mprobe-compare.XXXXXX)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
trap 'bench_stop_nginx; rm -rf "$WORK/c"' EXIT
bench_start_nginx "$L" "$WORK/nginx"
norm() { jq -S 'walk(if type == "object" then with_entries(select(.key | test("seconds|elapsed|^dir$"; "i") | not)) else . end)' 2>/dev/null || true; }
for f in faststart.mp4 moov-end.mp4 frag-mfra.mp4 frag-no-mfra.mp4 frag-sidx.mp4 cues.mkv no-cues.mkv vbr.mp3 music.mp3 stream.ts; do
    for src in url file; do
        if [ $src = url ]; then in="http://127.0.0.1:$NGINX_PORT/$f"; else in="$L/$f"; fi
        for M in "$OLD" "$NEW"; do
            [ "$M" = "$OLD" ] && tag=old || tag=new
            C="$WORK/c"; rm -rf "$C"
            run() { echo "## $*"; "$M" "$@" --json --cache-dir "$C" 2>/dev/null | norm || true; }
            {
                run prefetch "$in" --start 300 --seconds 10 --plan
                run prefetch "$in" --start 0 --seconds 5 --plan
                run prefetch "$in" --start 590 --seconds 30 --plan
                run prefetch "$in" --start 120 --seconds 8
                run check "$in" --start 120 --seconds 8 --offline
                if [[ $f != *.mp3 ]]; then
                    run thumbs "$in" --count 10 --out "$C/t1"
                    run thumbs "$in" --at 0,4,99.5,333,700 --out "$C/t2"
                    run thumbs "$in" --at 4.2,250.7 --accurate --out "$C/t3"
                    run thumbs "$in" --count 5 --skip-black --out "$C/t4"
                fi
            } > "$OUT/$f.$src.$tag"
        done
        if cmp -s "$OUT/$f.$src.old" "$OUT/$f.$src.new"; then echo "same  $f $src"; else echo "DIFF  $f $src ($OUT/$f.$src.old .new)"; fi
    done
done
