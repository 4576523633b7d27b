import Foundation
import TestSupport
import XCTest

/// Real players play a prefetched window through `/v1/stream` with the origin stopped: a prefetch
/// job of [T, T+20) (the default plan, for every known player), nginx stopped, then each player
/// plays [T, T+5) from the proxy alone. Chromium counts its frames (`getVideoPlaybackQuality`),
/// ffmpeg its decoded frames, mpv the frames it showed (a script reads the property), VLC says
/// whether it disabled a track for want of bytes. Every cell is played and the matrix is reported
/// whole. GStreamer is not a cell: it takes the length of the answer to its Range-less first
/// request for the size of the file (see docs/service.md, "Player profiles").
final class PlayerMatrixTests: XCTestCase {
    private static let fps = 25.0
    private static let played = 5.0

    private struct Cell {
        let player: String
        let ok: Bool
        let detail: String
    }

    private func encode(_ dir: TempDirectory) throws -> String {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let source = [
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000", "-t", "90",
        ]
        let runs: [[String]] = [
            source + [
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-b:v", "1500k", "-pix_fmt", "yuv420p",
                "-c:a", "aac", "-b:a", "96k", www + "/moov-end.mp4",
            ],
            ["-i", www + "/moov-end.mp4", "-c", "copy", "-movflags", "+faststart", www + "/faststart.mp4"],
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "90", "-c:v", "libvpx", "-deadline", "realtime",
                "-cpu-used", "8", "-g", "50", "-b:v", "800k", "-c:a", "libopus", "-b:a", "64k", www + "/clip.webm",
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
        let page = try FaultServer()
        page.route("/player.html", .serve(body: Array("<!doctype html><body></body>".utf8), contentType: "text/html"))
        let mpvScript = dir.file("frames.lua")
        // The frames mpv showed, read as it plays (no change events come for it) and said when it quits.
        try Data(
            """
            local shown = -1
            mp.add_periodic_timer(0.05, function() shown = mp.get_property_number("estimated-frame-number", shown) end)
            mp.register_event("shutdown", function() io.stderr:write("FRAMES " .. shown .. "\\n") end)
            """.utf8
        ).write(to: URL(fileURLWithPath: mpvScript))
        let browser = try Browser(arguments: ["--autoplay-policy=no-user-gesture-required"])
        defer { browser.close() }
        let windows: [(file: String, start: Double)] = [
            ("faststart.mp4", 60), ("moov-end.mp4", 60), ("clip.webm", 60), ("moov-end.mp4", 0), ("clip.webm", 0),
        ]
        var matrix: [(String, [Cell])] = []
        for (file, start) in windows {
            let nginx = try NginxServer(root: www)
            // Chromium's requests come from the page's origin, which the service must allow.
            let service = try ServiceHarness(allowOrigins: ["http://127.0.0.1:\(page.port)"])
            defer { service.stop() }
            let origin = nginx.url("/" + file)
            let job = try service.postJob(
                #"{"type": "prefetch", "url": "\#(origin)", "start": \#(start), "seconds": 20}"#)
            let id = try XCTUnwrap(try job.json()["id"] as? String, job.text)
            XCTAssertEqual(try service.waitForJob(id)["state"] as? String, "done", "\(file) at \(start)")
            nginx.stop()
            let url = service.url("/v1/stream", origin: origin)
            var cells: [Cell] = []
            cells.append(try ffmpeg(url, start: start))
            cells.append(try mpv(url, start: start, script: mpvScript))
            cells.append(try vlc(url, start: start, home: dir.file("vlc-home")))
            cells.append(try chromium(browser, page: page.url("/player.html"), src: url, start: start))
            matrix.append(("\(file) [\(Int(start)), +20)", cells))
        }
        let report = matrix.map { window, cells in
            window + ": " + cells.map { "\($0.player) \($0.ok ? "✓" : "✗ (\($0.detail))")" }.joined(separator: ", ")
        }.joined(separator: "\n")
        XCTAssertTrue(matrix.allSatisfy { $0.1.allSatisfy(\.ok) }, report)
    }

    /// At least 90% of the frames of the seconds played.
    private func enough(_ frames: Double) -> Bool { frames >= 0.9 * PlayerMatrixTests.fps * PlayerMatrixTests.played }

    private func ffmpeg(_ url: String, start: Double) throws -> Cell {
        let r = try runProcess(
            "ffmpeg",
            [
                "-nostdin", "-v", "info", "-ss", "\(start)", "-i", url, "-t", "\(PlayerMatrixTests.played)", "-map",
                "0:v",
                "-f", "null", "-",
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

    /// VLC refuses to run as root: as `nobody`, with a home of its own.
    private func vlc(_ url: String, start: Double, home: String) throws -> Cell {
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        _ = try runProcess("chown", ["nobody", home])
        let r = try runProcess(
            "setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--reset-env", "env", "HOME=" + home, "cvlc",
                "-v",
                "--intf", "dummy", "--vout", "dummy", "--aout", "dummy", "--start-time=\(start)",
                "--stop-time=\(start + PlayerMatrixTests.played)", "--play-and-exit", url,
            ], timeout: 60)
        let failed = r.stderr.split(separator: "\n").filter {
            $0.contains("will be disabled") || $0.contains("connection failed")
        }
        return Cell(
            player: "vlc", ok: r.status == 0 && failed.isEmpty,
            detail: failed.first.map(String.init) ?? "exit \(r.status)")
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
