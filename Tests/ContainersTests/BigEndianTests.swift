import XCTest

@testable import Containers

final class BigEndianTests: XCTestCase {
    func testIntegersReadMostSignificantFirst() {
        let cases: [([UInt8], UInt64, UInt64)] = [
            ([], 8, 0),
            ([0x01], 8, 1),
            ([0x12, 0x34], 8, 0x1234),
            ([0xFF, 0xFF, 0xFF, 0xFF], 8, 0xFFFF_FFFF),
            ([0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], 8, 1 << 56),
            // An ID3 size: four bytes of seven bits each.
            ([0x00, 0x00, 0x02, 0x01], 7, 257),
            ([0x7F, 0x7F, 0x7F, 0x7F], 7, (1 << 28) - 1),
        ]
        for (bytes, bits, expected) in cases {
            XCTAssertEqual(BigEndian.uint(bytes, bitsPerByte: bits), expected, "\(bytes) at \(bits) bits a byte")
        }
    }

    func testAFieldReaderStopsAtTheEndOfItsBody() {
        var fields = FieldReader([0x01, 0x00, 0x00, 0x02, 0xAA, 0xBB])
        XCTAssertEqual(fields.versionAndFlags()?.version, 1)
        XCTAssertEqual(fields.uint(2), 0xAABB)
        XCTAssertNil(fields.u32(), "past the body")
        XCTAssertFalse(fields.skip(1))
        XCTAssertFalse(fields.skip(-1), "a negative skip is refused, not a step back")
        var wide = FieldReader(Array(repeating: 0xFF, count: 9))
        XCTAssertNil(wide.uint(9), "wider than 8 bytes")
    }
}
