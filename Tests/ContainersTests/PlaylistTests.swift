import ByteSources
import XCTest

@testable import Containers

/// HLS playlists and DASH manifests parsed from text in memory: what they list, and the refusals a
/// hostile or broken one gets (each a `malformedPlaylist` or `unsupportedStream` naming the cause).
final class PlaylistTests: XCTestCase {
    private let url = "http://origin.example/v/main.m3u8"

    func testAMasterPlaylistListsItsVariantsAndRenditions() throws {
        let text = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="audio/en.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000,RESOLUTION=1280x720,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aac"
            720p.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=640000,RESOLUTION=640x360
            /abs/360p.m3u8
            """
        guard case .master(let master) = try HLSPlaylist.parse(text, url: url) else {
            return XCTFail("not a master playlist")
        }
        XCTAssertEqual(
            master.variants.map(\.uri), ["http://origin.example/v/720p.m3u8", "http://origin.example/abs/360p.m3u8"])
        XCTAssertEqual(master.variants.map(\.bandwidth), [1_280_000, 640_000])
        XCTAssertEqual(master.variants.first?.height, 720)
        XCTAssertEqual(master.variants.first?.audio, "aac")
        XCTAssertEqual(master.renditions.first?.uri, "http://origin.example/v/audio/en.m3u8")
        XCTAssertEqual(master.renditions.first?.isDefault, true)
    }

    func testAMediaPlaylistPlacesItsSegmentsInTimeAndBytes() throws {
        let text = """
            #EXTM3U\r
            #EXT-X-TARGETDURATION:4\r
            #EXT-X-PLAYLIST-TYPE:VOD\r
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="800@0"\r
            #EXTINF:4.0,\r
            #EXT-X-BYTERANGE:1000@800\r
            seg.mp4\r
            #EXTINF:3.5,\r
            #EXT-X-BYTERANGE:500\r
            seg.mp4\r
            #EXT-X-KEY:METHOD=AES-128,URI="k"\r
            #EXTINF:2,\r
            enc.ts\r
            #EXT-X-ENDLIST\r
            """
        guard case .media(let media) = try HLSPlaylist.parse(text, url: url) else {
            return XCTFail("not a media playlist")
        }
        XCTAssertEqual(media.segments.map(\.start), [0, 4, 7.5])
        XCTAssertEqual(
            media.segments.map(\.byteRange), [800..<1800, 1800..<2300, nil],
            "a range without an offset follows the last")
        XCTAssertEqual(
            media.segments.first?.initSection,
            HLSInitSection(uri: "http://origin.example/v/init.mp4", byteRange: 0..<800))
        XCTAssertEqual(media.segments.map(\.encrypted), [false, false, true])
        XCTAssertEqual(media.encryption, ["AES-128"])
        XCTAssertFalse(media.isLive)
        XCTAssertEqual(media.duration, 9.5)
        XCTAssertEqual(media.segments(from: 5, to: 8).map(\.start), [4, 7.5])
    }

    func testBrokenOrHostilePlaylistsAreRefused() {
        let cases: [(String, String, String)] = [
            ("no header", "#EXTINF:1,\na.ts", "does not start with #EXTM3U"),
            (
                "variants and segments", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:1,\na.ts",
                "both variants"
            ),
            ("a hexadecimal duration", "#EXTM3U\n#EXTINF:0x10,\na.ts", "not a number of seconds"),
            ("an infinite duration", "#EXTM3U\n#EXTINF:inf,\na.ts", "not a number of seconds"),
            ("a day-long segment", "#EXTM3U\n#EXTINF:86400,\na.ts", "not a number of seconds"),
            ("a URI without EXTINF", "#EXTM3U\n#EXT-X-TARGETDURATION:4\na.ts", "without #EXTINF"),
            ("a first range without offset", "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:100\na.ts", "without an offset"),
            (
                "a range past any file", "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:9223372036854775807@9\na.ts",
                "past any file"
            ),
            ("a negative length", "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:-5@0\na.ts", "not length[@offset]"),
            ("a variant without a bandwidth", "#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8", "BANDWIDTH"),
            ("a variant without a URI", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1", "without a URI"),
            (
                "a rendition without a group",
                "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8", "GROUP-ID"
            ),
            ("a file: URI from a web server", "#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd", "does not follow"),
            ("a map without a URI", "#EXTM3U\n#EXT-X-MAP:BYTERANGE=\"1@0\"\n#EXTINF:1,\na.ts", "without a URI"),
            (
                "a malformed attribute list", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=\"1\nv.m3u8",
                "malformed attribute list"
            ),
        ]
        for (name, text, expected) in cases {
            XCTAssertThrowsError(try HLSPlaylist.parse(text, url: url), name) { error in
                guard case MediaError.malformedPlaylist(_, let detail) = error else {
                    return XCTFail("\(name): \(error)")
                }
                XCTAssertTrue(detail.contains(expected), "\(name): \(detail)")
            }
        }
    }

    func testADASHManifestBecomesVariantsAndTheirSegments() throws {
        let mpd = """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S">
              <BaseURL>media/</BaseURL>
              <Period>
                <AdaptationSet mimeType="video/mp4">
                  <SegmentTemplate timescale="1000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number%03d$.m4s" startNumber="1">
                    <SegmentTimeline><S t="0" d="4000" r="1"/><S d="2000"/></SegmentTimeline>
                  </SegmentTemplate>
                  <Representation id="v1" bandwidth="500000" width="640" height="360"/>
                </AdaptationSet>
                <AdaptationSet mimeType="image/jpeg"><Representation id="tiles" bandwidth="1"/></AdaptationSet>
              </Period>
            </MPD>
            """
        let (master, media) = try DASHManifest.parse(mpd, url: "http://origin.example/d/m.mpd")
        XCTAssertEqual(master.variants.count, 1, "image tiles are not a variant")
        guard let uri = master.variants.first?.uri, case .listed(let list)? = media[uri] else {
            return XCTFail("no listed variant")
        }
        XCTAssertEqual(
            list.segments.map(\.uri), ["001", "002", "003"].map { "http://origin.example/d/media/v1/\($0).m4s" })
        XCTAssertEqual(list.segments.map(\.start), [0, 4, 8])
        XCTAssertEqual(list.segments.first?.initSection?.uri, "http://origin.example/d/media/v1/init.mp4")
    }

    func testBrokenOrHostileManifestsAreRefused() {
        func mpd(_ period: String, attributes: String = #"type="static" mediaPresentationDuration="PT10S""#) -> String {
            "<MPD \(attributes)>\(period)</MPD>"
        }
        let template = { (body: String, attributes: String) in
            mpd(
                "<Period><AdaptationSet mimeType=\"video/mp4\">\(body)<Representation id=\"v\" bandwidth=\"1\"/></AdaptationSet></Period>",
                attributes: attributes)
        }
        let template10s = { (body: String) in template(body, #"type="static" mediaPresentationDuration="PT10S""#) }
        let cases: [(String, String, String)] = [
            ("not XML", "<MPD", "not well-formed XML"),
            ("another root", "<SmartPlaylist/>", "not <MPD>"),
            ("no Period", mpd(""), "without a Period"),
            ("two Periods", mpd("<Period/><Period/>"), "single-Period"),
            ("a template without media", template10s(#"<SegmentTemplate timescale="1"/>"#), "without media"),
            (
                "a timeline going back",
                template10s(
                    #"<SegmentTemplate media="$Number$" timescale="1"><SegmentTimeline><S t="10" d="5"/><S t="2" d="5"/></SegmentTimeline></SegmentTemplate>"#
                ), "goes back in time"
            ),
            (
                "a zero duration in a timeline",
                template10s(
                    #"<SegmentTemplate media="$Number$" timescale="1"><SegmentTimeline><S d="0"/></SegmentTimeline></SegmentTemplate>"#
                ), #"d="0" is not a number"#
            ),
            // Without a Period length to end it, a repeat count is taken at its word, up to the bound.
            (
                "two million repeats",
                template(
                    #"<SegmentTemplate media="$Number$" timescale="1"><SegmentTimeline><S d="1" r="2000000"/></SegmentTimeline></SegmentTemplate>"#,
                    #"type="static""#), "more than 1000000 segments"
            ),
            (
                "a wide number format",
                template10s(#"<SegmentTemplate media="$Number%0999d$" duration="1" timescale="1"/>"#), "wider than"
            ),
            ("a duration in years", mpd("<Period/>", attributes: #"mediaPresentationDuration="P1Y""#), "does not read"),
            (
                "a duration that is no duration", mpd("<Period/>", attributes: #"mediaPresentationDuration="10""#),
                "not ISO 8601"
            ),
        ]
        for (name, text, expected) in cases {
            XCTAssertThrowsError(try DASHManifest.parse(text, url: "http://origin.example/m.mpd"), name) { error in
                let detail: String
                switch error {
                case MediaError.malformedPlaylist(_, let d), MediaError.unsupportedStream(_, let d): detail = d
                default: return XCTFail("\(name): \(error)")
                }
                XCTAssertTrue(detail.contains(expected), "\(name): \(detail)")
            }
        }
    }

    func testPlaylistsAndManifestsAreToldFromMedia() {
        let cases: [(String, String?)] = [
            ("#EXTM3U\n", StreamingManifest.hls),
            ("\u{FEFF}  #EXTM3U", StreamingManifest.hls),
            ("<?xml version=\"1.0\"?><!-- x --><MPD>", StreamingManifest.dash),
            ("<html><body>", nil),
            ("\u{0}\u{0}\u{0}\u{18}ftypmp42", nil),
            ("", nil),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(StreamingManifest.kind(ofText: text), expected, text.debugDescription)
        }
    }
}
