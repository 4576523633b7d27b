import Foundation
import TestSupport
import XCTest

/// Real players play a prefetched window through `/v1/stream` with the origin stopped: a prefetch
/// job of [T, T+20) (the default plan, for every known player), nginx stopped, then each player
/// plays [T, T+5) from the proxy alone. Chromium counts its frames (`getVideoPlaybackQuality`),
/// ffmpeg its decoded frames, mpv the frames it showed (a script reads the property), GStreamer's
/// playbin the frames its fakesink got, VLC says whether it disabled a track for want of bytes.
/// Every cell is played and the matrix is reported whole. A cell that fails is played again
/// straight from the origin: one that fails there too is the player's own failure (Debian's
/// FFmpeg 5.1 does not seek in HLS with fMP4 segments), reported and not held against the plan.
/// GStreamer plays a file from 0 only where the moov is at the start: it takes the length of the
/// answer to its Range-less first request (the cached run from byte 0) for the size of the file,
/// so it cannot seek past it, nor find a moov at the end. Chromium plays no DASH (it has no
/// player for an MPD). See docs/service.md, "Player profiles".
final class PlayerMatrixTests: XCTestCase {
    private static let fps = 25.0
    private static let played = 5.0

    private struct Cell {
        let player: String
        let ok: Bool
        let detail: String
        /// Why a failure is not the plan's: the player fails from the origin too.
        var excuse: String? = nil
    }

    private enum Player: String, CaseIterable {
        case ffmpeg, mpv, vlc, gstreamer, chromium
    }

    private final class Players {
        let dir: TempDirectory
        let browser: Browser
        let page: FaultServer
        let mpvScript: String

        init(_ dir: TempDirectory) throws {
            self.dir = dir
            page = try FaultServer()
            page.route(
                "/player.html", .serve(body: Array("<!doctype html><body></body>".utf8), contentType: "text/html"))
            mpvScript = dir.file("frames.lua")
            // The frames mpv showed, read as it plays (no change events come for it) and said when it quits.
            try Data(
                """
                local shown = -1
                mp.add_periodic_timer(0.05, function() shown = mp.get_property_number("estimated-frame-number", shown) end)
                mp.register_event("shutdown", function() io.stderr:write("FRAMES " .. shown .. "\\n") end)
                """.utf8
            ).write(to: URL(fileURLWithPath: mpvScript))
            browser = try Browser(arguments: ["--autoplay-policy=no-user-gesture-required"])
        }
    }

    private func encode(_ dir: TempDirectory) throws -> String {
        let www = dir.file("www")
        for sub in ["", "/ts", "/fmp4", "/dash"] {
            try FileManager.default.createDirectory(atPath: www + sub, withIntermediateDirectories: true)
        }
        let source = [
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000", "-t", "90",
        ]
        let x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-sc_threshold", "0", "-pix_fmt", "yuv420p"]
        // Two variants (640x360 and 320x180), key frames every 2 s, packaged in 4 s segments.
        let ladder = [
            "-i", www + "/ladder.mp4", "-map", "0:v:0", "-map", "0:a:0", "-map", "0:v:1", "-map", "0:a:1", "-c", "copy",
        ]
        let hls = [
            "-f", "hls", "-hls_time", "4", "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8",
            "-var_stream_map", "v:0,a:0 v:1,a:1",
        ]
        let runs: [[String]] = [
            source + x264 + ["-b:v", "1500k", "-c:a", "aac", "-b:a", "96k", www + "/moov-end.mp4"],
            ["-i", www + "/moov-end.mp4", "-c", "copy", "-movflags", "+faststart", www + "/faststart.mp4"],
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "90", "-c:v", "libvpx", "-deadline", "realtime",
                "-cpu-used", "8", "-g", "50", "-b:v", "800k", "-c:a", "libopus", "-b:a", "64k", www + "/clip.webm",
            ],
            source + [
                "-filter_complex", "[0:v]split=2[a][b];[b]scale=320:180[low]", "-map", "[a]", "-map", "[low]", "-map",
                "1:a", "-map", "1:a",
            ] + x264 + ["-b:v:0", "1500k", "-b:v:1", "400k", "-c:a", "aac", "-b:a", "96k", www + "/ladder.mp4"],
            ladder + hls + ["-hls_segment_filename", www + "/ts/v%v_%d.ts", www + "/ts/v%v.m3u8"],
            ladder + hls + [
                "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init%v.mp4", "-hls_segment_filename",
                www + "/fmp4/v%v_%d.m4s", www + "/fmp4/v%v.m3u8",
            ],
            [
                "-i", www + "/ladder.mp4", "-map", "0:v:0", "-map", "0:v:1", "-map", "0:a:0", "-c", "copy", "-f",
                "dash",
                "-seg_duration", "4", "-adaptation_sets", "id=0,streams=v id=1,streams=a", www + "/dash/manifest.mpd",
            ],
        ]
        for args in runs {
            let r = try runProcess("ffmpeg", ["-v", "error", "-y"] + args, timeout: 300)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        return www
    }

