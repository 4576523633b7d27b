import XCTest

@testable import RangeFetch

/// `Content-Range` values as origins send them, honest and hostile, parsed in memory.
final class ContentRangeTests: XCTestCase {
    func testEveryFormIsReadAndEveryLieRefused() {
        let big = ResponseInfo.maxResourceSize
        let cases: [(String, Parsed?)] = [
            ("bytes 0-99/1000", Parsed(0, 99, 1000)),
            ("  BYTES 100-199/200 ", Parsed(100, 199, 200)),
            ("bytes 0-99/*", Parsed(0, 99, nil)),
            ("bytes */1000", Parsed(nil, nil, 1000)),
            ("bytes 99-0/1000", nil),  // inverted
            ("bytes 0-1000/1000", nil),  // past the total
            ("bytes -1-5/10", nil),  // negative
            ("bytes 0-5/\(big + 1)", nil),  // a total past any resource
            ("bytes 0-99999999999999999999/1", nil),  // past Int64
            ("items 0-1/2", nil),  // another unit
            ("bytes 0-1", nil),  // no total
            ("bytes 0x0-0x1/2", nil),  // not decimal
            ("", nil),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(ContentRange(value).map { Parsed($0.first, $0.last, $0.total) }, expected, value)
        }
    }
}

/// What a parse gives: the first and last byte and the total, each nil where the header has `*`.
private struct Parsed: Equatable {
    let first: Int64?, last: Int64?, total: Int64?
    init(_ first: Int64?, _ last: Int64?, _ total: Int64?) {
        (self.first, self.last, self.total) = (first, last, total)
    }
}
