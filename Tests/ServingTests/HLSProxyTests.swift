import Foundation
import TestSupport
import XCTest

/// HLS through `/v1/stream`: playlists come back with every URI pointing at the proxy, ffmpeg
/// plays the stream through it, and after a prefetch job the window plays with the origin gone.
final class HLSProxyTests: XCTestCase {
    var nginx: NginxServer!
    var www: TempDirectory!

    /// 12 s in 2 s MPEG-TS segments, two variants behind a master playlist.
    override func setUpWithError() throws {
        www = try TempDirectory(prefix: "mprobe-hls")
        let r = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
                "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
                "-filter_complex", "[0:v]split=2[a][b];[b]scale=160:90[c]", "-map", "[a]", "-map", "[c]", "-map", "1:a",
                "-map", "1:a",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-c:a", "aac", "-f", "hls", "-hls_time", "2",
                "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8", "-var_stream_map", "v:0,a:0 v:1,a:1",
                "-hls_segment_filename", www.file("v%v_%d.ts"), www.file("v%v.m3u8"),
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        nginx = try NginxServer(root: www.path)
    }

    override func tearDown() {
        nginx.stop()
    }

    func testPlaylistsPointBackAtTheProxyAndFFmpegPlaysThroughIt() throws {
        let service = try ServiceHarness(token: "s3cret")
        defer { service.stop() }
        let master = service.url("/v1/stream", origin: nginx.url("/master.m3u8"), extra: "&token=s3cret")
        let reply = try HTTPClient.request("GET", master)
        XCTAssertEqual(reply.status, 200, reply.text)
        let uris = reply.text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        XCTAssertEqual(uris.count, 2)
        for uri in uris {
            XCTAssertTrue(
                uri.hasPrefix("/v1/stream/v") && uri.contains(".m3u8?url=http%3A%2F%2F127.0.0.1%3A"), String(uri))
            XCTAssertTrue(uri.hasSuffix("&token=s3cret"), "players that cannot send headers keep the token: \(uri)")
        }
        // A variant's playlist: its segments too.
        let variant = try HTTPClient.request("GET", service.base + String(uris[0]))
        XCTAssertEqual(
            variant.text.split(separator: "\n").filter { $0.hasSuffix(".ts&token=s3cret") }.count, 6, variant.text)

        for pass in 1...2 {
            nginx.clearLog()
            let play = try runProcess(
                "ffmpeg", ["-v", "error", "-i", master, "-map", "0:v:0", "-map", "0:a:0", "-f", "null", "-"])
            XCTAssertEqual(play.status, 0, play.stderr)
            let log = try nginx.accessLog()
            if pass == 2 { XCTAssertEqual(log.count, 0, "played again from the cache: \(log.map(\.path))") }
            XCTAssertEqual(Set(log.map(\.path)).count, log.count, "nothing fetched twice")
        }
    }

    func testAfterAPrefetchJobTheWindowPlaysThroughTheProxyWithTheOriginStopped() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let body =
            #"{"type": "prefetch", "url": "\#(nginx.url("/v0.m3u8"))", "start": 6, "seconds": 4, "for": "ffmpeg"}"#
        let submitted = try service.postJob(body)
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let job = try service.waitForJob(try XCTUnwrap(try submitted.json()["id"] as? String))
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        // 2 s segments: ffmpeg's first 5 s (0, 1, 2), the one before the window (2) and the window's.
        XCTAssertEqual(
            Set(try nginx.accessLog().map(\.path)),
            ["/v0.m3u8", "/v0_0.ts", "/v0_1.ts", "/v0_2.ts", "/v0_3.ts", "/v0_4.ts"])
        nginx.stop()

