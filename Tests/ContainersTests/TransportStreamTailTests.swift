import XCTest

@testable import Containers

/// An MPEG-TS tail built in memory: the durations its PES timestamps give, as libavformat would
/// set them, and what a damaged or wrapped clock does to them.
final class TransportStreamTailTests: XCTestCase {
    /// A 188-byte packet of `pid` starting a PES with `pts` (a video or audio stream ID).
    private func packet(pid: Int, pts: Int64, streamID: UInt8) -> [UInt8] {
        let stamp: [UInt8] = [
            0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
            UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1),
        ]
        let header: [UInt8] = [0x47, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10]
        let pes: [UInt8] = [0, 0, 1, streamID, 0, 0, 0x80, 0x80, 5] + stamp
        return header + pes + Array(repeating: 0xFF, count: 188 - header.count - pes.count)
    }

    private let video = TransportStreamTail.Stream(index: 0, pid: 0x100, start: 90_000, frame: 3003, primary: true)
    private let audio = TransportStreamTail.Stream(index: 1, pid: 0x101, start: 90_000, frame: 1920, primary: true)

    func testTheLastTimestampsGiveEachStreamItsDuration() throws {
        var bytes: [UInt8] = []
        for k in 0..<300 {
            bytes += packet(pid: 0x100, pts: 90_000 + Int64(k) * 3003, streamID: 0xE0)
            bytes += packet(pid: 0x101, pts: 90_000 + Int64(k) * 1920, streamID: 0xC0)
        }
        let found = try XCTUnwrap(TransportStreamTail.durations(of: [video, audio], source: BytesSource(bytes)))
        XCTAssertEqual(found.streams[0], 299 * 3003 + 3003)
        XCTAssertEqual(found.streams[1], 299 * 1920 + 1920)
        XCTAssertEqual(found.seconds, Double(300 * 3003) / 90_000, accuracy: 1e-9, "the longest stream's end")
    }

    func testDamageAndAWrappedClockAreReadThrough() throws {
        // Garbage between packets (a lost sync), then a clock that wrapped past 2^33.
        let start: Int64 = (1 << 33) - 90_000
        let wrapping = TransportStreamTail.Stream(index: 0, pid: 0x100, start: start, frame: 3003, primary: true)
        var bytes = Array(repeating: UInt8(0x47), count: 3) + Array(repeating: 0x00, count: 100)
        for k in 0..<60 {
            bytes += packet(pid: 0x100, pts: (start + Int64(k) * 3003) & ((1 << 33) - 1), streamID: 0xE0)
        }
        let found = try XCTUnwrap(TransportStreamTail.durations(of: [wrapping], source: BytesSource(bytes)))
        XCTAssertEqual(found.streams[0], 59 * 3003 + 3003, "counted across the wrap")
    }

    func testNoTimestampsGiveNoDurations() throws {
        XCTAssertNil(
            try TransportStreamTail.durations(of: [video], source: BytesSource(Array(repeating: 0x47, count: 188 * 20)))
        )
        XCTAssertNil(try TransportStreamTail.durations(of: [video], source: BytesSource([])))
        XCTAssertNil(
            try TransportStreamTail.durations(of: [], source: BytesSource(packet(pid: 0x100, pts: 1, streamID: 0xE0))))
    }
}
