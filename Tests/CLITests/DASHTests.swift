import Foundation
import TestSupport
import XCTest

/// DASH manifests made by ffmpeg's muxer (a `SegmentTemplate` with a `SegmentTimeline`, one with
/// a fixed `duration`, a `SegmentList` of byte ranges) and an on-demand one (`SegmentBase` with a
/// `sidx`), served by nginx: probe, prefetch, check and thumbs fetch the manifest and exactly the
/// segments stated, as for HLS.
final class DASHTests: CLITestCase {
    /// 12 s in 2 s segments.
    private func makeManifests() throws -> String {
        let www = dir.file("www")
        let input = [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
            "-i", "sine=frequency=440:sample_rate=48000", "-t", "12", "-c:v", "libx264", "-preset", "ultrafast",
            "-g", "60", "-c:a", "aac",
        ]
        for (name, extra) in [
            ("timeline", [String]()), ("number", ["-use_timeline", "0"]), ("list", ["-single_file", "1"]),
        ] {
            try FileManager.default.createDirectory(atPath: www + "/" + name, withIntermediateDirectories: true)
            let r = try runProcess(
                "ffmpeg", input + ["-f", "dash", "-seg_duration", "2"] + extra + [www + "/" + name + "/manifest.mpd"])
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        // On demand: one file whose sidx lists its fragments, named by a SegmentBase.
        try FileManager.default.createDirectory(atPath: www + "/ondemand", withIntermediateDirectories: true)
        let video = www + "/ondemand/video.mp4"
        let r = try runProcess(
            "ffmpeg",
            Array(input.prefix(6)) + [
                "-t", "12", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60",
                "-movflags", "dash+global_sidx", "-f", "mp4", video,
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        var boxes: [String: Range<Int>] = [:]
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: video)))
        var p = 0
        while p + 8 <= bytes.count {
            let size = bytes[p..<p + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[p + 4..<p + 8], as: UTF8.self)
            if boxes[type] == nil { boxes[type] = p..<p + size }
            guard size >= 8 else { break }
            p += size
        }
        let moov = try XCTUnwrap(boxes["moov"]), sidx = try XCTUnwrap(boxes["sidx"])
        let mpd = """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT12S">
             <Period><AdaptationSet contentType="video" mimeType="video/mp4">
              <Representation id="v" bandwidth="600000" width="320" height="180" codecs="avc1.42c00d">
               <BaseURL>video.mp4</BaseURL>
               <SegmentBase indexRange="\(sidx.lowerBound)-\(sidx.upperBound - 1)"><Initialization range="0-\(moov.upperBound - 1)"/></SegmentBase>
              </Representation>
             </AdaptationSet></Period>
            </MPD>
            """
        try Data(mpd.utf8).write(to: URL(fileURLWithPath: www + "/ondemand/manifest.mpd"))
        return www
    }

    func testEveryKindOfSegmentListingIsProbedPrefetchedAndPlayedOffline() throws {
        let www = try makeManifests()
        let nginx = try NginxServer(root: www)
        // What a prefetch of [5, 9) for ffmpeg fetches besides the manifest, in 2 s segments: the
        // initialization, the first 5 s (1st to 3rd), the one before the window (2nd) and the window's (3rd to 5th).
        let chunks = { (stream: Int) in
            ["init-stream\(stream).m4s"] + (1...5).map { "chunk-stream\(stream)-0000\($0).m4s" }
        }
        let expected: [String: [String]] = ["timeline": chunks(0) + chunks(1), "number": chunks(0) + chunks(1)]
        for name in ["timeline", "number", "list", "ondemand"] {
            let url = nginx.url("/\(name)/manifest.mpd")
            nginx.clearLog()
            let probe = try json(try mprobe([url, "--json", "--cache-dir", dir.file("probe-" + name)]))
            XCTAssertEqual(probe["format"] as? String, "dash", name)
            XCTAssertEqual(probe["duration"] as? Double ?? 0, 12, accuracy: 0.05, name)
            let variant = try XCTUnwrap((probe["variants"] as? [[String: Any]])?.first)
            XCTAssertEqual(variant["width"] as? Int, 320, name)
            XCTAssertEqual((variant["playlist"] as? [String: Any])?["segments"] as? Int, 6, name)
            XCTAssertEqual(
                ((variant["first_segment"] as? [String: Any])?["tracks"] as? [[String: Any]])?.first?["codec"]
                    as? String, "h264")
            let probed = try nginx.accessLog()
            XCTAssertLessThanOrEqual(probed.count, name == "ondemand" ? 3 : 5, "\(name): \(probed.map(\.path))")

            let cache = dir.file("cache-" + name)
            nginx.clearLog()
            let prefetched = try json(
                try mprobe([
                    "prefetch", url, "--start", "5", "--seconds", "4", "--for", "ffmpeg", "--json", "--cache-dir",
                    cache,
                ]))
            XCTAssertEqual(prefetched["format"] as? String, "dash", name)
            let fetched = try nginx.accessLog()
            if let files = expected[name] {
                XCTAssertEqual(
                    fetched.map(\.path).sorted(), (["/\(name)/manifest.mpd"] + files.map { "/\(name)/" + $0 }).sorted())
            } else {
                // Byte ranges of one file per Representation: the segments' own ranges, nothing more.
                let ranges = fetched.compactMap(\.range).filter { !$0.hasPrefix("bytes=0-") }
                XCTAssertEqual(ranges.count, name == "list" ? 10 : 5, "\(name): \(fetched.map { $0.range ?? "-" })")
            }
            nginx.clearLog()
            let check = try mprobe(["check", url, "--start", "5", "--seconds", "4", "--offline", "--cache-dir", cache])
            XCTAssertTrue(check.stdoutString.contains("plays"), "\(name): \(check.stdoutString)")
            XCTAssertEqual(try nginx.accessLog().count, 0)
        }
    }

