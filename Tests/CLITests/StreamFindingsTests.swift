import Foundation
import TestSupport
import XCTest

/// What an attack on the HLS and DASH readers found (a hostile origin's playlists and manifests),
/// each checked to fail on the build before its fix: crashes on byte ranges near 2^63, a CRLF
/// playlist refused, a manifest's BaseURL ignored, success claimed over an error page or a
/// playlist that promises more than its segments hold, timelines and timescales taken on trust,
/// a thousand variants read one by one.
final class StreamFindingsTests: CLITestCase {
    /// 6 s of MPEG-TS HLS in 2 s segments (`ts/`), and one fragmented MP4 (`v.mp4`, 1 s fragments).
    private func origin() throws -> (www: String, nginx: NginxServer) {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www + "/ts", withIntermediateDirectories: true)
        let input = [
            "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i", "sine", "-t", "6",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac",
        ]
        for args in [
            ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", www + "/ts/index.m3u8"],
            ["-movflags", "frag_keyframe+empty_moov", www + "/v.mp4"],
        ] {
            let r = try runProcess("ffmpeg", input + args)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        return (www, try NginxServer(root: www))
    }

    private func write(_ www: String, _ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: www + "/" + name))
    }

    private func mpd(_ representation: String, duration: String = "PT6S", base: String = "") -> String {
        """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="\(duration)">\(base)<Period>
        <AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="v" bandwidth="1000" width="160" height="90">
        \(representation)
        </Representation></AdaptationSet></Period></MPD>
        """
    }

    func testByteRangesNearTheLargestNumberAreRefusedNotCrashedOn() throws {
        let (www, nginx) = try origin()
        let huge = "9223372036854775806"
        try write(
            www, "map.m3u8",
            "#EXTM3U\n#EXT-X-MAP:URI=\"v.mp4\",BYTERANGE=\"\(huge)@0\"\n#EXTINF:2,\nv.mp4\n#EXT-X-ENDLIST\n")
        try write(
            www, "index.mpd",
            mpd(
                "<BaseURL>v.mp4</BaseURL><SegmentBase indexRange=\"0-\(huge)\"><Initialization range=\"0-770\"/></SegmentBase>"
            ))
        try write(
            www, "init.mpd",
            mpd(
                "<BaseURL>v.mp4</BaseURL><SegmentList duration=\"6\"><Initialization range=\"0-\(huge)\"/>"
                    + "<SegmentURL mediaRange=\"0-100\"/></SegmentList>"))
        try write(
            www, "media.mpd",
            mpd(
                "<BaseURL>v.mp4</BaseURL><SegmentList duration=\"6\"><SegmentURL mediaRange=\"0-\(huge)\"/></SegmentList>"
            ))
        try write(
            www, "past.mpd",
            mpd(
                "<BaseURL>v.mp4</BaseURL><SegmentList duration=\"6\"><SegmentURL mediaRange=\"5000000-6000000\"/></SegmentList>"
            ))
        for name in ["map.m3u8", "index.mpd", "init.mpd", "media.mpd", "past.mpd"] {
            let r = try mprobe([nginx.url("/" + name), "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(r.stderr.contains("byte range") && r.stderr.contains("past"), "\(name): \(r.stderr)")
        }
        let prefetch = try mprobe(
            ["prefetch", nginx.url("/past.mpd"), "--seconds", "2", "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(prefetch.stderr.contains("lies past its end"), prefetch.stderr)
    }

    func testCRLFPlaylistsAndBaseURLsAtEveryLevelAreRead() throws {
        let (www, nginx) = try origin()
        let playlist = try String(contentsOfFile: www + "/ts/index.m3u8", encoding: .utf8)
        try write(www, "ts/crlf.m3u8", playlist.replacingOccurrences(of: "\n", with: "\r\n"))
        let crlf = try json(try mprobe([nginx.url("/ts/crlf.m3u8"), "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(crlf["duration"] as? Double ?? 0, 6, accuracy: 0.1)

        // The file lives in sub/: the MPD's own BaseURL, or its Period's, says so.
        try FileManager.default.createDirectory(atPath: www + "/sub", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: www + "/v.mp4", toPath: www + "/sub/v.mp4")
        let list = "<SegmentList duration=\"6\"><SegmentURL media=\"v.mp4\"/></SegmentList>"
        try write(www, "mpdbase.mpd", mpd(list, base: "<BaseURL>sub/</BaseURL>"))
        try write(
            www, "periodbase.mpd",
            mpd(list).replacingOccurrences(of: "<Period>", with: "<Period><BaseURL>sub/</BaseURL>"))
        for name in ["mpdbase.mpd", "periodbase.mpd"] {
            nginx.clearLog()
            try mprobe([nginx.url("/" + name), "--cache-dir", dir.file("c-" + name)])
            XCTAssertTrue(try nginx.accessLog().contains { $0.path == "/sub/v.mp4" }, name)
        }
    }

    func testAnErrorPageForASegmentOrDurationsThatPromiseTooMuchAreNotPlayed() throws {
        let (www, nginx) = try origin()
        try write(www, "ts/oops.html", "<html><body>Not found</body></html>")
        let playlist = try String(contentsOfFile: www + "/ts/index.m3u8", encoding: .utf8)
        try write(www, "ts/soft404.m3u8", playlist.replacingOccurrences(of: "index1.ts", with: "oops.html"))
        let check = try mprobe(
            ["check", nginx.url("/ts/soft404.m3u8"), "--start", "0", "--seconds", "6", "--cache-dir", cacheDir],
            expect: 5)
        XCTAssertTrue(check.stderr.contains("oops.html") && check.stderr.contains("not media"), check.stderr)
        let prefetch = try mprobe(
            ["prefetch", nginx.url("/ts/soft404.m3u8"), "--start", "2", "--seconds", "2", "--cache-dir", cacheDir],
            expect: 5)
        XCTAssertTrue(prefetch.stderr.contains("not media"), prefetch.stderr)

        // A segment said to last 1000 s holds 2: a window at 500 s has nothing to play.
        try write(
            www, "ts/long.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:1000\n#EXTINF:1000,\nindex0.ts\n#EXT-X-ENDLIST\n")
        try mprobe([
            "prefetch", nginx.url("/ts/long.m3u8"), "--start", "500", "--seconds", "3", "--cache-dir", cacheDir,
        ])
        let hollow = try mprobe(
            [
                "check", nginx.url("/ts/long.m3u8"), "--start", "500", "--seconds", "3", "--offline",
                "--cache-dir", cacheDir,
            ], expect: 5)
        XCTAssertTrue(
            hollow.stdoutString.contains("FAILS") && hollow.stdoutString.contains("decoded up to"), hollow.stdoutString)
    }

    func testTimelinesTimescalesAndNumbersAreCheckedNotTakenOnTrust() throws {
        let (www, nginx) = try origin()
        let template = { (timeline: String, timescale: String) in
            "<SegmentTemplate timescale=\"\(timescale)\" media=\"v.mp4\"><SegmentTimeline>\(timeline)</SegmentTimeline></SegmentTemplate>"
        }
        // A repeat count past the Period: the Period ends the timeline (3 segments of 2 s).
        try write(www, "repeat.mpd", mpd(template("<S t=\"0\" d=\"2\" r=\"2147483647\"/>", "1")))
        let repeated = try json(
            try mprobe([nginx.url("/repeat.mpd"), "--json", "--variants", "0", "--cache-dir", cacheDir]))
        XCTAssertEqual(repeated["duration"] as? Double ?? 0, 6, accuracy: 0.01)
        let bad: [(String, String, String)] = [
            ("zero.mpd", mpd(template("<S t=\"0\" d=\"2\"/>", "0")), "timescale"),
            ("back.mpd", mpd(template("<S t=\"4\" d=\"2\"/><S t=\"0\" d=\"2\"/>", "1")), "back in time"),
            ("twice.mpd", mpd(template("<S t=\"0\" d=\"2\" r=\"1\" r=\"2\"/>", "1")), "twice"),
            ("doctype.mpd", "<!DOCTYPE MPD [<!ENTITY a \"aaaa\">]>" + mpd(template("<S d=\"2\"/>", "1")), "DOCTYPE"),
            ("hex.m3u8", "#EXTM3U\n#EXTINF:0x10,\nts/index0.ts\n#EXT-X-ENDLIST\n", "not a number of seconds"),
        ]
        for (name, text, words) in bad {
            try write(www, name, text)
            let r = try mprobe([nginx.url("/" + name), "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(r.stderr.contains(words), "\(name): \(r.stderr)")
        }
    }

    func testAMasterOfAThousandVariantsIsRefusedAtOnceAndAFewAreReadInParallel() throws {
        let (www, nginx) = try origin()
        var master = "#EXTM3U\n"
        for i in 0..<1000 { master += "#EXT-X-STREAM-INF:BANDWIDTH=\(1000 + i)\nts/index.m3u8?v=\(i)\n" }
        try write(www, "many.m3u8", master)
        let started = Date()
        let r = try mprobe([nginx.url("/many.m3u8"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(r.stderr.contains("at most 256"), r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertEqual(try nginx.accessLog().count, 1, "nothing but the master was fetched")
    }
}