    func testPrefetchedWindowsPlayOfflineInRealPlayers() throws {
        let dir = try TempDirectory()
        let www = try encode(dir)
        let players = try Players(dir)
        defer { players.browser.close() }
        let files: [Player] = [.ffmpeg, .mpv, .vlc, .chromium]
        // GStreamer plays a file offline only where the cached run from byte 0 holds all it reads.
        let fromZero = files + [.gstreamer]
        let rows: [(path: String, start: Double, players: [Player])] = [
            ("/faststart.mp4", 60, files), ("/moov-end.mp4", 60, files), ("/clip.webm", 60, files),
            ("/faststart.mp4", 0, fromZero), ("/moov-end.mp4", 0, files), ("/clip.webm", 0, fromZero),
            ("/ts/master.m3u8", 60, Player.allCases), ("/fmp4/master.m3u8", 60, Player.allCases),
            ("/dash/manifest.mpd", 60, [.ffmpeg, .mpv, .vlc, .gstreamer]),
            ("/ts/master.m3u8", 0, Player.allCases), ("/fmp4/master.m3u8", 0, Player.allCases),
            ("/dash/manifest.mpd", 0, [.ffmpeg, .mpv, .vlc, .gstreamer]),
        ]
        var matrix: [(String, [Cell])] = []
        for row in rows {
            let cells = try playOffline(row.path, start: row.start, with: row.players, www: www, players: players)
            matrix.append(("\(row.path) [\(Int(row.start)), +20)", cells))
        }
        let report = matrix.map { window, cells in
            window + ": "
                + cells.map { c in c.player + (c.excuse.map { " — (\($0))" } ?? (c.ok ? " ✓" : " ✗ (\(c.detail))")) }
                .joined(separator: ", ")
        }.joined(separator: "\n")
        print("player matrix:\n" + report)
        XCTAssertTrue(matrix.allSatisfy { $0.1.allSatisfy { $0.ok || $0.excuse != nil } }, report)
        // The cells the player fails from the origin too are the ones known (FFmpeg 5.1 and HLS fMP4).
        let excused = matrix.flatMap { row in row.1.filter { $0.excuse != nil }.map { "\($0.player) \(row.0)" } }
        XCTAssertTrue(
            excused.allSatisfy { $0.contains("/fmp4/") && ($0.hasPrefix("ffmpeg") || $0.hasPrefix("mpv")) }, report)
    }

    /// The control: a plan for libavformat alone leaves out what Chromium reads of a file and
    /// what VLC reads of a ladder, and they fail where the default plan plays (so the cells above
    /// can fail).
    func testAPlanForFFmpegAloneFailsChromiumAndVLC() throws {
        let dir = try TempDirectory()
        let www = try encode(dir)
        let players = try Players(dir)
        defer { players.browser.close() }
        for (path, player) in [("/moov-end.mp4", Player.chromium), ("/ts/master.m3u8", .vlc)] {
            let cells = try playOffline(path, start: 60, for: "ffmpeg", with: [player], www: www, players: players)
            XCTAssertFalse(cells[0].ok, "\(player) played \(path) with the plan for ffmpeg: \(cells[0].detail)")
        }
    }

