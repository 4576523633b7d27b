#!/usr/bin/env bash
# Probe benchmark: mprobe vs ffprobe on the same nginx, cold, for the 10-minute 720p samples
# (faststart and moov at the end; made by Samples/make-large.sh), directly on loopback and through
# bench/latency_proxy.py (60 ms RTT, 50 Mbit/s). Reports requests and bytes the server sent (from
# nginx's log, $body_bytes_sent) and wall time. Then a local batch: N files probed by one
# `mprobe probe -j 4` against one ffprobe process per file.
# Usage: bench/probe.sh [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
ROUNDS=${1:-3}
bench_start_large

run() { # NAME PORT FILE TOOL -> prints a table row
    local port=$2 file=$3 tool=$4 url="http://127.0.0.1:$2/$3" t
    rm -rf "$WORK/cache"; : > "$NGINX_LOG"
    if [ "$tool" = mprobe ]; then
        t=$(bench_time sh -c "$M probe '$url' --json --cache-dir '$WORK/cache' > '$WORK/out.json'")
    else
        t=$(bench_time sh -c "ffprobe -v error -show_format -show_streams '$url' > '$WORK/out.txt'")
    fi
    sleep 0.3 # nginx logs a request when its connection finishes sending
    echo "$t $(bench_log_requests) $(bench_log_bytes)"
}

echo "## Cold probe of a 10-minute 720p H.264+AAC MP4 ($(($(stat -c %s "$LARGE/long-faststart.mp4") / 1000000)) MB)"
echo
echo "| file | path | tool | requests | bytes sent | wall s (median of $ROUNDS) | mprobe ÷ ffprobe time |"
echo "|---|---|---|---|---|---|---|"
for file in long-faststart.mp4 long-moov-end.mp4; do
    for path in loopback proxy; do
        port=$NGINX_PORT; [ "$path" = proxy ] && port=$PROXY_PORT
        declare -A med=()
        for tool in ffprobe mprobe; do
            times=(); last=""
            for _ in $(seq "$ROUNDS"); do
                last=$(run x "$port" "$file" "$tool"); times+=("${last%% *}")
            done
            med[$tool]=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p")
            set -- $last
            rows+=("$file|$path|$tool|$2|$3|${med[$tool]}")
        done
        ratio=$(python3 -c "print(f'{${med[mprobe]}/${med[ffprobe]}:.2f}')")
        for r in "${rows[@]}"; do
            IFS='|' read -r f p tl rq by tm <<< "$r"
            [ "$tl" = mprobe ] && extra=$ratio || extra=""
            echo "| $f | $p | $tl | $rq | $by | $tm | $extra |"
        done
        rows=()
    done
done

# Local batch: the corpus files ffprobe reads (or the samples), one mprobe process vs one ffprobe per file.
CORPUS=${MPROBE_CORPUS:-$PWD/Tests/Corpus}
mapfile -t files < <(awk -F'\t' -v d="$CORPUS" 'NR > 1 && $9 == "0" { print d "/" $1 }' "$CORPUS/MANIFEST.tsv" 2>/dev/null)
[ "${#files[@]}" -gt 0 ] || files=(Samples/*.mp4 Samples/*.webm Samples/*.mp3)
printf '%s\n' "${files[@]}" > "$WORK/list.txt"
n=${#files[@]}
t_m=$(bench_time sh -c "$M probe -j 4 -i '$WORK/list.txt' --json > /dev/null")
t_f=$(bench_time sh -c "while read -r f; do ffprobe -v error -show_format -show_streams \"\$f\" > /dev/null; done < '$WORK/list.txt'")
echo
echo "## Local batch: $n files"
echo
echo "| tool | wall s | files/s | ratio |"
echo "|---|---|---|---|"
echo "| ffprobe, one process per file | $t_f | $(python3 -c "print(f'{$n/$t_f:.0f}')") | 1 |"
echo "| mprobe probe -j 4 -i LIST | $t_m | $(python3 -c "print(f'{$n/$t_m:.0f}')") | $(python3 -c "print(f'{$t_f/$t_m:.1f}')")× |"
