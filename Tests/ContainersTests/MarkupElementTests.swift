import XCTest

@testable import Containers

/// The XML reader DASH manifests go through, over text in memory: what it keeps, and every way a
/// hostile manifest tries to make it expand, recurse or misread.
final class MarkupElementTests: XCTestCase {
    func testElementsAttributesAndTextAreKept() throws {
        let root = try MarkupElement.parse(
            """
            \u{FEFF}<?xml version="1.0"?><!-- a comment -->
            <mpd:MPD xmlns:mpd="urn:mpeg:dash:schema:mpd:2011" type='static'>
              <BaseURL>http://a.example/x?y=1&amp;z=&#50;</BaseURL>
              <Period id="p0"><AdaptationSet/><AdaptationSet mimeType="video/mp4"/></Period>
            </mpd:MPD>
            """)
        XCTAssertEqual(root.name, "MPD", "the namespace prefix is dropped")
        XCTAssertEqual(root.qualifiedName, "mpd:MPD", "and kept as written")
        XCTAssertEqual(root["type"], "static")
        XCTAssertEqual(
            root.child("BaseURL")?.text, "http://a.example/x?y=1&z=2", "predefined and numeric references decoded")
        XCTAssertEqual(root.child("Period")?.all("AdaptationSet").count, 2)
        XCTAssertEqual(root.child("Period")?.all("AdaptationSet").last?["mimeType"], "video/mp4")
    }

    func testHostileDocumentsAreRefusedWithWhatIsWrong() {
        let deep =
            String(repeating: "<a>", count: MarkupElement.maximumDepth + 1)
            + String(repeating: "</a>", count: MarkupElement.maximumDepth + 1)
        let cases: [(String, String, String)] = [
            ("entity expansion", #"<!DOCTYPE x [<!ENTITY a "aaaa">]><MPD>&a;</MPD>"#, "DOCTYPE"),
            ("an undefined entity", "<MPD>&lol;</MPD>", "unknown or forbidden reference"),
            ("a NUL by reference", "<MPD>&#0;</MPD>", "unknown or forbidden reference"),
            ("a reference past Unicode", "<MPD>&#x110000;</MPD>", "unknown or forbidden reference"),
            ("an unterminated reference", "<MPD>&amp</MPD>", "unterminated reference"),
            ("nesting past the bound", deep, "nested deeper"),
            ("a mismatched close", "<MPD><Period></MPD>", "closed by"),
            ("an unclosed root", "<MPD><Period/>", "not closed"),
            ("a repeated attribute", #"<MPD a="1" a="2"/>"#, "twice"),
            ("an unquoted attribute", "<MPD a=1/>", "unquoted"),
            ("an unterminated attribute", #"<MPD a="1/>"#, "unterminated attribute"),
            ("text before the root", "junk<MPD/>", "text before"),
            ("nothing", "   ", "no root element"),
            ("an unterminated comment", "<!-- <MPD/>", "unterminated markup"),
        ]
        for (name, text, expected) in cases {
            XCTAssertThrowsError(try MarkupElement.parse(text), name) { error in
                let detail = (error as? MarkupElement.Malformed)?.detail ?? "\(error)"
                XCTAssertTrue(detail.contains(expected), "\(name): \(detail)")
            }
        }
    }

    func testWrittenOutAgainItReadsTheSame() throws {
        let root = try MarkupElement.parse(#"<MPD a="x &lt; y &quot;z&quot;"><B>1 &amp; 2</B></MPD>"#)
        let again = try MarkupElement.parse(root.xml)
        XCTAssertEqual(again["a"], #"x < y "z""#)
        XCTAssertEqual(again.child("B")?.text, "1 & 2")
    }
}