        let playlist = service.url("/v1/stream", origin: nginx.url("/v0.m3u8"))
        // ffmpeg reads the first segments to learn the streams, then seeks into the window.
        let play = try runProcess(
            "ffmpeg", ["-v", "error", "-ss", "6.5", "-i", playlist, "-t", "3", "-map", "0:v", "-f", "framecrc", "-"])
        XCTAssertEqual(play.status, 0, "the prefetched window plays with the origin gone: \(play.stderr)")
        let frames = play.stdoutString.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        XCTAssertGreaterThanOrEqual(frames, 88, "3 s of 30 fps video")
        // Outside the window the proxy says the origin is gone (ffmpeg skips such a segment).
        let outside = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/v0_5.ts")))
        XCTAssertEqual(outside.status, 502, outside.text)
    }

    /// A DASH manifest comes back with each Representation's segment URLs absolute through the
    /// proxy (its BaseURLs resolved and gone, the template's identifiers kept for the player).
    func testADASHManifestPointsBackAtTheProxyAndFFmpegPlaysItThenFromTheCacheAlone() throws {
        let dash = try TempDirectory(prefix: "mprobe-dash")
        let r = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
                "-i", "sine", "-t", "6", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-c:a", "aac",
                "-f", "dash", "-seg_duration", "2", dash.file("manifest.mpd"),
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        let origin = try NginxServer(root: dash.path)
        defer { origin.stop() }
        let service = try ServiceHarness()
        defer { service.stop() }
        let manifest = service.url("/v1/stream", origin: origin.url("/manifest.mpd"))
        let reply = try HTTPClient.request("GET", manifest)
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertFalse(reply.text.contains("<BaseURL"), reply.text)
        XCTAssertTrue(
            reply.text.contains(
                #"media="/v1/stream/chunk-stream$RepresentationID$-$Number%05d$.m4s?url=http%3A%2F%2F127.0.0.1%3A"#),
            reply.text)
        for pass in 1...2 {
            origin.clearLog()
            let play = try runProcess("ffmpeg", ["-v", "error", "-i", manifest, "-map", "0:v", "-f", "framecrc", "-"])
            XCTAssertEqual(play.status, 0, play.stderr)
            XCTAssertEqual(
                play.stdoutString.split(separator: "\n").filter { !$0.hasPrefix("#") }.count, 180, "6 s at 30 fps")
            if pass == 2 { XCTAssertEqual(try origin.accessLog().count, 0, "played again from the cache") }
        }
    }

    /// URIs in unquoted attributes and CRLF playlists are routed too; a URI the proxy cannot route
    /// (a local file, an unresolvable name) makes the playlist an error rather than a way around it.
    func testEveryURIFormIsRoutedOrThePlaylistRefused() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let crlf =
            "#EXTM3U\r\n#EXT-X-MAP:URI=v0_0.ts\r\n#EXT-X-KEY:METHOD=AES-128,URI=key.bin,IV=0x1\r\n#EXTINF:2,\r\nv0_1.ts\r\n#EXT-X-ENDLIST\r\n"
        try Data(crlf.utf8).write(to: URL(fileURLWithPath: www.file("forms.m3u8")))
        let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/forms.m3u8")))
        XCTAssertEqual(reply.status, 200, reply.text)
        let lines = reply.text.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("#EXT-X-MAP:URI=\"/v1/stream/v0_0.ts?url=") }, reply.text)
        XCTAssertTrue(
            lines.contains {
                $0.hasPrefix("#EXT-X-KEY:METHOD=AES-128,URI=\"/v1/stream/key.bin?url=") && $0.hasSuffix(",IV=0x1")
            },
            reply.text)
        XCTAssertTrue(lines.contains { $0.hasPrefix("/v1/stream/v0_1.ts?url=") }, reply.text)
        for (name, line) in [("local.m3u8", "file:///etc/passwd"), ("odd.m3u8", "http://exa mple.invalid/x.ts")] {
            try Data("#EXTM3U\n#EXTINF:2,\n\(line)\n#EXT-X-ENDLIST\n".utf8).write(
                to: URL(fileURLWithPath: www.file(name)))
            let refused = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/" + name)))
            XCTAssertEqual(refused.status, 502, "\(name): \(refused.text)")
        }
    }

    /// A playlist's signed URLs (nginx ignores the query) stay secret in what jobs and probes
    /// answer and store, as the job's own URL does.
    func testSignaturesInAPlaylistNeverReachAJobsResultOrAProbe() throws {
        let signed = try String(contentsOfFile: www.file("v0.m3u8"), encoding: .utf8)
            .replacingOccurrences(of: ".ts\n", with: ".ts?X-Amz-Signature=SEGSECRET&token=TOKSECRET\n")
        try Data(signed.utf8).write(to: URL(fileURLWithPath: www.file("signed.m3u8")))
        let service = try ServiceHarness()
        defer { service.stop() }
        let playlist = nginx.url("/signed.m3u8") + "?X-Amz-Signature=PLSECRET"
        let id = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(playlist)", "start": 2, "seconds": 2}"#).json()["id"]
                as? String)
        let job = try service.waitForJob(id)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        let answers = [
            try service.get("/v1/jobs/" + id).text, try service.get("/v1/jobs").text,
            try HTTPClient.request("GET", service.url("/v1/probe", origin: playlist)).text,
        ]
        for answer in answers {
            XCTAssertFalse(answer.contains("SECRET"), answer)
        }
        XCTAssertTrue(answers[0].contains("X-Amz-Signature=***"), answers[0])
        let stored = try Data(contentsOf: URL(fileURLWithPath: service.dir.file("cache") + "/jobs.sqlite"))
        XCTAssertNil(stored.firstRange(of: Data("SECRET".utf8)), "nothing of them in the job store")
    }

    /// A segment URI near the 8 KiB limit is rewritten into a line the proxy still takes.
    func testALongSegmentURIIsRoutedIntoALineTheProxyTakes() throws {
        let long = "v0_1.ts?" + String(repeating: "p", count: 7900)
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(long)\n#EXT-X-ENDLIST\n".utf8)
            .write(to: URL(fileURLWithPath: www.file("long.m3u8")))
        let service = try ServiceHarness()
        defer { service.stop() }
        let rewritten = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/long.m3u8")))
        XCTAssertEqual(rewritten.status, 200, rewritten.text)
        let line = try XCTUnwrap(rewritten.text.split(separator: "\n").first { $0.hasPrefix("/v1/stream/") })
        let segment = try HTTPClient.request("GET", service.base + String(line))
        XCTAssertEqual(segment.status, 200, String(segment.text.prefix(300)))
        XCTAssertEqual(segment.body, Array(try Data(contentsOf: URL(fileURLWithPath: www.file("v0_1.ts")))))
    }
}
