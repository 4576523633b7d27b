import XCTest

@testable import RangeFetch

/// `Content-Range` values as origins send them, honest and hostile, parsed in memory.
final class ContentRangeTests: XCTestCase {
    func testEveryFormIsReadAndEveryLieRefused() {
        let big = ResponseInfo.maxResourceSize
        let cases: [(String, ContentRange?)] = [
            ("bytes 0-99/1000", ContentRange(first: 0, last: 99, total: 1000)),
            ("  BYTES 100-199/200 ", ContentRange(first: 100, last: 199, total: 200)),
            ("bytes 0-99/*", ContentRange(first: 0, last: 99, total: nil)),
            ("bytes */1000", ContentRange(first: nil, last: nil, total: 1000)),
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
            XCTAssertEqual(ContentRange(value), expected, value)
        }
    }
}

extension ContentRange {
    init(first: Int64?, last: Int64?, total: Int64?) {
        self.init("bytes */1")!
        (self.first, self.last, self.total) = (first, last, total)
    }
}
