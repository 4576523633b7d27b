import XCTest

@testable import Serving

/// A player's `Range` header against a resource of 1000 bytes, as the proxy reads it (RFC 9110).
final class RangeHeaderTests: XCTestCase {
    func testEachFormGivesItsPartAndNonsenseTheWholeBody() {
        let cases: [(String?, RangeHeader)] = [
            (nil, .whole),
            ("bytes=0-99", .part(0..<100)),
            ("bytes=900-", .part(900..<1000)),
            ("bytes=-100", .part(900..<1000)),
            ("bytes=-5000", .part(0..<1000)),
            ("bytes=990-5000", .part(990..<1000)),
            (" Bytes = 5-5 ", .whole),  // space inside the unit
            ("bytes= 5-5", .part(5..<6)),
            ("bytes=1000-", .unsatisfiable),
            ("bytes=99999999999999999999-", .unsatisfiable),  // past Int64: past the end
            ("bytes=0-99999999999999999999", .part(0..<1000)),  // past Int64: to the end
            ("bytes=-0", .unsatisfiable),
            ("bytes=50-10", .whole),  // inverted: ignored, as RFC 9110 allows
            ("bytes=0-1,5-6", .whole),  // several ranges: the whole body
            ("items=0-1", .whole),
            ("bytes=a-b", .whole),
            ("bytes=+1-2", .whole),
            ("bytes=", .whole),
        ]
        for (header, expected) in cases {
            XCTAssertEqual(RangeHeader(header, size: 1000), expected, header ?? "no header")
        }
        XCTAssertEqual(RangeHeader("bytes=-1", size: 0), .unsatisfiable, "an empty resource has no last byte")
    }
}