    func testThumbnailsTakeTheHeadOfTheSegmentHoldingEachTime() throws {
        let www = try makeManifests()
        let nginx = try NginxServer(root: www)
        let out = dir.file("thumbs")
        let set = try json(
            try mprobe([
                "thumbs", nginx.url("/timeline/manifest.mpd"), "--at", "0,5,11", "--out", out, "--json",
                "--cache-dir", cacheDir,
            ]))
        XCTAssertEqual(
            (set["thumbnails"] as? [[String: Any]])?.compactMap { $0["pts"] as? Double }.map { $0.rounded() },
            [0, 4, 10])
        let log = try nginx.accessLog()
        XCTAssertEqual(
            log.map(\.path).sorted(),
            [
                "/timeline/chunk-stream0-00001.m4s", "/timeline/chunk-stream0-00003.m4s",
                "/timeline/chunk-stream0-00006.m4s", "/timeline/init-stream0.m4s",
                "/timeline/manifest.mpd",
            ])
    }

    func testBrokenAndLiveManifestsAreClearErrors() throws {
        let www = dir.file("www")
        let files = [
            "broken.mpd": "<MPD><Period><AdaptationSet></MPD>",
            "two.mpd": "<MPD type=\"static\"><Period/><Period/></MPD>",
            "live.mpd": """
            <MPD type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z"><Period start="PT0S"><AdaptationSet contentType="video">
            <Representation id="v" bandwidth="1000"><SegmentTemplate media="s$Number$.m4s" duration="2" startNumber="1"/>
            </Representation></AdaptationSet></Period></MPD>
            """,
            "outside.mpd": """
            <MPD type="static" mediaPresentationDuration="PT2S"><BaseURL>file:///etc/</BaseURL><Period><AdaptationSet contentType="video">
            <Representation id="v" bandwidth="1000"><SegmentList duration="2"><SegmentURL media="passwd"/></SegmentList>
            </Representation></AdaptationSet></Period></MPD>
            """,
        ]
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: www + "/" + name)) }
        let nginx = try NginxServer(root: www)
        try Data(
            ("<MPD type=\"static\" mediaPresentationDuration=\"PT2S\"><Period><AdaptationSet contentType=\"video\">"
                + "<Representation id=\"v\" bandwidth=\"1\"><SegmentTemplate media=\"s$Number%0999999d$.m4s\" duration=\"2\"/>"
                + "</Representation></AdaptationSet></Period></MPD>").utf8
        ).write(to: URL(fileURLWithPath: www + "/wide.mpd"))
        for (name, words) in [
            ("broken.mpd", "closed by </MPD>"), ("two.mpd", "single-Period"), ("outside.mpd", "does not follow"),
            ("wide.mpd", "wider than 20 digits"),
        ] {
            let r = try mprobe([nginx.url("/" + name), "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(r.stderr.contains(words), "\(name): \(r.stderr)")
        }
        let live = try json(try mprobe([nginx.url("/live.mpd"), "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(live["live"] as? Bool, true)
        let refused = try mprobe(["prefetch", nginx.url("/live.mpd"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(refused.stderr.contains("live"), refused.stderr)
    }
}