    /// A prefetch job of [start, start + 20) of `path` (for `profiles`), nginx stopped, then each
    /// player plays from the proxy; a failing cell is played from the origin again.
    private func playOffline(
        _ path: String, start: Double, for profiles: String = "all", with list: [Player], www: String,
        players: Players
    ) throws -> [Cell] {
        let nginx = try NginxServer(root: www)
        // Chromium's requests come from the page's origin, which the service must allow.
        let service = try ServiceHarness(allowOrigins: ["http://127.0.0.1:\(players.page.port)"])
        defer { service.stop() }
        let origin = nginx.url(path)
        let job = try service.postJob(
            #"{"type": "prefetch", "url": "\#(origin)", "start": \#(start), "seconds": 20, "for": "\#(profiles)"}"#)
        let id = try XCTUnwrap(try job.json()["id"] as? String, job.text)
        XCTAssertEqual(try service.waitForJob(id)["state"] as? String, "done", "\(path) at \(start)")
        nginx.stop()
        let url = service.url("/v1/stream", origin: origin)
        var cells: [Cell] = []
        for player in list { cells.append(try play(player, url, start: start, players: players)) }
        if cells.contains(where: { !$0.ok }) {
            // Played again from the origin: what fails there too is the player's.
            let online = try NginxServer(root: www)
            defer { online.stop() }
            for (i, player) in list.enumerated() where !cells[i].ok {
                if !(try play(player, online.url(path), start: start, players: players).ok) {
                    cells[i].excuse = "fails from the origin too: " + cells[i].detail
                }
            }
        }
        return cells
    }

    private func play(_ player: Player, _ url: String, start: Double, players: Players) throws -> Cell {
        switch player {
        case .ffmpeg: return try ffmpeg(url, start: start)
        case .mpv: return try mpv(url, start: start, script: players.mpvScript)
        case .vlc: return try vlc(url, start: start, home: players.dir.file("vlc-home"))
        case .gstreamer: return try gstreamer(url, start: start)
        case .chromium:
            return try chromium(players.browser, page: players.page.url("/player.html"), src: url, start: start)
        }
    }

    /// At least 90% of the frames of the seconds played.
    private func enough(_ frames: Double) -> Bool { frames >= 0.9 * PlayerMatrixTests.fps * PlayerMatrixTests.played }

    private func ffmpeg(_ url: String, start: Double) throws -> Cell {
        let r = try runProcess(
            "ffmpeg",
            // `-ss 0` on HLS starts at the stream's first timestamp, past 0, and plays short: none at 0.
            ["-nostdin", "-v", "info"] + (start > 0 ? ["-ss", "\(start)"] : []) + [
                "-i", url, "-t", "\(PlayerMatrixTests.played)", "-map", "0:v:0", "-f", "null", "-",
            ], timeout: 60)
        let frames =
            r.stderr.components(separatedBy: "frame=").last.flatMap {
                Double($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber })
            } ?? 0
        return Cell(
            player: "ffmpeg", ok: r.status == 0 && enough(frames), detail: "exit \(r.status), \(Int(frames)) frames")
    }

    private func mpv(_ url: String, start: Double, script: String) throws -> Cell {
        let r = try runProcess(
            "mpv",
            [
                "--no-config", "--vo=null", "--ao=null", "--script=" + script, "--start=\(start)",
                "--length=\(PlayerMatrixTests.played)", url,
            ], timeout: 60)
        let first = start * PlayerMatrixTests.fps
        let last =
            r.stderr.components(separatedBy: "FRAMES ").last.flatMap {
                Double($0.prefix { $0.isNumber || $0 == "." || $0 == "-" })
            } ?? -1
        return Cell(
            player: "mpv", ok: r.status == 0 && enough(last - first),
            detail: "exit \(r.status), \(Int(last - first)) frames")
    }

