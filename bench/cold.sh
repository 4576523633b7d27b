#!/usr/bin/env bash
# One cold reader of a 160 MB file through Varnish and two mprobe builds, interleaved, each run a
# URL no cache has seen: the single-reader part of bench/serve.sh, quick, for comparing builds.
# Usage: bench/cold.sh OLD_MPROBE NEW_MPROBE [ROUNDS=6]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
OLD=$1 NEW=$2 ROUNDS=${3:-6}
for tool in varnishd nginx curl; do
    command -v "$tool" >/dev/null || { echo "bench/cold.sh needs $tool (scripts/deps.sh installs it)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/mprobe-cold-bench.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; bench_stop_nginx; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$WORK/www" "$WORK/varnish"
head -c $((160 * 1000 * 1000)) /dev/urandom > "$WORK/www/big.bin"
for i in $(seq $((3 * ROUNDS))); do ln "$WORK/www/big.bin" "$WORK/www/f$i.bin"; done
bench_start_nginx "$WORK/www" "$WORK/origin"
VARNISH_PORT=$(free_port) OLD_PORT=$(free_port) NEW_PORT=$(free_port)
cat > "$WORK/varnish/default.vcl" <<VCL
vcl 4.1;
backend origin { .host = "127.0.0.1"; .port = "$NGINX_PORT"; }
sub vcl_backend_response { set beresp.ttl = 1h; }
VCL
varnishd -F -j none -n "$WORK/varnish/run" -a "127.0.0.1:$VARNISH_PORT" -f "$WORK/varnish/default.vcl" -s malloc,2G \
    > "$WORK/varnish/log" 2>&1 &
PIDS+=($!)
"$OLD" serve --listen "127.0.0.1:$OLD_PORT" --cache-dir "$WORK/old" --allow-host "127.0.0.1:$NGINX_PORT" --max-cache-size 8G 2>/dev/null &
PIDS+=($!)
"$NEW" serve --listen "127.0.0.1:$NEW_PORT" --cache-dir "$WORK/new" --allow-host "127.0.0.1:$NGINX_PORT" --max-cache-size 8G 2>/dev/null &
PIDS+=($!)
for port in "$OLD_PORT" "$NEW_PORT"; do until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.05; done; done
sleep 1
stream() { echo "http://127.0.0.1:$1/v1/stream?url=http%3A%2F%2F127.0.0.1%3A$NGINX_PORT%2F$2"; }
seconds() { curl -s -o /dev/null -w "%{time_total}" "$1"; }

echo "| round | Varnish, s | old, s | new, s | old ÷ Varnish | new ÷ Varnish |"
echo "|---|---|---|---|---|---|"
n=0
for r in $(seq "$ROUNDS"); do
    v=$(seconds "http://127.0.0.1:$VARNISH_PORT/f$((n + 1)).bin"); bench_settle
    o=$(seconds "$(stream "$OLD_PORT" "f$((n + 2)).bin")"); bench_settle
    w=$(seconds "$(stream "$NEW_PORT" "f$((n + 3)).bin")"); bench_settle
    n=$((n + 3))
    python3 -c "import sys; v,o,w=map(float,sys.argv[1:]); print(f'| $r | {v:.3f} | {o:.3f} | {w:.3f} | {o/v:.2f} | {w/v:.2f} |')" "$v" "$o" "$w"
done
