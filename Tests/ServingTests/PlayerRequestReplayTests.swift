import Foundation
import TestSupport
import XCTest

/// AVPlayer and ExoPlayer do not run here: their request sequences for an MP4 with the moov at the
/// end and for an HLS ladder, replayed with a real HTTP client against the proxy after a prefetch
/// job, with the origin stopped. Every answer is exact bytes of the file, or an honest end of what
/// is cached.
///
/// - AVPlayer (Apple's documented pattern for progressive media): `bytes=0-1` to learn the size
///   and range support, an open range from 0 read in part and closed, the moov at the end, then
///   an open range from the sample it seeks to.
/// - ExoPlayer / Media3 (`DefaultHttpDataSource` sends no `Range` for position 0 of unknown
///   length; `Mp4Extractor` seeks to the moov, then to the sync sample its `SeekMap` gives): a
///   GET without `Range`, then open ranges from the moov and from the sample.
/// - HLS: AVPlayer plays the first variant listed first (Apple's authoring guidance lists the start
///   variant first for that reason) and switches once it has measured the bandwidth; ExoPlayer
///   starts on the variant its initial bandwidth estimate affords, which may be any. From a cache on
///   the local network both then measure enough for the best.
final class PlayerRequestReplayTests: XCTestCase {
    func testAVPlayersAndExoPlayersRequestsAreAnsweredExactlyOffline() throws {
        let (dir, www) = try encoded { www in
            [
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-b:v", "2M", "-pix_fmt", "yuv420p", "-c:a",
                "aac", www + "/v.mp4",
            ]
        }
        defer { withExtendedLifetime(dir) {} }
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/v.mp4")))
        let size = file.count
        let nginx = try NginxServer(root: www)
        let service = try ServiceHarness()
        defer { service.stop() }
        let origin = nginx.url("/v.mp4")
        let probe = try HTTPClient.request("GET", service.url("/v1/probe", origin: origin)).json()
        let moov = try XCTUnwrap((probe["moov"] as? [String: Any])?["offset"] as? Int, "\(probe)")
        XCTAssertGreaterThan(moov, size / 2, "the moov is at the end")
        let job = try service.postJob(#"{"type": "prefetch", "url": "\#(origin)", "start": 20, "seconds": 10}"#)
        let done = try service.waitForJob(try XCTUnwrap(try job.json()["id"] as? String))
        let prefetch = ((done["result"] as? [String: Any])?["items"] as? [[String: Any]])?.first?["prefetch"]
        let window = try XCTUnwrap(
            ((prefetch as? [String: Any])?["sample_ranges"] as? [[String: Any]])?.first, "\(done)")
        let sample = try XCTUnwrap(window["start"] as? Int), windowEnd = try XCTUnwrap(window["end"] as? Int)
        nginx.stop()
        let url = service.url("/v1/stream", origin: origin)

        /// A 206 of `file` from `first`, to `last` or to the end of a cached run at least `through` long.
        func exact(
            _ headers: [String: String], from first: Int, to last: Int? = nil, through: Int, _ what: String
        )
            throws
        {
            let reply = try HTTPClient.request("GET", url, headers: headers)
            XCTAssertEqual(reply.status, 206, "\(what): \(reply.text.prefix(200))")
            let end = first + reply.body.count
            XCTAssertEqual(reply.headers["content-range"], "bytes \(first)-\(end - 1)/\(size)", what)
            XCTAssertEqual(reply.headers["content-length"], "\(reply.body.count)", what)
            if let last { XCTAssertEqual(end, last + 1, what) }
            XCTAssertGreaterThanOrEqual(end, through, "\(what): covers what the player needs")
            XCTAssertTrue(reply.body == Array(file[first..<min(size, end)]), "\(what): the file's bytes")
        }

        // AVPlayer.
        try exact(["Range": "bytes=0-1"], from: 0, to: 1, through: 2, "AVPlayer's bytes=0-1")
        do {  // read in part and closed (when the connection goes out of scope), as AVPlayer does
            let partial = try RawHTTPConnection(port: service.service.port)
            partial.get(
                "/v1/stream?url=" + (origin.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""),
                headers: ["Range": "bytes=0-"])
            let head = partial.read(atLeast: 1000, timeout: 10)
            XCTAssertTrue(String(decoding: head.prefix(200), as: UTF8.self).hasPrefix("HTTP/1.1 206"))
        }
        try exact(["Range": "bytes=\(moov)-"], from: moov, to: size - 1, through: size, "AVPlayer's moov")
        try exact(["Range": "bytes=\(sample)-"], from: sample, through: windowEnd, "AVPlayer's seek")

        // ExoPlayer.
        let whole = try HTTPClient.request("GET", url)
        XCTAssertEqual(whole.status, 206, "what is cached from byte 0, said as a part: \(whole.text.prefix(200))")
        XCTAssertEqual(whole.headers["content-range"], "bytes 0-\(whole.body.count - 1)/\(size)")
        XCTAssertTrue(whole.body == Array(file[0..<whole.body.count]))
        try exact(["Range": "bytes=\(moov)-"], from: moov, to: size - 1, through: size, "ExoPlayer's moov")
        try exact(["Range": "bytes=\(sample)-"], from: sample, through: windowEnd, "ExoPlayer's seek")

        // A byte that is not cached, the origin gone: the error at once, no part promised.
        let missing = try HTTPClient.request("GET", url, headers: ["Range": "bytes=\(windowEnd + (1 << 20))-"])
        XCTAssertEqual(missing.status, 502, missing.text)
    }

    func testAVPlayersAndExoPlayersHLSRequestsAreAnsweredOffline() throws {
        // The 180p variant listed first, the 360p one second; key frames and segments every 2 s.
        let (dir, www) = try encoded { www in
            [
                "-filter_complex", "[0:v]split=2[a][b];[a]scale=320:180[low]", "-map", "[low]", "-map", "1:a", "-map",
                "[b]", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-sc_threshold", "0",
                "-b:v:0", "300k", "-b:v:1", "1200k", "-c:a", "aac", "-f", "hls", "-hls_time", "2",
                "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8", "-var_stream_map", "v:0,a:0 v:1,a:1",
                "-hls_segment_filename", www + "/v%v_%d.ts", www + "/v%v.m3u8",
            ]
        }
        defer { withExtendedLifetime(dir) {} }
        let nginx = try NginxServer(root: www)
        let service = try ServiceHarness()
        defer { service.stop() }
        let start = 8.0
        let job = try service.postJob(
            #"{"type": "prefetch", "url": "\#(nginx.url("/master.m3u8"))", "start": \#(start), "seconds": 4}"#)
        XCTAssertEqual(
            try service.waitForJob(try XCTUnwrap(try job.json()["id"] as? String))["state"] as? String, "done")
        nginx.stop()

        /// The segments of a variant's playlist (on disk) that cover [from, to).
        func segments(_ playlist: String, from: Double, to: Double) throws -> [String] {
            var t = 0.0, covering: [String] = [], duration = 0.0
            for line in try String(contentsOfFile: www + "/" + playlist, encoding: .utf8).split(separator: "\n") {
                if line.hasPrefix("#EXTINF:") {
                    duration = Double(line.dropFirst(8).prefix { $0 != "," }) ?? 0
                } else if !line.hasPrefix("#") {
                    if t + duration > from && t < to { covering.append(String(line)) }
                    t += duration
                }
            }
            return covering
        }
        func get(_ name: String, _ who: String) throws {
            let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/" + name)))
            XCTAssertEqual(reply.status, 200, "\(who): \(name): \(reply.text.prefix(200))")
            if name.hasSuffix(".ts") {
                XCTAssertTrue(
                    reply.body == [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/" + name))),
                    "\(who): \(name)")
            }
        }
        let best = try segments("v1.m3u8", from: start, to: start + 4)
        // AVPlayer: the master, the first variant listed and its segment at T, then the best.
        for name in ["master.m3u8", "v0.m3u8"] + (try segments("v0.m3u8", from: start, to: start + 0.1))
            + ["v1.m3u8"] + best
        {
            try get(name, "AVPlayer")
        }
        // ExoPlayer: the segment at T of whichever variant it starts on, then the best.
        for name in ["master.m3u8", "v0.m3u8", "v1.m3u8"] + (try segments("v0.m3u8", from: start, to: start + 0.1))
            + (try segments("v1.m3u8", from: start, to: start + 0.1)) + best
        {
            try get(name, "ExoPlayer")
        }
        // Past all any player reads (GStreamer prerolls the first 20 s), the origin gone: the error at once.
        let last = try XCTUnwrap(try segments("v1.m3u8", from: 38, to: 40).last)
        let missing = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/" + last)))
        XCTAssertEqual(missing.status, 502, missing.text)
    }

    /// 40 s of a test picture and a tone, encoded by ffmpeg with `output` (given the folder) into
    /// the folder `www` of a new temporary directory, returned to be kept alive.
    private func encoded(_ output: (String) -> [String]) throws -> (TempDirectory, String) {
        let dir = try TempDirectory()
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let source = [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000", "-t", "40",
        ]
        let r = try runProcess("ffmpeg", source + output(www))
        XCTAssertEqual(r.status, 0, r.stderr)
        return (dir, www)
    }
}