    /// VLC refuses to run as root: as `nobody`, with a home of its own. A file fails when VLC
    /// disables a track for want of bytes. A stream fails when a segment VLC needs for the
    /// seconds played could not be had: its adaptive demuxer skips, switches variant or gives
    /// up, without a word above debug level. Segments past them may fail: VLC reads 30 s ahead.
    private func vlc(_ url: String, start: Double, home: String) throws -> Cell {
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        _ = try runProcess("chown", ["nobody", home])
        let r = try runProcess(
            "setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--reset-env", "env", "HOME=" + home, "cvlc",
                "-vv", "--intf", "dummy", "--vout", "dummy", "--aout", "dummy", "--start-time=\(start)",
                "--stop-time=\(start + PlayerMatrixTests.played)", "--play-and-exit", url,
            ], timeout: 60)
        var failed = r.stderr.split(separator: "\n").filter { $0.contains("will be disabled") }.map(String.init)
        var retrieving: String?
        for line in r.stderr.split(separator: "\n") {
            if let at = line.range(of: "Retrieving ") {
                retrieving = String(line[at.upperBound...])
            } else if let uri = retrieving, line.contains("connection failed") || line.hasPrefix("HTTP/1.1 5") {
                if PlayerMatrixTests.segmentStart(uri) < start + PlayerMatrixTests.played { failed.append(uri) }
                retrieving = nil
            }
        }
        return Cell(
            player: "vlc", ok: r.status == 0 && failed.isEmpty,
            detail: failed.first.map { "failed: " + $0 } ?? "exit \(r.status)")
    }

    /// Where a segment of the ladders `encode` packages starts (4 s segments: `v1_15.ts` and
    /// `chunk-stream0-00016.m4s` at 60 s); 0 for playlists and initialization sections.
    private static func segmentStart(_ uri: String) -> Double {
        let name = String(uri.split(separator: "?").first ?? "").split(separator: "/").last.map(String.init) ?? ""
        if name.hasPrefix("v"), let n = Double(name.drop { $0 != "_" }.dropFirst().prefix { $0.isNumber }) {
            return 4 * n
        }
        if name.hasPrefix("chunk-stream"), let n = Double(name.split(separator: "-").last?.prefix(5) ?? "") {
            return 4 * (n - 1)
        }
        return 0
    }

    /// bench/gstplay.py, with Debian's python3 (it has the GStreamer bindings), whatever python3
    /// comes first on PATH.
    private func gstreamer(_ url: String, start: Double) throws -> Cell {
        let script = TestMedia.repoRoot + "/bench/gstplay.py"
        let r = try runProcess(
            "/usr/bin/python3", [script, url, "\(start)", "\(PlayerMatrixTests.played)"], timeout: 60)
        let line = r.stderr.split(separator: "\n").last { $0.hasPrefix("FRAMES ") }.map(String.init) ?? r.stderr
        let frames = Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Cell(
            player: "gstreamer", ok: r.status == 0 && line.hasSuffix("ERROR None") && enough(frames), detail: line)
    }

    private func chromium(_ browser: Browser, page: String, src: String, start: Double) throws -> Cell {
        let tab = try browser.newPage()
        try tab.navigate(page)
        let result =
            try tab.evaluate(
                """
                new Promise((resolve) => {
                  const v = document.createElement('video'); v.muted = true; document.body.appendChild(v);
                  const T = \(start), D = \(PlayerMatrixTests.played);
                  let timer = null;
                  const done = (r) => { clearInterval(timer); v.pause(); resolve(r); };
                  v.addEventListener('error', () => done({error: v.error ? v.error.code + ' ' + v.error.message : 'error'}));
                  v.addEventListener('loadedmetadata', () => { if (T > 0) v.currentTime = T; v.play().catch(() => {}); },
                    {once: true});
                  timer = setInterval(() => {
                    if (v.currentTime >= T + D) {
                      const q = v.getVideoPlaybackQuality();
                      done({frames: q.totalVideoFrames, time: v.currentTime});
                    }
                  }, 50);
                  setTimeout(() => done({stuck: v.currentTime}), 25000);
                  v.src = \(try BrowserPage.quote(src));
                })
                """) as? [String: Any] ?? [:]
        let frames = (result["frames"] as? NSNumber)?.doubleValue ?? 0
        return Cell(player: "chromium", ok: enough(frames), detail: "\(result)")
    }
}
