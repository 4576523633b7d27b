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
        XCTAssertTrue(out.contains(#"media="/p?u=https://cdn.example/m/a/b/s-$RepresentationID$-$Number%03d$.m4s?sig=x&amp;y=1""#), out)
        XCTAssertTrue(out.contains(#"initialization="/p?u=https://cdn.example/m/a/b/i.mp4""#), out)
        XCTAssertTrue(out.contains("<BaseURL>/p?u=https://cdn.example/m/a/b/v.mp4</BaseURL><SegmentBase indexRange=\"10-20\"/>"), out)
        XCTAssertTrue(out.contains(#"cenc:default_KID="k""#), "prefixes kept: \(out)")
        XCTAssertThrowsError(try DASHRewriter.rewrite("<MPD><Period><BaseURL>file:///etc/</BaseURL></Period></MPD>", base: "https://x/m.mpd") { $0 })
    }
}
