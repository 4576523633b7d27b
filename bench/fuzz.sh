#!/usr/bin/env bash
# Mutation fuzzing of the mprobe binary: crashes, hangs, memory blow-ups and unclear errors.
# The mutator and the bookkeeping are in bench/fuzz.py; docs/reliability.md has the method and results.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: bench/fuzz.sh [options]

Mutates the corpus (Tests/Corpus/files) and the samples (Samples/) -- bit flips, truncation,
box size rewrites (32-bit 0/1/huge, 64-bit), huge entry counts in the sample tables and edit
lists, duplicated/removed/swapped boxes -- and runs mprobe's probe, thumbs, prefetch and check
on every mutant, from the local file and over HTTP from nginx on 127.0.0.1. Each run has a
timeout and its peak RSS measured, and is classified:

  ok        exit 0
  error     exit 2..6 with one clear line on stderr
  unclear   an error exit whose stderr is a raw Foundation/NSError or Swift value, an FFmpeg
            error without explanation, FFmpeg log lines, several lines, no line; or exit 1/130
  CRASH     killed by a signal (exit >= 128, except 130)
  HANG      still running at the timeout
  HUGE      peak RSS above the bound, or an allocation refused under the address-space cap

Results go to the results folder: summary.md (counts per class and command), failures.md
(each failure class with seed, case, mutation, stderr and replay command lines), runs.tsv
(every run), inputs/ (the mutants that failed) and stderr/. The exit status is 1 when any
CRASH, HANG or HUGE happened, 0 otherwise (unclear errors are reported, not fatal).

Options:
  -n, --inputs N        mutated inputs to make and run (default 20)
  --seed S              seed (default: random, printed); case I of seed S is always the same file
  --case I              run only case I of the seed (replay)
  --first I             number of the first case (default 0), to continue a campaign
  --sources REGEX       focus: mutate only the seed files whose path matches (e.g. 'frag|sidx');
                        a case is then defined by seed, number and this pattern
  --replay FILE         run the commands on FILE as it is (a saved mutant), no mutation
  --timeout SEC         per run (default 20)
  --commands LIST       comma list of probe,thumbs,prefetch,check (default all four)
  --modes LIST          comma list of local,http (default both)
  --binary PATH         mprobe to test (default: .build/release/mprobe, built if needed)
  --jobs J              runs at once (default 2)
  --rss-limit MB        HUGE above this peak RSS (default 2048)
  --vm-limit MB         address-space cap per run, protects the machine (default 8192)
  --results DIR         results folder (default fuzz-results/seed-S)
  --keep                keep the work folder (mutants, nginx config) for inspection
  -h, --help            this help

Examples:
  bench/fuzz.sh                                  # quick: 20 inputs x 4 commands x 2 = 160 runs
  bench/fuzz.sh -n 2000 --seed 1 --jobs 2        # a campaign
  bench/fuzz.sh --seed 1 --case 17 --commands thumbs --modes http   # replay one run
  bench/fuzz.sh -n 1000 --seed 2 --sources 'frag|sidx|m4s'           # fragmented files only
EOF
}

cd "$(dirname "$0")/.."
ROOT=$PWD

INPUTS=20 SEED="" SOURCES="" CASE="" FIRST=0 REPLAY="" TIMEOUT=20 COMMANDS=probe,thumbs,prefetch,check MODES=local,http
BIN="" JOBS=2 RSS_LIMIT=2048 VM_LIMIT=8192 RESULTS="" KEEP=0
need() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "fuzz.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        -n|--inputs) need "$@"; INPUTS=$2; shift 2 ;;
        --seed) need "$@"; SEED=$2; shift 2 ;;
        --case) need "$@"; CASE=$2; shift 2 ;;
        --sources) need "$@"; SOURCES=$2; shift 2 ;;
        --first) need "$@"; FIRST=$2; shift 2 ;;
        --replay) need "$@"; REPLAY=$2; shift 2 ;;
        --timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
        --commands) need "$@"; COMMANDS=$2; shift 2 ;;
        --modes) need "$@"; MODES=$2; shift 2 ;;
        --binary) need "$@"; BIN=$2; shift 2 ;;
        --jobs) need "$@"; JOBS=$2; shift 2 ;;
        --rss-limit) need "$@"; RSS_LIMIT=$2; shift 2 ;;
        --vm-limit) need "$@"; VM_LIMIT=$2; shift 2 ;;
        --results) need "$@"; RESULTS=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for v in INPUTS FIRST TIMEOUT JOBS RSS_LIMIT VM_LIMIT; do
    [[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 0 ] || { echo "fuzz.sh: $v must be a whole number" >&2; exit 2; }
done
[ -z "$CASE" ] || [[ $CASE =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --case must be a whole number" >&2; exit 2; }
[ "$JOBS" -ge 1 ] && [ "$TIMEOUT" -ge 1 ] || { echo "fuzz.sh: --jobs and --timeout must be at least 1" >&2; exit 2; }
IFS=, read -r -a CMDS <<< "$COMMANDS"
IFS=, read -r -a WHERE <<< "$MODES"
for c in "${CMDS[@]}"; do
    case "$c" in probe|thumbs|prefetch|check) ;; *) echo "fuzz.sh: unknown command '$c'" >&2; exit 2 ;; esac
done
for m in "${WHERE[@]}"; do
    case "$m" in local|http) ;; *) echo "fuzz.sh: unknown mode '$m'" >&2; exit 2 ;; esac
