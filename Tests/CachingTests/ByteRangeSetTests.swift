import Caching
import TestSupport
import XCTest

final class ByteRangeSetTests: XCTestCase {
    func testInsertMergesOverlappingAndTouchingRanges() {
        var set = ByteRangeSet()
        set.insert(10..<20)
        set.insert(30..<40)
        XCTAssertEqual(set.ranges, [10..<20, 30..<40])
        set.insert(20..<30)  // touches both: one range
        XCTAssertEqual(set.ranges, [10..<40])
        set.insert(0..<5)
        set.insert(3..<12)
        XCTAssertEqual(set.ranges, [0..<40])
        set.insert(100..<200)
        set.insert(50..<60)
        XCTAssertEqual(set.ranges, [0..<40, 50..<60, 100..<200])
        XCTAssertEqual(set.byteCount, 150)
    }

    func testGapsAndContains() {
        let set = ByteRangeSet([10..<20, 30..<40])
        XCTAssertEqual(set.gaps(in: 0..<50), [0..<10, 20..<30, 40..<50])
        XCTAssertEqual(set.gaps(in: 12..<18), [])
        XCTAssertEqual(set.gaps(in: 15..<35), [20..<30])
        XCTAssertEqual(set.gaps(in: 40..<41), [40..<41])
        XCTAssertTrue(set.contains(10..<20))
        XCTAssertFalse(set.contains(10..<21))
        XCTAssertFalse(set.contains(9..<12))
        XCTAssertEqual(set.coveredLength(from: 15), 5)
        XCTAssertEqual(set.coveredLength(from: 20), 0)
        XCTAssertEqual(set.coveredLength(from: 10), 10)
    }

    func testRemoveSplitsRanges() {
        var set = ByteRangeSet([0..<100])
        set.remove(40..<60)
        XCTAssertEqual(set.ranges, [0..<40, 60..<100])
        set.remove(0..<50)
        XCTAssertEqual(set.ranges, [60..<100])
    }

    func testOffsetsBeyondFourGigabytes() {
        let big: Int64 = 6 << 30
        var set = ByteRangeSet([big..<big + 10])
        set.insert(big + 10..<big + 20)
        XCTAssertEqual(set.ranges, [big..<big + 20])
        XCTAssertEqual(set.gaps(in: big - 5..<big + 25), [big - 5..<big, big + 20..<big + 25])
    }

    /// Random inserts checked against a plain bitmap (seeded: a failure repeats).
    func testRandomInsertsMatchBitmap() {
        var rng = SeededGenerator(seed: 0x5EED_0053)
        for _ in 0..<50 {
            var set = ByteRangeSet()
            var bitmap = [Bool](repeating: false, count: 300)
            for _ in 0..<20 {
                let a = Int.random(in: 0..<300, using: &rng)
                let b = min(300, a + Int.random(in: 0..<40, using: &rng))
                set.insert(Int64(a)..<Int64(b))
                for i in a..<b { bitmap[i] = true }
            }
            for i in 0..<300 { XCTAssertEqual(set.coveredLength(from: Int64(i)) > 0, bitmap[i]) }
            for (x, y) in zip(set.ranges, set.ranges.dropFirst()) { XCTAssertLessThan(x.upperBound, y.lowerBound) }
            XCTAssertEqual(set.byteCount, Int64(bitmap.filter { $0 }.count))
        }
    }
}
