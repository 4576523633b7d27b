#!/usr/bin/env bash
# `mprobe serve`'s range proxy beside the caches a platform would otherwise put in front of its
# players, all on loopback in one run, peers and mprobe interleaved, REPEATS times:
#
#   nginx      nginx serving the file from disk (sendfile), 2 workers: the floor
#   slice      nginx with `slice 1m` + `proxy_cache` + `proxy_cache_lock`, in front of the origin
#   varnish    Varnish (Debian's), malloc storage, in front of the origin
#   mprobe     mprobe serve --cache-dir, in front of the origin
#
#  1. Warm: wrk with 50, 200 and 2,000 connections for SECONDS, each request a random closed
#     256 KiB range of a 160 MB file every cache already holds whole. Requests/s, p99, errors, and
#     the CPU time each server spends per request.
#  2. One cold reader: the whole file through a cache that has none of it (a new URL each run):
#     seconds, and the requests and bytes the origin served.
#  3. 20 cold readers of one new URL at once, each reading the whole file: bytes from the origin
#     against the file's size, the slowest time to first byte, and the wall time.
#  4. mprobe alone: 10,000 open connections (5,000 idle after a /healthz, 5,000 stalled on a
#     4 MiB cached range they never read, bench/hold.py): its RSS, and /healthz's latency meanwhile.
#
# Prints a table per part with each run and mprobe's ratios to the peers in the same repeat.
# Usage: bench/serve.sh [SECONDS=5] [REPEATS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_prepare
SECONDS_RUN=${1:-5}
REPEATS=${2:-3}
for tool in wrk varnishd nginx curl; do
    command -v "$tool" >/dev/null || { echo "bench/serve.sh needs $tool (scripts/deps.sh installs it)" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)"

WORK=$(mktemp -d /tmp/mprobe-serve-bench.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    bench_stop_nginx
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

mkdir -p "$WORK/www"
SIZE=$((160 * 1000 * 1000))
head -c "$SIZE" /dev/urandom > "$WORK/www/big.bin"
# Cold runs each read a URL no cache has seen: hard links, the same bytes under new names.
for server in slice varnish mprobe; do
    for rep in $(seq "$REPEATS"); do
        ln "$WORK/www/big.bin" "$WORK/www/one-$server-$rep.bin"
        ln "$WORK/www/big.bin" "$WORK/www/many-$server-$rep.bin"
    done
done
bench_start_nginx "$WORK/www" "$WORK/origin" # the origin, whose log counts what the caches fetch
ORIGIN="http://127.0.0.1:$NGINX_PORT"

# A peer nginx, 2 workers, in folder NAME, with HTTP-LEVEL directives (its server among them).
start_peer_nginx() { # NAME HTTP-LEVEL
    mkdir -p "$WORK/$1"
    cat > "$WORK/$1/nginx.conf" <<CONF
user $(id -un); worker_processes 2; worker_rlimit_nofile 20000; daemon off; pid $WORK/$1/nginx.pid; error_log $WORK/$1/error.log;
events { worker_connections 8192; }
http {
  sendfile on; keepalive_requests 1000000; keepalive_timeout 60s; access_log off;
  $2
}
CONF
    nginx -p "$WORK/$1" -c "$WORK/$1/nginx.conf" -e "$WORK/$1/error.log" &
    PIDS+=($!)
}

# nginx serving the file itself.
FILE_PORT=$(free_port)
start_peer_nginx file "server { listen 127.0.0.1:$FILE_PORT; root $WORK/www; }"
FILE_PID=$!

# nginx slicing and caching the origin, with one fetch per slice however many wait for it.
SLICE_PORT=$(free_port)
mkdir -p "$WORK/slice/cache"
start_peer_nginx slice "
  proxy_cache_path $WORK/slice/cache levels=1:2 keys_zone=media:64m max_size=4g inactive=1h use_temp_path=off;
  upstream origin { server 127.0.0.1:$NGINX_PORT; keepalive 32; }
  server {
    listen 127.0.0.1:$SLICE_PORT;
    location / {
      slice 1m;
      proxy_cache media; proxy_cache_key \$uri\$slice_range; proxy_set_header Range \$slice_range;
      proxy_cache_valid 200 206 1h; proxy_cache_lock on; proxy_cache_lock_timeout 60s;
      proxy_http_version 1.1; proxy_set_header Connection \"\";
      proxy_pass http://origin;
    }
  }"
SLICE_PID=$!

# Varnish, objects in memory (as Debian configures it), cached for an hour.
VARNISH_PORT=$(free_port)
mkdir -p "$WORK/varnish"
cat > "$WORK/varnish/default.vcl" <<VCL
vcl 4.1;
backend origin { .host = "127.0.0.1"; .port = "$NGINX_PORT"; }
sub vcl_backend_response { set beresp.ttl = 1h; }
VCL
varnishd -F -j none -n "$WORK/varnish/run" -a "127.0.0.1:$VARNISH_PORT" -f "$WORK/varnish/default.vcl" \
    -s malloc,2G -p thread_pool_max=5000 > "$WORK/varnish/log" 2>&1 &
VARNISH_PID=$!
PIDS+=($VARNISH_PID)

"$M" serve --listen 127.0.0.1:0 --cache-dir "$WORK/mprobe" --allow-host "127.0.0.1:$NGINX_PORT" \
    --max-cache-size 8G --max-connections-per-client 0 2> "$WORK/serve.log" &
SERVE_PID=$!
PIDS+=($SERVE_PID)
for _ in $(seq 100); do grep -q "serving on" "$WORK/serve.log" && break; sleep 0.1; done
SERVE_PORT=$(grep -o 'serving on http://127.0.0.1:[0-9]*' "$WORK/serve.log" | grep -o '[0-9]*$')
for port in "$FILE_PORT" "$SLICE_PORT" "$VARNISH_PORT"; do
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break; sleep 0.1; done
done

pid_of() { # SERVER -> its main process (nginx's master, varnishd's manager)
    case "$1" in
        nginx | again) echo "$FILE_PID" ;;
        slice) echo "$SLICE_PID" ;;
        varnish) echo "$VARNISH_PID" ;;
        mprobe) echo "$SERVE_PID" ;;
    esac
}