done
[ -z "$REPLAY" ] || [ -f "$REPLAY" ] || { echo "fuzz.sh: no such file: $REPLAY" >&2; exit 2; }
for tool in python3 /usr/bin/time timeout; do
    command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool is missing (scripts/deps.sh installs it)" >&2; exit 2; }
done
if [[ " ${WHERE[*]} " == *" http "* ]] && ! [ -x /usr/sbin/nginx ]; then
    echo "fuzz.sh: /usr/sbin/nginx is missing (scripts/deps.sh installs it)" >&2; exit 2
fi

if [ -z "$BIN" ]; then
    source scripts/deps.sh
    mprobe_install_deps
    swift build -c release --product mprobe >&2
    BIN=$ROOT/.build/release/mprobe
fi
[ -x "$BIN" ] || { echo "fuzz.sh: not an executable: $BIN" >&2; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
[ -n "$SEED" ] || SEED=$(( $(od -An -N4 -tu4 /dev/urandom) ))
if [ -z "$RESULTS" ]; then
    if [ -n "$REPLAY" ]; then RESULTS=fuzz-results/replay-$(basename "$REPLAY")
    elif [ -n "$CASE" ]; then RESULTS=fuzz-results/seed-$SEED-case-$CASE
    else RESULTS=fuzz-results/seed-$SEED; fi
fi
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

WORK=$(mktemp -d /tmp/mprobe-fuzz.XXXXXX)
NGINX_PID="" INTERRUPTED=0
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # Runs still going (an interrupted campaign): each is a process group of ours (set -m below;
    # timeout --foreground keeps mprobe in it).
    for pid in $(jobs -pr); do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
    if [ -n "$NGINX_PID" ]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    # An interrupted campaign still gets the summary of the batches it finished.
    if [ "$INTERRUPTED" = 1 ] && [ -s "$RESULTS/runs.tsv" ]; then
        python3 bench/fuzz.py summary --results "$RESULTS" >/dev/null 2>&1 || true
        echo "fuzz.sh: summary of the finished batches in $RESULTS" >&2
    fi
    if [ "$KEEP" = 1 ]; then echo "fuzz.sh: work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'INTERRUPTED=1; echo "fuzz.sh: interrupted" >&2; exit 130' INT TERM
mkdir -p "$WORK/mutants" "$WORK/rec" "$WORK/run"

# nginx on a free loopback port, everything (config, pid, logs, temp files) in the work folder.
start_nginx() {
    local n port
    mkdir -p "$WORK/nginx/tmp"
    for n in 1 2 3 4 5; do
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        cat > "$WORK/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path $WORK/nginx/tmp/body; proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi; uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    sendfile on; keepalive_requests 100000; keepalive_timeout 60s; etag on;
    server { listen 127.0.0.1:$port; root $WORK/mutants; location / { } }
}
CONF
        rm -f "$WORK/nginx/nginx.pid"
        /usr/sbin/nginx -p "$WORK/nginx/" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" </dev/null \
            >>"$WORK/nginx/error.log" 2>&1 &
        NGINX_PID=$!
        disown "$NGINX_PID"
        for _ in $(seq 100); do
            [ -s "$WORK/nginx/nginx.pid" ] && break
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.05
        done
        if kill -0 "$NGINX_PID" 2>/dev/null && [ -s "$WORK/nginx/nginx.pid" ]; then
            PORT=$port
            return 0
        fi
        NGINX_PID=""
        grep -q "Address already in use" "$WORK/nginx/error.log" || break
    done
    echo "fuzz.sh: nginx did not start: $(tail -3 "$WORK/nginx/error.log")" >&2
    exit 2
}

# The command line of one run.
command_args() { # CMD DIR TARGET
    case "$1" in
        probe) echo probe --json --cache-dir "$2/cache" "$3" ;;
        thumbs) echo thumbs --count 3 --out "$2/thumbs" --quiet --cache-dir "$2/cache" "$3" ;;
        prefetch) echo prefetch --seconds 2 --quiet --cache-dir "$2/cache" "$3" ;;
        check) echo check --seconds 1 --cache-dir "$2/cache" "$3" ;;
    esac
}

