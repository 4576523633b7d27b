#!/usr/bin/env bash
# Jobs on PostgreSQL: `mprobe serve` nodes sharing one PostgreSQL on this machine, 1, 2 and 4 of
# them (2 workers each), interleaved, REPEATS times (docs/scale-out.md).
#
#  1. Throughput: JOBS network-bound jobs (a 1 s prefetch of the sample through the latency proxy,
#     60 ms round trips, each job its own URL) submitted across the nodes at once: jobs per second
#     and the ratio to one node in the same repeat; the queue's own cost per job (the nodes' job
#     store calls: claim + renew + progress + finish, ms, from /metrics).
#  2. Waiting: WAITS jobs submitted one at a time to an idle cluster: how long each waited between
#     being created and a worker starting it (ms, p50/p99/max), the NOTIFY path.
#
# PostgreSQL runs with its defaults (fsync and synchronous commit on) in a temporary directory,
# as the postgres user when run as root. Usage: bench/scale.sh [JOBS=200] [REPEATS=3] [WAITS=100]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
JOBS=${1:-200}
REPEATS=${2:-3}
WAITS=${3:-100}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$PGBIN/initdb" ] || { echo "bench/scale.sh needs PostgreSQL (scripts/deps.sh installs it)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/mprobe-scale-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()
PROXY_PID=""
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
    bench_stop_nginx
    [ -n "${PG_PID:-}" ] && kill -INT "$PG_PID" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
as_pg() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi; }

# PostgreSQL, defaults but for the address (loopback) and connections enough for 4 nodes.
mkdir -p "$WORK/pg"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$WORK/pg"
as_pg "$PGBIN/initdb" -D "$WORK/pg" -U mprobe -A trust -E UTF8 >/dev/null
PG_PORT=$(free_port)
as_pg "$PGBIN/postgres" -D "$WORK/pg" -h 127.0.0.1 -p "$PG_PORT" -k "" -c max_connections=200 >"$WORK/pg.log" 2>&1 &
PG_PID=$!
until "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; do sleep 0.1; done
psql_() { "$PGBIN/psql" -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U mprobe -d postgres -c "$1"; }

bench_start_nginx "$PWD/Samples" "$WORK/nginx"
bench_start_proxy 60 50
ORIGIN="http://127.0.0.1:$PROXY_PORT/faststart.mp4"
TOKEN=bench-scale-token

# Starts N nodes on database DB (made here); sets NODES (their base URLs) and NODE_PIDS.
start_nodes() { # N DB
    psql_ "CREATE DATABASE $2" >/dev/null
    NODES=(); NODE_PIDS=()
    for k in $(seq "$1"); do
        local port; port=$(free_port)
        "$M" serve --listen "127.0.0.1:$port" --token "$TOKEN" --workers 2 --max-connections-per-client 0 \
            --jobs "postgres://mprobe@127.0.0.1:$PG_PORT/$2" --allow-host "127.0.0.1:$PROXY_PORT" \
            --cache-dir "$WORK/$2-node$k" 2>"$WORK/$2-node$k.log" &
        NODE_PIDS+=($!); PIDS+=($!)
        NODES+=("http://127.0.0.1:$port")
        until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do sleep 0.05; done
    done
}
stop_nodes() { for pid in "${NODE_PIDS[@]}"; do kill "$pid"; wait "$pid" 2>/dev/null || true; done; }

declare -A RATE COST WAITED
for rep in $(seq "$REPEATS"); do
    for n in 1 2 4; do
        start_nodes "$n" "run_${n}_${rep}"
        out=$(python3 bench/scale.py throughput "$TOKEN" "$ORIGIN" "$JOBS" "${NODES[@]}")
        waited=$(python3 bench/scale.py wait "$TOKEN" "$ORIGIN" "$WAITS" "${NODES[@]}")
        stop_nodes
        echo "repeat $rep, $n node(s): $out; waits: $waited" >&2
        RATE[$n,$rep]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["jobs_per_second"])' "$out")
        COST[$n,$rep]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["row"])' "$out")
        WAITED[$n,$rep]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["row"])' "$waited")
    done
done

echo
echo "| nodes | repeat | jobs/s | × one node | queue ms per job (claim, progress, finish each) | wait in an idle cluster, ms p50 / p99 / max |"
echo "|---|---|---|---|---|---|"
for n in 1 2 4; do
    for rep in $(seq "$REPEATS"); do
        ratio=$(python3 -c "print(f'{${RATE[$n,$rep]} / ${RATE[1,$rep]}:.2f}')")
        echo "| $n | $rep | ${RATE[$n,$rep]} | $ratio | ${COST[$n,$rep]} | ${WAITED[$n,$rep]} |"
    done
done
