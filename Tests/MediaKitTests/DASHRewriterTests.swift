import Containers
import MediaKit
import XCTest

/// A manifest's URLs through the BaseURL chain, each Representation's own, routed.
final class DASHRewriterTests: XCTestCase {
    func testEveryRepresentationGetsItsURLsResolvedThroughTheChainAndRouted() throws {
        let mpd = """
            <?xml version="1.0"?><!-- a packager's -->
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" type="static" mediaPresentationDuration="PT4S">
             <BaseURL>a/</BaseURL>
             <Period><AdaptationSet contentType="video"><BaseURL>b/</BaseURL>
              <SegmentTemplate timescale="1" duration="2" media="s-$RepresentationID$-$Number%03d$.m4s?sig=x&amp;y=1" initialization="i.mp4"/>
              <Representation id="t" bandwidth="1"><ContentProtection cenc:default_KID="k"/></Representation>
              <Representation id="f" bandwidth="2"><BaseURL>v.mp4</BaseURL><SegmentBase indexRange="10-20"/></Representation>
             </AdaptationSet></Period>
            </MPD>
            """
        let out = try DASHRewriter.rewrite(mpd, base: "https://cdn.example/m/manifest.mpd") { "/p?u=" + $0 }
        XCTAssertFalse(out.contains("<BaseURL>a/</BaseURL>") || out.contains("<BaseURL>b/</BaseURL>"), out)
        XCTAssertTrue(
            out.contains(
                #"media="/p?u=https://cdn.example/m/a/b/s-$RepresentationID$-$Number%03d$.m4s?sig=x&amp;y=1""#), out)
        XCTAssertTrue(out.contains(#"initialization="/p?u=https://cdn.example/m/a/b/i.mp4""#), out)
        XCTAssertTrue(
            out.contains("<BaseURL>/p?u=https://cdn.example/m/a/b/v.mp4</BaseURL><SegmentBase indexRange=\"10-20\"/>"),
            out)
        XCTAssertTrue(out.contains(#"cenc:default_KID="k""#), "prefixes kept: \(out)")
        XCTAssertThrowsError(
            try DASHRewriter.rewrite(
                "<MPD><Period><BaseURL>file:///etc/</BaseURL></Period></MPD>", base: "https://x/m.mpd"
            ) { $0 })
    }

    /// Where a live player fetches the manifest again is routed too; remote elements, which the
    /// player would fetch and resolve unrouted, make the manifest refused.
    func testALocationIsRoutedAndRemoteElementsAreRefused() throws {
        let live =
            #"<MPD type="dynamic"><Location>next.mpd</Location><Period><AdaptationSet><Representation id="a" bandwidth="1"><BaseURL>a.mp4</BaseURL></Representation></AdaptationSet></Period></MPD>"#
        let out = try DASHRewriter.rewrite(live, base: "https://cdn.example/m/live.mpd") { "/p?u=" + $0 }
        XCTAssertTrue(out.contains("<Location>/p?u=https://cdn.example/m/next.mpd</Location>"), out)
        for remote in [
            #"<MPD xmlns:xlink="http://www.w3.org/1999/xlink"><Period xlink:href="https://evil.example/p.xml" xlink:actuate="onLoad"/></MPD>"#,
            #"<MPD xmlns:xlink="http://www.w3.org/1999/xlink"><Period><AdaptationSet xlink:href="p.xml"/></Period></MPD>"#,
        ] {
            XCTAssertThrowsError(try DASHRewriter.rewrite(remote, base: "https://cdn.example/m.mpd") { $0 }) { error in
                XCTAssertTrue("\(error)".contains("remote element"), "\(error)")
            }
        }
    }
}
