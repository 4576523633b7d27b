#!/usr/bin/env bash
# Latency benchmark: how close each job gets to what the link allows, against the tool a user
# would pick today, through bench/latency_proxy.py --shared (one bottleneck link for all
# connections, a round trip per new connection, abandoned bytes still cost link time), on the
# 10-minute 720p samples of Samples/make-large.sh. Cold cache, best of ROUNDS, for three links.
#
# The floor of a job on a link of round-trip time r and bandwidth B is
#     connect (r) + the round trips the job cannot avoid (r each) + the bytes it needs ÷ B
# with the bytes from mprobe's own report (`floor_bytes`: what libavformat read, and the samples);
# round trips: probe, moov at front 1 (the header); moov at end 2 (find the moov, fetch it);
# thumbnails 3 (find the moov, fetch it, one wave of key frames); prefetch 3 (the same, the window
# as the wave). "− start-up" takes the time a demuxing mprobe needs before its first request
# (a local probe of a small sample) off mprobe's time before it is compared with the floor.
#
# Usage: bench/latency.sh [ROUNDS=3] [LINKS="60/50 20/200 150/10"] [JOBS="probe thumbs prefetch"]
#        (links as RTT ms / Mbit/s)
#        MPROBE_BIN=path uses that binary instead of building one; MPROBE_BEFORE=path also times
#        that one (an earlier build) in the same run, in a "before" column.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
if [ -n "${MPROBE_BIN:-}" ]; then M=$MPROBE_BIN; else bench_prepare; fi
ROUNDS=${1:-3}
LINKS=${2:-"60/50 20/200 150/10"}
JOBS=${3:-"probe thumbs prefetch"}
QUEUE=$((4 << 20))
bench_start_origin
DURATION=600
TIMES=$(python3 -c "print(' '.join(str(i * $DURATION // 10) for i in range(10)))")
SMALL=$PWD/Samples/faststart.mp4

best() { printf '%s\n' "$@" | sort -n | head -1; }
calc() { python3 -c "print(f'{$1:.${2:-3}f}')"; }

# Start-up: the best of 15 runs each.
startup() { # CMD... -> best wall seconds
    local times=()
    for _ in $(seq 15); do times+=("$(bench_time sh -c "$* > /dev/null 2>&1 || true")"); done
    best "${times[@]}"
}
S_HELP=$(startup "$M" --help)
S_EMPTY=$(startup "$M")
S_CACHE=$(startup "$M" cache stats --cache-dir "$WORK/startup-cache")
S_DEMUX=$(startup "$M" probe --fast "$SMALL" --json)
S_FFPROBE=$(startup ffprobe -version)
S_FFPROBE_LOCAL=$(startup ffprobe -v error -show_format -show_streams "$SMALL")
echo "## Start-up (best of 15)"
echo
echo "| command | wall s |"
echo "|---|---|"
echo "| mprobe --help | $S_HELP |"
echo "| mprobe (no arguments: usage, exit 2) | $S_EMPTY |"
echo "| mprobe cache stats | $S_CACHE |"
echo "| mprobe probe --fast (local ${SMALL##*/}): start-up of a demuxing run | $S_DEMUX |"
echo "| ffprobe -version | $S_FFPROBE |"
echo "| ffprobe -show_format -show_streams (local ${SMALL##*/}) | $S_FFPROBE_LOCAL |"
echo

