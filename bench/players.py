"""Seconds from a player's start to its first frame at T, for bench/players.sh.

    python3 bench/players.py PLAYER T URL

PLAYER is ffmpeg, mpv, vlc, gstreamer or chromium. Prints the seconds, or "failed: why". The
time includes the player's own start (the same in every column of the table), not the
browser's: Chromium is started first and timed from the moment its page sets the video's source.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request



def timed(args, failures=()):
    t0 = time.time()
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    elapsed = time.time() - t0
    err = r.stderr.decode(errors="replace")
    said = [line for line in err.splitlines() if any(f in line for f in failures)]
    if r.returncode != 0 or said:
        return "failed: exit %d %s" % (r.returncode, (said[0] if said else err.strip()[-200:]))
    return "%.3f" % elapsed


def vlc(url, start):
    # VLC refuses root: as nobody, with a home of its own. It plays 0.1 s past T and quits, with
    # status 0 also when it could not open the input or lost a track: what it says tells.
    home = tempfile.mkdtemp(prefix="vlc-home.")
    os.chown(home, 65534, 65534)
    return timed(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--reset-env", "env", "HOME=" + home,
         "cvlc", "--intf", "dummy", "--vout", "dummy", "--aout", "dummy", "--start-time=%g" % start,
         "-v", "--stop-time=%g" % (start + 0.1), "--play-and-exit", url],
        failures=("can't be opened", "will be disabled", "cannot open"))


def chromium(url, start):
    import websocket  # websocket-client, from PyPI (scripts/deps.sh)

    profile = tempfile.mkdtemp(prefix="chromium-profile.")
    port = 19300 + os.getpid() % 500
    browser = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
         "--remote-debugging-port=%d" % port, "--user-data-dir=" + profile, "--disk-cache-size=1", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                tabs = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json" % port))
                break
            except OSError:
                time.sleep(0.05)
        page = [t for t in tabs if t["type"] == "page"][0]
        ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=120)
        ids = iter(range(1, 1000))

        def call(method, **params):
            n = next(ids)
            ws.send(json.dumps({"id": n, "method": method, "params": params}))
            while True:
                m = json.loads(ws.recv())
                if m.get("id") == n:
                    return m

        # A page of the video's own origin (the proxy serves media to pages of its own origin
        # only), and a light one: the proxy's `/healthz`, not its dashboard.
        parts = urllib.parse.urlsplit(url)
        home = "file:///tmp/" if parts.scheme == "file" else "%s://%s/healthz" % (parts.scheme, parts.netloc)
        call("Page.enable")
        call("Page.navigate", url=home)
        time.sleep(0.5)
        script = """new Promise((resolve) => {
          const v = document.createElement('video'); v.muted = true; document.body.appendChild(v);
          const T = %f; const t0 = performance.now();
          v.addEventListener('error', () => resolve('failed: ' + (v.error ? v.error.code + ' ' + v.error.message : 'error')));
          v.addEventListener('loadedmetadata', () => { if (T > 0) v.currentTime = T; v.play().catch(() => {}); }, {once: true});
          const frame = (now, meta) => {
            if (meta.mediaTime >= T - 2) resolve(((performance.now() - t0) / 1000).toFixed(3));
            else v.requestVideoFrameCallback(frame);
          };
          v.requestVideoFrameCallback(frame);
          setTimeout(() => resolve('failed: no frame in 60 s'), 60000);
          v.src = %s; })""" % (start, json.dumps(url))
        r = call("Runtime.evaluate", expression=script, awaitPromise=True, returnByValue=True)
        return r["result"]["result"].get("value", "failed: %s" % r)
    finally:
        browser.kill()
        browser.wait()


def main():
    player, start, url = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    if player == "ffmpeg":
        print(timed(["ffmpeg", "-nostdin", "-v", "error", "-ss", "%g" % start, "-i", url, "-map", "0:v:0",
                     "-frames:v", "1", "-f", "null", "-"]))
    elif player == "mpv":
        print(timed(["mpv", "--no-config", "--vo=null", "--ao=null", "--start=%g" % start, "--frames=1", url]))
    elif player == "vlc":
        print(vlc(url, start))
    elif player == "gstreamer":
        # Debian's python3 has the GStreamer bindings; gstplay.py stops at the first frame.
        gst_url = url if "://" in url else "file://" + url
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gstplay.py")
        t0 = time.time()
        r = subprocess.run(["/usr/bin/python3", script, gst_url, "%g" % start, "1", "--first"],
                           capture_output=True, text=True, timeout=120)
        said = (r.stderr.strip().splitlines() or [""])[-1]
        if r.returncode == 0 and said.startswith("FRAMES 1 ") and said.endswith("ERROR None"):
            print("%.3f" % (time.time() - t0))
        else:
            print("failed: " + r.stderr.strip()[-200:])
    elif player == "chromium":
        print(chromium(url if "://" in url else "file://" + url, start))
    else:
        sys.exit("unknown player " + player)


main()
