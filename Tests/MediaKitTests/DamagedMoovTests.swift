import ByteSources
import Containers
import Foundation
import MediaKit
import TestSupport
import XCTest

/// A moov whose size field lies — 0 ("to the end of the file") in front of the media data, or more
/// than the file holds — must not turn a probe into a download of the file. Crafted from the
/// faststart sample with 20 MiB more media data, served by nginx; the access log says what moved.
final class DamagedMoovTests: XCTestCase {
    static let padding = 20 << 20
    var media: TempDirectory!
    var cache: TempDirectory!
    var nginx: NginxServer!

    override func setUpWithError() throws {
        media = try TempDirectory()
        cache = try TempDirectory()
        nginx = try NginxServer(root: media.path)
    }

    override func tearDown() {
        nginx.stop()
        (media, cache) = (nil, nil)  // XCTest keeps every test case object: free the folders now
    }

    /// Top-level boxes of `bytes` as (type, offset, size); 32-bit sizes, as the samples have.
    func boxes(_ bytes: [UInt8]) -> [(type: String, offset: Int, size: Int)] {
        var found: [(String, Int, Int)] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            found.append((String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self), offset, size))
            guard size >= 8 else { break }
            offset += size
        }
        return found
    }

    /// `sample` with `padding` zero bytes more at the end of its mdat, and the moov's size field
    /// set to `moovSize` (unchanged when nil). Returns the file name and the moov's offset.
    func craft(_ name: String, from sample: String, moovSize: UInt32?) throws -> (url: String, path: String, moov: Int)
    {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: MediaFixtures.samples + "/" + sample)))
        let layout = boxes(bytes)
        let mdat = try XCTUnwrap(layout.first { $0.type == "mdat" })
        let moov = try XCTUnwrap(layout.first { $0.type == "moov" })
        func put(_ value: UInt32, at offset: Int) {
            for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(i))) }
        }
        bytes.insert(contentsOf: [UInt8](repeating: 0, count: Self.padding), at: mdat.offset + mdat.size)
        put(UInt32(mdat.size + Self.padding), at: mdat.offset)
        let moovOffset = moov.offset > mdat.offset ? moov.offset + Self.padding : moov.offset
        if let moovSize { put(moovSize, at: moovOffset) }
        let path = media.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (nginx.url("/" + name), path, moovOffset)
    }

    func probe(_ url: String, prober: Prober = Prober()) throws -> ProbeResult {
        try prober.probe(url, session: try MediaFixtures.session(cacheDir: cache.path))
    }

    func bytesSent(atLeast requests: Int = 1) throws -> Int64 {
        try nginx.waitForAccessLog(count: requests).reduce(0) { $0 + $1.bodyBytesSent }
    }

    func testASizeZeroMoovInFrontOfTheMediaDataFetchesTheMoovNotTheFile() throws {
        let file = try craft("moov0.mp4", from: "faststart.mp4", moovSize: 0)
        let r = try probe(file.url)
        try assertAgreesWithFFprobe(r, file.path)
        let moov = try XCTUnwrap(r.layout?.moov)
        XCTAssertEqual(moov.offset, Int64(file.moov))
        XCTAssertLessThan(moov.end, 8 << 10, "the moov's own boxes, not the media data: \(moov)")
        XCTAssertEqual(r.layout?.moovPosition, .front)
        XCTAssertTrue(r.warnings.contains { $0.contains("size 0") }, "\(r.warnings)")
        XCTAssertLessThanOrEqual(try bytesSent(), 256 << 10, "the file is \(Self.padding >> 20) MiB")

        // A moov larger than the first request: its boxes are fetched as the walk meets them.
        nginx.clearLog()
        var prober = Prober()
        prober.walker.firstRequest = 1024
        let small = try prober.probe(file.url, session: try MediaFixtures.session(cacheDir: cache.file("other")))
        XCTAssertEqual(small.layout?.moov, moov)
        XCTAssertLessThanOrEqual(try bytesSent(atLeast: 2), 256 << 10)
    }

    func testASizeZeroMoovAtTheEndStillReachesTheEnd() throws {
        let file = try craft("end0.mp4", from: "moov-at-end.mp4", moovSize: 0)
        let r = try probe(file.url)
        try assertAgreesWithFFprobe(r, file.path)
        XCTAssertEqual(r.layout?.moov?.end, r.size)
        XCTAssertEqual(r.layout?.moovPosition, .end)
        XCTAssertNil(r.layout?.damaged)
    }

    func testAMoovClaimingMoreThanTheFileIsAMediaErrorBeforeItsBodyIsFetched() throws {
        let file = try craft("huge.mp4", from: "faststart.mp4", moovSize: 0x7FFF_0000)
        XCTAssertThrowsError(try probe(file.url)) { error in
            guard case .malformed(_, let detail) = error as? MediaError else { return XCTFail("\(error)") }
            XCTAssertTrue(
                detail.contains("the moov box at offset \(file.moov) claims 2147418112 bytes but the file ends at"),
                detail)
        }
        XCTAssertEqual(try bytesSent(), BoxWalker.defaultFirstRequest, "the first request only")
    }

    func testAMoovOverTheHeaderLimitIsAMediaError() throws {
        let file = try craft("limit.mp4", from: "faststart.mp4", moovSize: nil)
        var prober = Prober()
        prober.walker.firstRequest = 1024
        prober.walker.maxHeaderBox = 4000  // the sample's moov is 4715 bytes
        XCTAssertThrowsError(try probe(file.url, prober: prober)) { error in
            XCTAssertTrue("\(error)".contains("more than the 4000-byte limit for a header"), "\(error)")
        }
        XCTAssertEqual(
            try nginx.waitForAccessLog(count: 1).map(\.range), ["bytes=0-1023"], "the moov's body is never asked for")
    }
}
