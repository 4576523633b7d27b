#!/usr/bin/env bash
# Benchmarks for the spine (cache + fetcher + read path), all on one loopback nginx in one run:
#   1. cold sequential `mprobe cat` of a 200 MB file vs `curl` (to /dev/null and to a file)
#   2. warm `mprobe cat` from the cache
#   3. random 1 MB reads over a half-cached file: requests must only cover gaps
# Usage: bench/spine.sh [SIZE_MB]   (results are printed as a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
SIZE_MB=${1:-200}
WORK=$(mktemp -d /tmp/mprobe-bench.XXXXXX)
trap 'bench_stop_nginx; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/www"
head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom > "$WORK/www/big.bin"
bench_start_nginx "$WORK/www" "$WORK/nginx"
URL="http://127.0.0.1:$NGINX_PORT/big.bin"
BYTES=$((SIZE_MB * 1024 * 1024))
mbps() { python3 -c "print(f'{$BYTES / $1 / 1e6:.0f}')"; }

rows=()
for round in 1 2 3; do
    # curl: the same file, the same server, the same loopback.
    t_curl=$(bench_time curl -s -o /dev/null "$URL")
    t_curl_file=$(bench_time curl -s -o "$WORK/curl.out" "$URL")
    rm -f "$WORK/curl.out"
    # mprobe cold: empty cache; stores every byte durably (pwrite + fdatasync) on the way.
    rm -rf "$WORK/cache"; : > "$NGINX_LOG"
    t_cold=$(bench_time sh -c "$M cat '$URL' --cache-dir '$WORK/cache' > /dev/null")
    cold_requests=$(bench_log_requests)
    # The same path without the disk: bytes fetched into memory and written to stdout.
    t_nocache=$(bench_time sh -c "$M cat '$URL' --no-cache > /dev/null")
    : > "$NGINX_LOG"
    t_warm=$(bench_time sh -c "$M cat '$URL' --cache-dir '$WORK/cache' > /dev/null")
    warm_requests=$(bench_log_requests)
    rows+=("| $round | $(mbps "$t_curl") | $(mbps "$t_curl_file") | $(mbps "$t_cold") ($cold_requests req) | $(python3 -c "print(f'{$t_curl/$t_cold:.2f}')") | $(python3 -c "print(f'{$t_curl_file/$t_cold:.2f}')") | $(mbps "$t_nocache") | $(python3 -c "print(f'{$t_curl/$t_nocache:.2f}')") | $(mbps "$t_warm") ($warm_requests req) |")
done
echo "## Sequential read of a ${SIZE_MB} MiB file, loopback nginx (MB/s)"
echo
echo "| round | curl → /dev/null | curl → file | mprobe cat, cold | cold ÷ curl(/dev/null) | cold ÷ curl(file) | mprobe cat --no-cache | no-cache ÷ curl(/dev/null) | mprobe cat, warm |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"

# Random 1 MiB reads over a half-cached file: cache every other 4 MiB block first.
rm -rf "$WORK/cache"
for ((block = 0; block < SIZE_MB / 4; block += 2)); do
    a=$((block * 4 * 1024 * 1024)); b=$((a + 4 * 1024 * 1024 - 1))
    "$M" cat "$URL" --range "$a-$b" --cache-dir "$WORK/cache" > /dev/null
done
before=$("$M" cache ranges "$URL" --json --cache-dir "$WORK/cache")
: > "$NGINX_LOG"
READS=100
t_random=$(bench_time sh -c "for i in \$(seq $READS); do a=\$(python3 -c \"import random; print(random.randrange(0, $BYTES - 1048576))\"); $M cat '$URL' --range \$a-\$((a + 1048575)) --cache-dir '$WORK/cache' > /dev/null; done")
requests=$(bench_log_requests)
fetched=$(bench_log_bytes)
# Every requested range must lie inside a gap of what was cached before.
overlaps=$(python3 - "$NGINX_LOG" "$before" <<'PY'
import json, sys
cached = json.loads(sys.argv[2])["ranges"]
bad = 0
for line in open(sys.argv[1]):
    r = line.rsplit('"', 2)[-2]
    a, b = (int(x) for x in r.split("=")[1].split("-"))
    bad += any(a < c["end"] and b >= c["start"] for c in cached)
print(bad)
PY
)
echo
echo "## $READS random 1 MiB reads over a half-cached ${SIZE_MB} MiB file (4 MiB blocks cached alternately)"
echo
echo "| reads | requests | bytes fetched | requests overlapping cached bytes | wall s (incl. $READS process starts) |"
echo "|---|---|---|---|---|"
echo "| $READS | $requests | $fetched | $overlaps | $t_random |"