for link in $LINKS; do
    rtt=${link%/*} mbit=${link#*/}
    bench_start_proxy "$rtt" "$mbit" --shared --queue "$QUEUE" --status "$WORK/link-busy"
    r=$(calc "$rtt / 1000" 4)
    bw=$(calc "$mbit * 1e6 / 8" 0)
    SETTLE=$(calc "2 * $r + 0.2" 2)
    base="http://127.0.0.1:$PROXY_PORT"
    echo "## ${rtt} ms RTT, ${mbit} Mbit/s (shared link, ${QUEUE} bytes may be in flight per connection)"
    echo
    before_head="" before_rule=""
    [ -n "${MPROBE_BEFORE:-}" ] && before_head=" before s | req | bytes sent |" before_rule="---|---|---|"
    echo "| job |$before_head mprobe s | req | bytes sent | peer | peer s | req | bytes sent | floor s (bytes) | mprobe ÷ peer | (mprobe − start-up) ÷ floor |"
    echo "|---|$before_rule---|---|---|---|---|---|---|---|---|---|"
    # The row's "before" cells: the same command with MPROBE_BEFORE's binary.
    before() { # SHELL-COMMAND USING $BIN
        [ -n "${MPROBE_BEFORE:-}" ] || return 0
        local b=($(bench_best_of "BIN='$MPROBE_BEFORE'; $1"))
        echo " ${b[0]} | ${b[1]} | ${b[2]} |"
    }
    row() { # JOB M_LINE PEER PEER_LINE FLOOR_ROUND_TRIPS FLOOR_BYTES [BEFORE_CELLS]
        local m=($2) p=($4) floor
        floor=$(calc "($5 + 1) * $r + $6 / $bw")
        local peer_s=${p[0]:-} vs_peer="" peer_cols="| | |"
        if [ -n "$peer_s" ]; then
            vs_peer=$(calc "${m[0]} / $peer_s" 2)
            peer_cols="| ${p[1]} | ${p[2]} |"
        else
            peer_s=$floor; vs_peer=$(calc "${m[0]} / $floor" 2)
        fi
        echo "| $1 |${7:-} ${m[0]} | ${m[1]} | ${m[2]} | $3 | $peer_s $peer_cols $floor ($6) | $vs_peer | $(calc "(${m[0]} - $S_DEMUX) / $floor" 2) |"
    }
    # Each job as a command of $BIN; the floor's bytes come from mprobe's own report.
    job() { # JOB-COMMAND REPORT FLOOR-KEY...
        local m b fb
        m=$(bench_best_of "BIN='$M'; $1")
        fb=$(python3 -c "import json; d=json.load(open('$2')); print(d$3)")
        b=$(before "$1")
        echo "$m|$fb|$b"
    }
    for file in long-faststart.mp4 long-moov-end.mp4; do
        [[ " $JOBS " == *" probe "* ]] || break
        url="$base/$file"
        IFS='|' read -r m fb b <<< "$(job "\$BIN probe '$url' --json --cache-dir '$WORK/cache' > '$WORK/p.json'" "$WORK/p.json" "['fetch']['floor_bytes']")"
        p=$(bench_best_of "ffprobe -v error -show_format -show_streams '$url' > /dev/null")
        if [ "$file" = long-faststart.mp4 ]; then row "probe, moov at front" "$m" ffprobe "$p" 1 "$fb" "$b"
        else row "probe, moov at end" "$m" ffprobe "$p" 2 "$fb" "$b"; fi
    done
    url="$base/long-moov-end.mp4"
    if [[ " $JOBS " == *" thumbs "* ]]; then
        IFS='|' read -r m fb b <<< "$(job "\$BIN thumbs '$url' --count 10 --out '$WORK/out' --quiet --json --cache-dir '$WORK/cache' > '$WORK/t.json'" "$WORK/t.json" "['fetch']['floor_bytes']")"
        p=$(bench_best_of "mkdir -p '$WORK/out'; for t in $TIMES; do ffmpeg -v error -y -ss \$t -i '$url' -frames:v 1 -s 320x180 '$WORK/out/f-\$t.jpg'; done")
        row "10 thumbnails, moov at end" "$m" "ffmpeg -ss T -frames:v 1 ×10" "$p" 3 "$fb" "$b"
    fi
    for start in 0 300; do
        [[ " $JOBS " == *" prefetch "* ]] || break
        IFS='|' read -r m fb b <<< "$(job "\$BIN prefetch '$url' --start $start --seconds 10 --for ffmpeg --json --quiet --cache-dir '$WORK/cache' > '$WORK/f.json'" "$WORK/f.json" "['floor_bytes']")"
        row "prefetch 10 s at $start s, moov at end" "$m" "the floor" "" 3 "$fb" "$b"
    done
    echo
    bench_stop_proxy
done