# One run: a timeout, peak RSS from GNU time, an address-space cap; leaves rec/ID.{tsv,err,out}.
run_one() { # CASE FILE CMD MODE
    local case=$1 file=$2 cmd=$3 mode=$4 id="$1.$3.$4" dir target rc t0 t1 rss
    dir="$WORK/run/$id"
    mkdir -p "$dir"
    if [ "$mode" = http ]; then target="http://127.0.0.1:$PORT/$(basename "$file")"; else target=$file; fi
    # shellcheck disable=SC2046 # the paths have no spaces: they are ours
    set -- $(command_args "$cmd" "$dir" "$target")
    t0=$(date +%s%N)
    rc=0
    (
        ulimit -v $((VM_LIMIT * 1024))
        exec /usr/bin/time -f %M -o "$dir/rss" timeout --foreground -k 5 "$TIMEOUT" "$BIN" "$@"
    ) >"$dir/stdout" 2>"$dir/stderr" </dev/null || rc=$?
    t1=$(date +%s%N)
    rss=$(tail -n 1 "$dir/rss" 2>/dev/null | tr -cd 0-9)
    head -c 65536 "$dir/stderr" > "$WORK/rec/$id.err"
    head -c 65536 "$dir/stdout" > "$WORK/rec/$id.out"
    printf '%s %s %s %s %s %s\n' "$case" "$cmd" "$mode" "$rc" "${rss:-0}" $(( (t1 - t0) / 1000000 )) > "$WORK/rec/$id.tsv"
    rm -rf "$dir"
}

# Runs every command of every case read from stdin, JOBS at a time. It runs in the main shell (not
# in a pipeline), so the runs are our jobs and an interrupt reaches the trap at once.
run_batch() { # lines of cases.tsv on stdin
    local case file source what cmd mode
    while IFS=$'\t' read -r case file source what; do
        printf '%s\t%s\t%s\t%s\n' "$case" "$file" "$source" "$what" >> "$WORK/cases.tsv"
        for cmd in "${CMDS[@]}"; do
            for mode in "${WHERE[@]}"; do
                while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
                set -m  # each run in its own process group, so an interrupt can end all of it
                run_one "$case" "$file" "$cmd" "$mode" &
                set +m
            done
        done
    done
    wait
    python3 bench/fuzz.py classify --work "$WORK" --results "$RESULTS" --timeout "$TIMEOUT" --rss-limit-mb "$RSS_LIMIT"
    : > "$WORK/cases.tsv"
    rm -f "$WORK"/mutants/*
}

if [[ " ${WHERE[*]} " == *" http "* ]]; then start_nginx; fi

{
    printf 'seed\t%s\nbinary\t%s\ncommands\t%s\nmodes\t%s\ntimeout\t%s s\nrss_limit_mb\t%s\nvm_limit_mb\t%s\njobs\t%s\nstarted\t%s\n' \
        "$SEED" "$BIN" "$COMMANDS" "$MODES" "$TIMEOUT" "$RSS_LIMIT" "$VM_LIMIT" "$JOBS" "$(date -u +%FT%TZ)"
    [ -z "$SOURCES" ] || printf 'sources\t%s\n' "$SOURCES"
} > "$RESULTS/meta.tsv"
# A results folder holds one run: what an earlier run left there would be mistaken for ours.
rm -rf "$RESULTS/runs.tsv" "$RESULTS/inputs" "$RESULTS/stderr" "$RESULTS/summary.md" "$RESULTS/failures.md"
echo "fuzz.sh: seed $SEED, binary $BIN, results in $RESULTS" >&2

: > "$WORK/cases.tsv"
if [ -n "$REPLAY" ]; then
    name="replay$(case "$REPLAY" in *.*) echo ".${REPLAY##*.}" ;; esac)"
    cp "$REPLAY" "$WORK/mutants/$name"
    run_batch < <(printf 'replay\t%s\t%s\t%s\n' "$WORK/mutants/$name" "$REPLAY" "none (replayed as is)")
    printf 'cases\treplay of %s\n' "$REPLAY" >> "$RESULTS/meta.tsv"
elif [ -n "$CASE" ]; then
    run_batch < <(python3 bench/fuzz.py mutate --seed "$SEED" --sources "$SOURCES" --cases "$CASE-$CASE" --out "$WORK/mutants")
    printf 'cases\t%s\n' "$CASE" >> "$RESULTS/meta.tsv"
else
    BATCH=$(( JOBS * 6 ))
    last=$(( FIRST + INPUTS - 1 ))
    printf 'cases\t%s-%s\n' "$FIRST" "$last" >> "$RESULTS/meta.tsv"
    for ((a = FIRST; a <= last; a += BATCH)); do
        b=$(( a + BATCH - 1 < last ? a + BATCH - 1 : last ))
        run_batch < <(python3 bench/fuzz.py mutate --seed "$SEED" --sources "$SOURCES" --cases "$a-$b" --out "$WORK/mutants")
        echo "fuzz.sh: cases $FIRST..$b of $FIRST..$last done" >&2
    done
fi
printf 'finished\t%s\n' "$(date -u +%FT%TZ)" >> "$RESULTS/meta.tsv"

status=0
python3 bench/fuzz.py summary --results "$RESULTS" || status=$?
echo "fuzz.sh: results in $RESULTS (summary.md, failures.md, runs.tsv)" >&2
exit "$status"
