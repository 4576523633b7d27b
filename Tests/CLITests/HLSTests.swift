import Foundation
import TestSupport
import XCTest

/// HLS streams made by ffmpeg's muxer (MPEG-TS segments with two variants, fMP4 segments after an
/// `EXT-X-MAP`, one file of byte ranges, an audio rendition of its own), served by nginx: probe,
/// prefetch and check fetch the playlists and exactly the segments stated, and what they fetched
/// is what nginx sent.
final class HLSTests: CLITestCase {
    /// 12 s cut into 2 s segments: 6 per playlist.
    private func makeStreams() throws -> String {
        let www = dir.file("www")
        for sub in ["ts", "fmp4", "single", "alt"] {
            try FileManager.default.createDirectory(atPath: www + "/" + sub, withIntermediateDirectories: true)
        }
        let input = [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
            "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
        ]
        let hls = [
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-c:a", "aac", "-f", "hls", "-hls_time", "2",
            "-hls_playlist_type", "vod",
        ]
        let two = ["-filter_complex", "[0:v]split=2[a][b];[b]scale=160:90[c]", "-map", "[a]", "-map", "[c]"]
        let runs: [[String]] = [
            two + ["-map", "1:a", "-map", "1:a"] + hls + [
                "-b:v:0", "600k", "-b:v:1", "200k", "-master_pl_name", "master.m3u8",
                "-var_stream_map", "v:0,a:0 v:1,a:1", "-hls_segment_filename", www + "/ts/v%v_%d.ts",
                www + "/ts/v%v.m3u8",
            ],
            hls + [
                "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename",
                www + "/fmp4/seg%d.m4s", www + "/fmp4/index.m3u8",
            ],
            hls + ["-hls_flags", "single_file", www + "/single/index.m3u8"],
            two + ["-map", "1:a"] + hls + [
                "-master_pl_name", "master.m3u8", "-var_stream_map",
                "v:0,agroup:aud v:1,agroup:aud a:0,agroup:aud,language:en,name:English,default:yes",
                "-hls_segment_filename", www + "/alt/s%v_%d.ts", www + "/alt/p%v.m3u8",
            ],
        ]
        for args in runs {
            let r = try runProcess("ffmpeg", input + args)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        return www
    }

    private func paths(_ log: [AccessLogEntry]) -> [String] { log.map(\.path) }

    func testAMasterPlaylistIsProbedFromItsPlaylistsAndOneSegmentPerProbedVariant() throws {
        let www = try makeStreams()
        let nginx = try NginxServer(root: www)
        let probe = try json(try mprobe([nginx.url("/ts/master.m3u8"), "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(probe["format"] as? String, "hls")
        XCTAssertEqual(probe["master"] as? Bool, true)
        XCTAssertEqual(probe["live"] as? Bool, false)
        XCTAssertEqual(probe["duration"] as? Double ?? 0, 12, accuracy: 0.01)
        let variants = try XCTUnwrap(probe["variants"] as? [[String: Any]])
        XCTAssertEqual(variants.map { $0["width"] as? Int }, [320, 160])
        XCTAssertEqual(variants.compactMap { $0["codecs"] as? String }.count, 2)
        XCTAssertGreaterThan(variants[0]["bandwidth"] as? Int ?? 0, variants[1]["bandwidth"] as? Int ?? 0)
        for v in variants {
            let playlist = try XCTUnwrap(v["playlist"] as? [String: Any])
            XCTAssertEqual(playlist["segments"] as? Int, 6)
            XCTAssertEqual(playlist["target_duration"] as? Double, 2)
        }
        // The best variant's first segment, probed: both tracks; the other's, not fetched.
        let tracks = (variants[0]["first_segment"] as? [String: Any])?["tracks"] as? [[String: Any]] ?? []
        XCTAssertEqual(tracks.map { $0["codec"] as? String }, ["h264", "aac"])
        XCTAssertEqual(tracks.first?["width"] as? Int, 320)
        XCTAssertTrue(variants[1]["first_segment"] is NSNull)
        XCTAssertEqual(
            paths(try nginx.accessLog()).sorted(), ["/ts/master.m3u8", "/ts/v0.m3u8", "/ts/v0_0.ts", "/ts/v1.m3u8"])
        let fetch = try XCTUnwrap(probe["fetch"] as? [String: Any])
        XCTAssertEqual(fetch["requests"] as? Int, 4, "what nginx served")

        for (choice, count) in [("0", 3), ("all", 5)] {
            nginx.clearLog()
            try mprobe([nginx.url("/ts/master.m3u8"), "--variants", choice, "--cache-dir", dir.file("cache-" + choice)])
            XCTAssertEqual(try nginx.accessLog().count, count, "--variants \(choice)")
        }
        let human = try mprobe([nginx.url("/ts/master.m3u8"), "--cache-dir", cacheDir]).stdoutString
        XCTAssertTrue(human.contains("hls · VOD · 0:12.000 · 2 variants · 6 segments of ≤ 2 s"), human)
        try mprobe([nginx.url("/ts/master.m3u8"), "--variants", "some"], expect: 2)
    }

    func testSegmentsAfterAnInitSectionOrAsByteRangesAreProbedFromTheirOwnBytes() throws {
        let www = try makeStreams()
        let nginx = try NginxServer(root: www)
        let fmp4 = try json(try mprobe([nginx.url("/fmp4/index.m3u8"), "--json", "--cache-dir", cacheDir]))
        let variant = try XCTUnwrap((fmp4["variants"] as? [[String: Any]])?.first)
        XCTAssertEqual((variant["playlist"] as? [String: Any])?["init_section"] as? Bool, true)
        XCTAssertEqual(((variant["first_segment"] as? [String: Any])?["tracks"] as? [[String: Any]])?.count, 2)
        XCTAssertEqual(paths(try nginx.accessLog()), ["/fmp4/index.m3u8", "/fmp4/init.mp4", "/fmp4/seg0.m4s"])

        nginx.clearLog()
        let single = try json(try mprobe([nginx.url("/single/index.m3u8"), "--json", "--cache-dir", cacheDir]))
        let first = try XCTUnwrap((single["variants"] as? [[String: Any]])?.first)
        XCTAssertEqual((first["playlist"] as? [String: Any])?["byte_ranges"] as? Bool, true)
        XCTAssertEqual(((first["first_segment"] as? [String: Any])?["tracks"] as? [[String: Any]])?.count, 2)
        let log = try nginx.accessLog()
        XCTAssertEqual(log.count, 2, "the playlist, then its first byte range: \(log)")
        let text = try String(contentsOfFile: www + "/single/index.m3u8", encoding: .utf8)
        let range = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-BYTERANGE:") })
        let length = Int64(range.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@")[0]) ?? 0
        XCTAssertEqual(log.last?.range, "bytes=0-\(length - 1)")
    }

    func testARenditionOfItsOwnIsListedAndProbedWithTheVariantThatPlaysIt() throws {
        let www = try makeStreams()
        let nginx = try NginxServer(root: www)
        let probe = try json(try mprobe([nginx.url("/alt/master.m3u8"), "--json", "--cache-dir", cacheDir]))
        let renditions = try XCTUnwrap(probe["renditions"] as? [[String: Any]])
        XCTAssertEqual(renditions.count, 1)
        XCTAssertEqual(renditions.first?["type"] as? String, "AUDIO")
        XCTAssertEqual(renditions.first?["language"] as? String, "en")
        XCTAssertEqual(renditions.first?["default"] as? Bool, true)
        let tracks = (renditions.first?["first_segment"] as? [String: Any])?["tracks"] as? [[String: Any]] ?? []
        XCTAssertEqual(tracks.map { $0["codec"] as? String }, ["aac"])
        XCTAssertEqual((probe["variants"] as? [[String: Any]])?.first?["audio_group"] as? String, "group_aud")
    }

    /// The segments covering [5, 9) of 2 s segments are the 3rd to the 5th.
    /// The plan for ffmpeg, in 2 s segments, of [5, 9): its first 5 s of every variant (0 to 2),
    /// the segment before the window of each (1) and the window's of the one played (2 to 4).
    func testAPrefetchForFFmpegFetchesWhatItReadsAndTheWindowPlaysOffline() throws {
        let www = try makeStreams()
        let nginx = try NginxServer(root: www)
        let segments = { (prefix: String, last: Int) in (0...last).map { "\(prefix)_\($0).ts" } }
        let cases: [(String, [String], [String])] = [
            (
                "/ts/master.m3u8", [],
                ["/ts/master.m3u8", "/ts/v0.m3u8", "/ts/v1.m3u8"] + segments("/ts/v0", 4) + segments("/ts/v1", 2)
            ),
            (
                "/ts/master.m3u8", ["--variant", "worst"],
                ["/ts/master.m3u8", "/ts/v0.m3u8", "/ts/v1.m3u8"] + segments("/ts/v0", 2) + segments("/ts/v1", 4)
            ),
            ("/fmp4/index.m3u8", [], ["/fmp4/index.m3u8", "/fmp4/init.mp4"] + (0...4).map { "/fmp4/seg\($0).m4s" }),
            ("/single/index.m3u8", [], ["/single/index.m3u8"] + Array(repeating: "/single/index.ts", count: 5)),
            (
                "/alt/master.m3u8", [],
                ["/alt/master.m3u8", "/alt/p0.m3u8", "/alt/p1.m3u8", "/alt/pEnglish.m3u8"] + segments("/alt/s0", 4)
                    + segments("/alt/s1", 2) + segments("/alt/sEnglish", 4)
            ),
        ]
        for (n, (path, options, expected)) in cases.enumerated() {
            let cache = dir.file("cache-\(n)")
            nginx.clearLog()
            let result = try json(
                try mprobe(
                    [
                        "prefetch", nginx.url(path), "--start", "5", "--seconds", "4", "--for", "ffmpeg", "--json",
                        "--cache-dir", cache,
                    ] + options))
            XCTAssertEqual(paths(try nginx.accessLog()).sorted(), expected.sorted(), "\(path) \(options)")
            let playlists = try XCTUnwrap(result["playlists"] as? [[String: Any]])
            // The played variant's playlist comes first, then its audio rendition's, then the others'.
            for (i, p) in playlists.enumerated() where i == 0 || p["role"] as? String == "audio" {
                XCTAssertEqual(p["segments"] as? Int, 5, "\(p)")
                let buffered = p["buffered"] as? [[String: Any]] ?? []
                XCTAssertTrue(
                    buffered.contains { ($0["start"] as? Double ?? 99) <= 5 && ($0["end"] as? Double ?? 0) >= 9 },
                    "\(p)")
            }
            // `cache ranges` of the playlist says the same, without the network.
            let ranges = try json(try mprobe(["cache", "ranges", nginx.url(path), "--json", "--cache-dir", cache]))
            let stream = try XCTUnwrap(ranges["stream"] as? [[String: Any]], "\(ranges)")
            XCTAssertTrue(
                stream.contains {
                    (($0["buffered"] as? [[String: Any]]) ?? []).contains {
                        ($0["start"] as? Double ?? 99) <= 5 && ($0["end"] as? Double ?? 0) >= 9
                    }
                }, "\(stream)")
            nginx.clearLog()
            let check = try mprobe(
                ["check", nginx.url(path), "--start", "5", "--seconds", "4", "--offline", "--cache-dir", cache]
                    + options)
            XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
            XCTAssertEqual(try nginx.accessLog().count, 0, "\(path): played from the cache")
            // Past what was planned the cache has nothing: said, not guessed.
            let outside = try mprobe(
                ["check", nginx.url(path), "--start", "10.5", "--seconds", "1", "--offline", "--cache-dir", cache]
                    + options,
                expect: 4)
            XCTAssertTrue(outside.stderr.contains("not in the cache"), outside.stderr)
        }
    }

    /// From the lowest variant at least as wide as the pictures, the segment holding each time:
    /// whole for MPEG-TS, the head (moof and first key frame) for fragmented MP4.
    func testThumbnailsComeFromTheSegmentHoldingEachTimeOfTheSmallestSufficientVariant() throws {
        let www = try makeStreams()
        let nginx = try NginxServer(root: www)
        let out = dir.file("thumbs")
        try mprobe([
            "thumbs", nginx.url("/ts/master.m3u8"), "--at", "0,3,5,10.5", "--width", "160", "--sprite",
            "--out", out, "--cache-dir", cacheDir,
        ])
        XCTAssertEqual(
            paths(try nginx.accessLog()).sorted(),
            ["/ts/master.m3u8", "/ts/v1.m3u8", "/ts/v1_0.ts", "/ts/v1_1.ts", "/ts/v1_2.ts", "/ts/v1_5.ts"].sorted(),
            "the 160-wide variant, one segment per time")
        let manifest = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                as? [String: Any])
        let thumbnails = try XCTUnwrap(manifest["thumbnails"] as? [[String: Any]])
        // Key frames every 2 s: the one at or before each time.
        XCTAssertEqual(thumbnails.compactMap { $0["pts"] as? Double }.map { ($0 * 10).rounded() / 10 }, [0, 2, 4, 10])
        XCTAssertEqual(thumbnails.compactMap { $0["width"] as? Int }, [160, 160, 160, 160])
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/thumbs.vtt"))

        nginx.clearLog()
        try mprobe([
            "thumbs", nginx.url("/fmp4/index.m3u8"), "--at", "5", "--out", dir.file("f"), "--cache-dir", cacheDir,
        ])
        let log = try nginx.accessLog()
        XCTAssertEqual(paths(log).sorted(), ["/fmp4/index.m3u8", "/fmp4/init.mp4", "/fmp4/seg2.m4s"])
        XCTAssertEqual(
            log.first { $0.path == "/fmp4/seg2.m4s" }?.range, "bytes=0-98303", "the segment's head, not all of it")
    }

    /// The user's headers go on every playlist and segment request; segment URIs with query
    /// strings (signed URLs) keep them, relative to the playlist.
    func testHeadersReachEveryRequestAndSignedSegmentURLsKeepTheirQuery() throws {
        let www = try makeStreams()
        var signed = try String(contentsOfFile: www + "/ts/v0.m3u8", encoding: .utf8)
        signed = signed.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasSuffix(".ts") ? $0 + "?sig=abc&exp=1" : $0 }.joined(separator: "\n")
        try Data(signed.utf8).write(to: URL(fileURLWithPath: www + "/ts/signed.m3u8"))
        let nginx = try NginxServer(
            root: www, locations: #"location /ts/ { if ($http_x_token != "s3cret") { return 403; } }"#)
        let url = nginx.url("/ts/signed.m3u8")
        let refused = try mprobe(
            ["prefetch", url, "--start", "5", "--seconds", "4", "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(refused.stderr.contains("HTTP 403"), refused.stderr)
        nginx.clearLog()
        try mprobe([
            "prefetch", url, "--start", "5", "--seconds", "4", "-H", "X-Token: s3cret", "--cache-dir", cacheDir,
        ])
        let log = try nginx.accessLog()
        XCTAssertEqual(
            log.map(\.status), Array(repeating: 206, count: log.count),
            "the playlist and the segments, each with the header")
        let segments = log.filter { $0.path.contains(".ts") }
        XCTAssertGreaterThanOrEqual(segments.count, 3, "at least the window's: \(log.map(\.path))")
        XCTAssertTrue(segments.allSatisfy { $0.path.hasSuffix(".ts?sig=abc&exp=1") }, "\(log.map(\.path))")
        let check = try mprobe(["check", url, "--start", "5", "--seconds", "4", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
    }

    /// A variant that another player would open but whose playlist is gone does not fail the
    /// prefetch of the one played: it is left out of the plan, as a player leaves it out.
    func testAVariantWhosePlaylistIsGoneIsLeftOutOfThePlan() throws {
        let www = try makeStreams()
        let master = """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=320x180
            v0.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=100000,RESOLUTION=160x90
            gone.m3u8
            """
        try Data(master.utf8).write(to: URL(fileURLWithPath: www + "/ts/gone-variant.m3u8"))
        let nginx = try NginxServer(root: www)
        let result = try json(
            try mprobe([
                "prefetch", nginx.url("/ts/gone-variant.m3u8"), "--start", "5", "--seconds", "4", "--json",
                "--cache-dir", dir.file("cache-gone"),
            ]))
        let uris = (result["playlists"] as? [[String: Any]] ?? []).compactMap { $0["uri"] as? String }
        XCTAssertEqual(uris, [nginx.url("/ts/v0.m3u8")], "\(result)")
        XCTAssertTrue(try nginx.accessLog().contains { $0.path == "/ts/gone.m3u8" && $0.status == 404 })
    }

    func testLiveBrokenAndHostilePlaylistsAreClearErrors() throws {
        let www = try makeStreams()
        let segment = "#EXTINF:2.0,\n../ts/v0_0.ts\n"
        let files = [
            "live.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:40\n" + segment + segment,
            "self.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\nself.m3u8\n",
            "loop.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nloop.m3u8\n#EXT-X-ENDLIST\n",
            "missing.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + segment
                + "#EXTINF:2.0,\nnowhere.ts\n#EXT-X-ENDLIST\n",
            "local.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n",
            "nonsense.m3u8": "#EXTM3U\n#EXTINF:two seconds,\nseg.ts\n#EXT-X-ENDLIST\n",
        ]
        try FileManager.default.createDirectory(atPath: www + "/bad", withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: www + "/bad/" + name)) }
        let nginx = try NginxServer(root: www)
        let live = try json(try mprobe([nginx.url("/bad/live.m3u8"), "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(live["live"] as? Bool, true)
        for command in [["prefetch"], ["thumbs", "--out", dir.file("live")], ["check"]] {
            let refused = try mprobe(
                [command[0], nginx.url("/bad/live.m3u8")] + command.dropFirst() + ["--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(refused.stderr.contains("a live stream"), "\(command): \(refused.stderr)")
        }

        let expectations: [(String, [String], Int32, String)] = [
            ("self.m3u8", [], 5, "lists variants itself"),
            ("loop.m3u8", [], 5, "is an HLS playlist itself"),
            ("missing.m3u8", ["prefetch", "--start", "3"], 3, "HTTP 404"),
            ("local.m3u8", [], 5, "does not follow"),
            ("nonsense.m3u8", [], 5, "not a number of seconds"),
        ]
        for (name, command, status, words) in expectations {
            let r = try mprobe(
                (command.isEmpty ? [] : [command[0]]) + [nginx.url("/bad/" + name)] + command.dropFirst()
                    + ["--cache-dir", cacheDir], expect: status)
            XCTAssertTrue(r.stderr.contains(words), "\(name): \(r.stderr)")
        }
    }
}
