#!/usr/bin/env bash
# Installs what mprobe needs to build, test and benchmark on Debian, if it is missing.
# Sourced by ./run and ./test; safe to run again (does nothing when everything is there).
set -euo pipefail

MPROBE_DEB_PACKAGES=(
    pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
    libcurl4-openssl-dev libsqlite3-dev
    libpq-dev                                  # libpq's header: serve --jobs postgres:// (loaded at run time, only then)
    postgresql                                 # the job store tests and bench/scale.sh start their own (initdb, in a temp dir)
    nginx ffmpeg openssl curl ca-certificates  # test origins, oracles and clients
    sqlite3                                    # tests write impossible index records with it
    time python3 python3-pip                   # bench/fuzz.sh (run by the tests too): peak RSS, the mutator; pip for PyPI below
    tinyproxy                                  # tests of requests through a forward proxy
    wrk varnish                                # bench/serve.sh: the load, and a peer cache
    chromium                                   # the dashboard's and the player matrix's tests: a real browser, headless
    mpv vlc-bin vlc-plugin-base                # the player matrix: real players play prefetched windows offline
    gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav
    python3-gi gir1.2-gstreamer-1.0            # ... GStreamer's playbin, driven from Debian's python3
    prometheus                                 # promtool checks /metrics
    zsh bash-completion groff-base             # the completions and man page are checked by their shells and groff
)

# PyPI packages the tests use, as the module they import and what pip installs.
MPROBE_PIP_PACKAGES=(
    "openapi_spec_validator openapi-spec-validator>=0.7,<1"   # validates docs/openapi.json
    "websocket websocket-client>=1,<2"                        # bench/players.py drives Chromium over DevTools
)

mprobe_install_deps() {
    local missing=()
    for p in "${MPROBE_DEB_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "mprobe: installing Debian packages: ${missing[*]}" >&2
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
    for entry in "${MPROBE_PIP_PACKAGES[@]}"; do
        local module="${entry%% *}" requirement="${entry#* }"
        python3 -c "import $module" 2>/dev/null && continue
        echo "mprobe: installing from PyPI: $requirement" >&2
        # Debian's own Python refuses pip outside a virtual environment unless told (PEP 668).
        python3 -m pip install --quiet "$requirement" >&2 2>/dev/null \
            || python3 -m pip install --quiet --break-system-packages "$requirement" >&2
    done
    # The Swift toolchain ships in /opt/swift on our machines; make sure it is on PATH.
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "mprobe: the Swift toolchain (swift) is not on PATH" >&2; exit 1; }
}
