# Shared helpers for the benchmarks: a loopback nginx with a byte-counting access log, the latency
# proxy, the release build. Sourced by the bench scripts from the repository root.

# Installs what is missing and builds mprobe in release mode; sets M to the binary.
bench_prepare() {
    source scripts/deps.sh
    mprobe_install_deps
    swift build -c release --product mprobe >&2
    M=$PWD/.build/release/mprobe
}

# Makes the 10-minute samples if needed (LARGE), a work folder (WORK), and starts nginx over
# LARGE; both go on exit, with the proxy PROXY_PID if one was started.
bench_start_origin() {
    LARGE=${MPROBE_LARGE_SAMPLES:-$PWD/Samples/large}
    Samples/make-large.sh "$LARGE" >&2
    WORK=$(mktemp -d /tmp/mprobe-bench.XXXXXX)
    PROXY_PID=""
    trap 'bench_stop_nginx; [ -n "$PROXY_PID" ] && kill $PROXY_PID; rm -rf "$WORK"' EXIT
    bench_start_nginx "$LARGE" "$WORK/nginx"
}

# bench_start_origin, and the latency proxy (60 ms, 50 Mbit/s, a link per connection) in front of
# nginx (PROXY_PORT).
bench_start_large() {
    bench_start_origin
    bench_start_proxy 60 50
}

# The 10-minute recording (LARGE) packaged as people serve it, in S=$LARGE/streams: HLS with
# MPEG-TS segments (ts/master.m3u8), HLS with fMP4 segments (fmp4/master.m3u8), DASH with a
# SegmentTimeline (dash/manifest.mpd); two video variants each (720p as recorded, a 360p encode)
# in 4 s segments.
bench_make_streams() {
    S="$LARGE/streams"
    local src="$LARGE/long-faststart.mp4"
    [ -s "$S/dash/manifest.mpd" ] && return
    mkdir -p "$S/ts" "$S/fmp4" "$S/dash"
    [ -s "$S/low.mp4" ] || ffmpeg -hide_banner -loglevel error -y -i "$src" -vf scale=640:360 -c:v libx264 -preset veryfast \
        -force_key_frames "expr:gte(t,n_forced*2)" -c:a copy "$S/low.mp4"
    local two=(-i "$src" -i "$S/low.mp4" -map 0:v -map 0:a -map 1:v -map 1:a -c copy)
    local hls=(-f hls -hls_time 4 -hls_playlist_type vod -master_pl_name master.m3u8 -var_stream_map "v:0,a:0 v:1,a:1")
    ffmpeg -hide_banner -loglevel error -y "${two[@]}" "${hls[@]}" -hls_segment_filename "$S/ts/v%v_%d.ts" "$S/ts/v%v.m3u8"
    ffmpeg -hide_banner -loglevel error -y "${two[@]}" "${hls[@]}" -hls_segment_type fmp4 -hls_fmp4_init_filename "init%v.mp4" \
        -hls_segment_filename "$S/fmp4/v%v_%d.m4s" "$S/fmp4/v%v.m3u8"
    ffmpeg -hide_banner -loglevel error -y "${two[@]}" -f dash -seg_duration 4 "$S/dash/manifest.mpd"
}

# A loopback port free now (another process may take it before it is used).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

bench_start_proxy() { # RTT_MS MBIT [PROXY OPTIONS...] -> sets PROXY_PORT, PROXY_PID
    PROXY_PORT=$(free_port)
    python3 bench/latency_proxy.py "$PROXY_PORT" "$NGINX_PORT" "$@" &
    PROXY_PID=$!
    sleep 0.5
}

bench_stop_proxy() { kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""; }

bench_start_nginx() { # ROOT WORKDIR -> sets NGINX_PORT, NGINX_LOG
    local root="$1" work="$2"
    NGINX_PORT=$(free_port)
    NGINX_LOG="$work/access.log"
    mkdir -p "$work"
    cat > "$work/nginx.conf" <<CONF
daemon off; master_process off; pid $work/nginx.pid; error_log $work/error.log;
events {}
http {
  sendfile on; keepalive_requests 100000; keepalive_timeout 60s;
  log_format bench '\$connection \$connection_requests "\$request" \$status \$body_bytes_sent "\$http_range"';
  access_log $NGINX_LOG bench;
  server { listen 127.0.0.1:$NGINX_PORT; root $root; }
}
CONF
    nginx -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
    NGINX_PID=$!
    for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
}

bench_stop_nginx() { kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; }

# Requests and body bytes in the access log since it was last truncated.
bench_log_requests() { wc -l < "$NGINX_LOG" | tr -d ' '; }
bench_log_bytes() { awk '{ s += $(NF-1) } END { print s + 0 }' "$NGINX_LOG"; }

# Wall seconds of a command (stdout discarded unless redirected inside).
bench_time() { local t0 t1; t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f}')"; }

# One cold run of a command; prints "seconds requests bytes_sent".
bench_once() { # SHELL-COMMAND (uses WORK, NGINX_LOG, SETTLE)
    rm -rf "$WORK/cache" "$WORK/out"; : > "$NGINX_LOG"
    local t
    t=$(bench_time sh -c "$1")
    sleep 0.3 # nginx logs a request when its connection finishes sending
    echo "$t $(bench_log_requests) $(bench_log_bytes)"
    # What a peer abandoned is still on the link (up to the queue on each of its connections):
    # the next run starts once the proxy says the link is idle.
    until [ "$(cat "$WORK/link-busy" 2>/dev/null)" = "0.000" ]; do sleep 0.05; done
    sleep "$SETTLE"
}

# Best of ROUNDS; prints "seconds requests bytes_sent" of the best run.
bench_best_of() { # SHELL-COMMAND (and ROUNDS)
    local best_line="" line
    for _ in $(seq "$ROUNDS"); do
        line=$(bench_once "$1")
        if [ -z "$best_line" ] || python3 -c "import sys; sys.exit(0 if ${line%% *} < ${best_line%% *} else 1)"; then
            best_line=$line
        fi
    done
    echo "$best_line"
}

# Between cold reads: the commits of the read before done (mprobe's cache commits within a second
# of arrival), every dirty page on disk, and (as root) the clean ones dropped, so no run pays for
# the write-back of the one before and each writes into memory the machine has used before. On
# these virtual machines a page the guest never touched costs a fault in the host on first use: as
# the page cache grew by 160 MB a run, the copy into it (`copy_folio_from_iter_atomic`) took 39% of
# mprobe's samples and a cold read 0.31 s instead of 0.15 s; Varnish's malloc storage pays the same
# for its heap.
bench_settle() {
    sleep 1.5
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then echo 1 > /proc/sys/vm/drop_caches; fi
}