# CPU time (clock ticks, user + system) a server has used: its process and its children (nginx's
# workers, Varnish's cache process), which live through the run.
cpu_ticks() { # PID
    local total=0 pid
    for pid in "$1" $(pgrep -P "$1"); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$total"
}
TICKS_PER_SECOND=$(getconf CLK_TCK)

url_of() { # SERVER PATH -> the URL a player asks that server for PATH
    case "$1" in
        nginx | again) echo "http://127.0.0.1:$FILE_PORT/$2" ;;
        slice) echo "http://127.0.0.1:$SLICE_PORT/$2" ;;
        varnish) echo "http://127.0.0.1:$VARNISH_PORT/$2" ;;
        mprobe) echo "http://127.0.0.1:$SERVE_PORT/v1/stream?url=$(enc "$ORIGIN/$2")" ;;
    esac
}

# Every cache holds the whole file, and gives it back exact.
for server in nginx slice varnish mprobe; do
    curl -s "$(url_of "$server" big.bin)" | cmp - "$WORK/www/big.bin" ||
        { echo "$server does not give the file's bytes:" >&2; cat "$WORK"/*/error.log "$WORK/varnish/log" >&2; exit 1; }
    curl -s "$(url_of "$server" big.bin)" -o /dev/null
done

cat > "$WORK/ranges.lua" <<LUA
math.randomseed(42)
local size, span = $SIZE, 256 * 1024
request = function()
  local start = math.random(0, size - span)
  return wrk.format("GET", nil, { ["Range"] = "bytes=" .. start .. "-" .. (start + span - 1) })
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.2f %.2f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
    summary.requests))
end
LUA
RESULTS="$WORK/results"
: > "$RESULTS"

echo "warm ranges ($SECONDS_RUN s each, $REPEATS repeats)..." >&2
# mprobe runs between the two peers its goals name, whose order alternates from repeat to repeat:
# a drift in this shared machine's load between runs then touches both sides of each ratio alike,
# where a fixed order (nginx first, mprobe 15 s later) left it all on one side. The control,
# `again`, is nginx serving the file run a second time next to its first run: what the same
# ratios give for a server against itself is how far this machine's noise alone moves them.
for rep in $(seq "$REPEATS"); do
    if ((rep % 2)); then order="again nginx mprobe varnish slice"; else order="varnish mprobe nginx again slice"; fi
    for connections in 50 200 2000; do
        for server in $order; do
            before=$(cpu_ticks "$(pid_of "$server")")
            line=$(wrk -t 2 -c "$connections" -d "${SECONDS_RUN}s" --timeout 10s --latency -s "$WORK/ranges.lua" \
                "$(url_of "$server" big.bin)" | awk '/^RESULT/ { $1 = ""; print }')
            echo "warm $connections $server $rep $line $(($(cpu_ticks "$(pid_of "$server")") - before))" >> "$RESULTS"
        done
    done
done
RSS_WARM=$(awk '/VmHWM/ { print $2 }' "/proc/$SERVE_PID/status")

origin_count() { # PATH -> "requests bytes" the origin served for PATH since its log was emptied
    awk -v p="/$1" '$4 == p { n++; s += $(NF-1) } END { print n + 0, s + 0 }' "$NGINX_LOG"
}

echo "cold readers..." >&2
for rep in $(seq "$REPEATS"); do
    if ((rep % 2)); then order="varnish mprobe slice"; else order="mprobe varnish slice"; fi
    for server in $order; do
        bench_settle
        : > "$NGINX_LOG"
        t=$(curl -s -o /dev/null -w '%{time_total}' "$(url_of "$server" "one-$server-$rep.bin")")
        sleep 0.3 # nginx logs a request once its connection has sent it
        echo "one $server $rep $t $(origin_count "one-$server-$rep.bin")" >> "$RESULTS"

        bench_settle
        : > "$NGINX_LOG"
        target=$(url_of "$server" "many-$server-$rep.bin")
        readers=()
        t0=$(date +%s.%N)
        for i in $(seq 20); do
            curl -s -o "$WORK/out-$i" -w '%{time_starttransfer}\n' "$target" > "$WORK/ttfb-$i" &
            readers+=($!)
        done
        wait "${readers[@]}" || true
        t1=$(date +%s.%N)
        sleep 0.3
        right=0
        for i in $(seq 20); do cmp -s "$WORK/out-$i" "$WORK/www/big.bin" && right=$((right + 1)); done
        rm -f "$WORK"/out-*
        ttfb=$(cat "$WORK"/ttfb-* | sort -g | tail -1)
        echo "many $server $rep $(python3 -c "print(f'{$t1 - $t0:.2f}')") $ttfb $right $(origin_count "many-$server-$rep.bin")" >> "$RESULTS"
    done
done

echo "10,000 connections..." >&2
RSS_BEFORE=$(awk '/VmRSS/ { print $2 }' "/proc/$SERVE_PID/status")
STALLED="/v1/stream?url=$(enc "$ORIGIN/big.bin")|bytes=0-4194303"
mkfifo "$WORK/hold-in"
python3 bench/hold.py "$SERVE_PORT" 5000 5000 "$STALLED" < "$WORK/hold-in" > "$WORK/hold-out" &
HOLD_PID=$!
exec 9> "$WORK/hold-in"
for _ in $(seq 1200); do grep -q "^held" "$WORK/hold-out" && break; sleep 0.1; done
HELD=$(grep "^held" "$WORK/hold-out" || echo "held 0")
for i in $(seq 200); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$SERVE_PORT/healthz"
done > "$WORK/healthz"
RSS_HELD=$(awk '/VmRSS/ { print $2 }' "/proc/$SERVE_PID/status")
THREADS_HELD=$(awk '/Threads/ { print $2 }' "/proc/$SERVE_PID/status")
exec 9>&-
wait "$HOLD_PID" || true
ALIVE=$(grep "^alive" "$WORK/hold-out" || echo "alive ?")

python3 - "$RESULTS" "$SIZE" "$SECONDS_RUN" "$REPEATS" "$TICKS_PER_SECOND" <<PY
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
size, seconds, repeats, hz = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
servers = ["nginx", "slice", "varnish", "mprobe"]
def span(values, fmt="{:.0f}"):
    values = sorted(values)
    return fmt.format(values[0]) if len(values) == 1 else fmt.format(values[0]) + "–" + fmt.format(values[-1])
print(f"## Warm: random closed 256 KiB ranges of a cached 160 MB file, {seconds} s per run, {repeats} repeats")
print()
print("| connections | nginx (file) req/s | nginx slice req/s | Varnish req/s | mprobe req/s | mprobe ÷ nginx | mprobe ÷ Varnish | p99 ms nginx / slice / Varnish / mprobe | p99 mprobe ÷ nginx | errors (mprobe) |")
print("|---|---|---|---|---|---|---|---|---|---|")
ratios = {}  # by load: each repeat's mprobe ÷ nginx, ÷ Varnish, and p99 ÷ nginx's
for c in ["50", "200", "2000"]:
    by = {s: {r[3]: r for r in rows if r[0] == "warm" and r[1] == c and r[2] == s} for s in servers}
    reps = sorted(by["mprobe"])
    rps = {s: [float(by[s][k][4]) for k in reps] for s in servers}
    p99 = {s: [float(by[s][k][6]) for k in reps] for s in servers}
    vs_nginx = [m / n for m, n in zip(rps["mprobe"], rps["nginx"])]
    vs_varnish = [m / v for m, v in zip(rps["mprobe"], rps["varnish"])]
    p99_ratio = [m / n for m, n in zip(p99["mprobe"], p99["nginx"])]
    ratios[c] = list(zip(vs_nginx, vs_varnish, p99_ratio))
    errors = sum(int(by["mprobe"][k][7]) for k in reps)
    peer_errors = {s: sum(int(by[s][k][7]) for k in reps) for s in servers}
    print(f"| {c} | " + " | ".join(span(rps[s]) for s in servers)
          + f" | {span(vs_nginx, '{:.2f}')} | {span(vs_varnish, '{:.2f}')} | "
          + " / ".join(f"{statistics.median(p99[s]):.1f}" for s in servers)
          + f" | {span(p99_ratio, '{:.2f}')} | {errors} (peers: " + ", ".join(f"{peer_errors[s]}" for s in servers[:3]) + ") |")
print()
print("The proxy-speed issue's warm goals, mprobe against the peers of the same repeat: the median of")
print("the repeats' ratios, whether it meets all three, and how many single repeats do:")
print()
print("| connections | median ÷ nginx (≥ 0.95) | median ÷ Varnish (≥ 1) | median p99 ÷ nginx's (≤ 1.2) | the medians meet all three | repeats ≥ 0.95× nginx | ≥ Varnish | p99 ≤ 1.2× | all three |")
print("|---|---|---|---|---|---|---|---|---|")
for c, each in ratios.items():
    met = [(n >= 0.95, v >= 1, p <= 1.2) for n, v, p in each]
    count = lambda test: f"{sum(1 for m in met if test(m))} of {len(met)}"
    n, v, p = (statistics.median(column) for column in zip(*each))
    print(f"| {c} | {n:.2f} | {v:.2f} | {p:.2f} | {'yes' if n >= 0.95 and v >= 1 and p <= 1.2 else 'no'} | "
          + f"{count(lambda m: m[0])} | {count(lambda m: m[1])} | {count(lambda m: m[2])} | {count(all)} |")
print()
print("The control: nginx serving the file against itself, run again next to its first run, by the same")
print("ratios (how far this machine's noise alone moves them):")
print()
print("| connections | nginx again ÷ nginx | median | p99 ÷ nginx's | median | repeats ≥ 0.95× | p99 ≤ 1.2× | both |")
print("|---|---|---|---|---|---|---|---|")
for c in ["50", "200", "2000"]:
    pair = {s: {r[3]: r for r in rows if r[0] == "warm" and r[1] == c and r[2] == s} for s in ["nginx", "again"]}
    reps = sorted(set(pair["nginx"]) & set(pair["again"]))
    rps_ratio = [float(pair["again"][k][4]) / float(pair["nginx"][k][4]) for k in reps]
    p99_ratio = [float(pair["again"][k][6]) / float(pair["nginx"][k][6]) for k in reps]
    both = sum(1 for n, p in zip(rps_ratio, p99_ratio) if n >= 0.95 and p <= 1.2)
    print(f"| {c} | {span(rps_ratio, '{:.2f}')} | {statistics.median(rps_ratio):.2f} | "
          + f"{span(p99_ratio, '{:.2f}')} | {statistics.median(p99_ratio):.2f} | "
          + f"{sum(1 for n in rps_ratio if n >= 0.95)} of {len(reps)} | {sum(1 for p in p99_ratio if p <= 1.2)} of {len(reps)} | {both} of {len(reps)} |")
print()
print("CPU per request, µs (the server's processes, user + system, over the run's requests):")
print()
print("| connections | nginx (file) | nginx slice | Varnish | mprobe | mprobe ÷ nginx |")
print("|---|---|---|---|---|---|")
for c in ["50", "200", "2000"]:
    by = {s: [r for r in rows if r[0] == "warm" and r[1] == c and r[2] == s] for s in servers}
    cost = {s: [int(r[9]) / hz / max(1, int(r[8])) * 1e6 for r in sorted(by[s], key=lambda r: r[3])] for s in servers}
    ratio = [m / n for m, n in zip(cost["mprobe"], cost["nginx"])]
    print(f"| {c} | " + " | ".join(span(cost[s]) for s in servers) + f" | {span(ratio, '{:.2f}')} |")
print()
print(f"## One cold reader of the whole file (a URL new to each cache), {repeats} repeats")
print()
def cache_table(kind, columns, cells):
    """A row per cache (the peers in front of the origin, and mprobe) of the runs of that kind."""
    print("| cache | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for s in servers[1:]:
        rs = [r for r in rows if r[0] == kind and r[1] == s]
        print(f"| {s} | " + " | ".join(cell(rs) for cell in cells) + " |")
cache_table("one", ["seconds", "origin requests", "origin bytes ÷ size"], [
    lambda rs: span([float(r[3]) for r in rs], "{:.2f}"),
    lambda rs: span([int(r[4]) for r in rs]),
    lambda rs: span([int(r[5]) / size for r in rs], "{:.2f}"),
])
one = {s: [float(r[3]) for r in rows if r[0] == "one" and r[1] == s] for s in servers}
print()
to_varnish = [m / v for m, v in zip(one["mprobe"], one["varnish"])]
print("mprobe ÷ Varnish, seconds: " + span(to_varnish, "{:.2f}") + f" (median {statistics.median(to_varnish):.2f})")
print()
print(f"## 20 cold readers of one new URL at once, each reading the whole file, {repeats} repeats")
print()
cache_table("many", ["wall seconds", "slowest time to first byte, ms", "readers with every byte right",
                    "origin requests", "origin bytes ÷ size"], [
    lambda rs: span([float(r[3]) for r in rs], "{:.2f}"),
    lambda rs: span([1000 * float(r[4]) for r in rs]),
    lambda rs: span([int(r[5]) for r in rs]) + " / 20",
    lambda rs: span([int(r[6]) for r in rs]),
    lambda rs: span([int(r[7]) / size for r in rs], "{:.2f}"),
])
PY

python3 - "$WORK/healthz" "$RSS_BEFORE" "$RSS_HELD" "$RSS_WARM" "$HELD" "$ALIVE" "$THREADS_HELD" <<'PY'
import sys
times = sorted(float(t) * 1000 for t in open(sys.argv[1]))
before, held, warm = (int(v) // 1024 for v in sys.argv[2:5])
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
print()
print("## mprobe serve holding 10,000 connections (5,000 idle, 5,000 stalled on a 4 MiB cached range)")
print()
print("| connections held | still open at the end | RSS before, MiB | RSS holding them, MiB | threads | /healthz p50 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|---|---|")
print(f"| {sys.argv[5].split()[1]} | {sys.argv[6].split()[1]} | {before} | {held} | {sys.argv[7]} | {pick(0.5):.1f} | {pick(0.99):.1f} | {times[-1]:.1f} |")
print()
print(f"Peak RSS of mprobe serve through the warm runs (2,000 connections included): {warm} MiB.")
PY
