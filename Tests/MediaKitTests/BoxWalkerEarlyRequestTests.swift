import Foundation
import MediaKit
import MediaSource
import TestSupport
import XCTest

/// The walk reads box headers while the first response is still arriving and asks for the moov
/// at once on a connection opened ahead, over a real socket: the server holds the first response
/// after its first bytes, so a request sent only after it would come late, on the same connection.
final class BoxWalkerEarlyRequestTests: XCTestCase {
    var cache: TempDirectory!
    var server: FaultServer!

    override func setUpWithError() throws {
        cache = try TempDirectory()
        server = try FaultServer()
    }

    override func tearDown() { server.stop() }

    /// Serves `body` at `path`, the first response pausing after its first 2,000 bytes.
    func serveWithSlowFirstResponse(_ path: String, _ body: [UInt8]) {
        server.route(path, .sequence([.stall(afterBytes: 2_000, seconds: 1, then: .serve(body: body)), .serve(body: body)]))
    }

    func walk(_ path: String) throws -> (MP4Layout?, any MediaSource) {
        let source = try MediaFixtures.session(cacheDir: cache.path).open(server.url(path))
        return (try BoxWalker().walk(source), source)
    }

    /// The `Range` header's bytes, `a-b` as `a..<b+1`.
    func requestedRanges() throws -> [Range<Int64>] {
        try server.requests.map { request in
            let spec = try XCTUnwrap(request.range?.split(separator: "=").last)
            let ends = spec.split(separator: "-").compactMap { Int64($0) }
            XCTAssertEqual(ends.count, 2, "a closed range")
            return ends[0]..<ends[1] + 1
        }
    }

    func testMoovAtTheEndIsAskedForWhileTheFirstResponseArrivesAndNoByteComesTwice() throws {
        let body = try Array(Data(contentsOf: URL(fileURLWithPath: MediaFixtures.samples + "/moov-at-end.mp4")))
        serveWithSlowFirstResponse("/end.mp4", body)
        let (layout, source) = try walk("/end.mp4")
        XCTAssertEqual(layout?.moovPosition, .end)
        let requests = server.requests
        XCTAssertEqual(requests.count, 2)
        XCTAssertNotEqual(requests[0].connection, requests[1].connection,
                          "the tail went out on another connection while the first response was held")
        let ranges = try requestedRanges()
        XCTAssertEqual(ranges.first, 0..<BoxWalker.defaultFirstRequest)
        XCTAssertEqual(ranges.last?.upperBound, Int64(body.count), "the tail")
        XCTAssertLessThanOrEqual(ranges[0].upperBound, ranges[1].lowerBound, "the requests do not overlap")
        try source.prefetch(ranges[0]) // the held first response, to its end
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(source.counters.bytesFetched, Int64(ranges[0].count + ranges[1].count), "no byte fetched twice")
    }

    func testMoovInsideTheFirstRequestMakesNoOtherRequest() throws {
        let body = try Array(Data(contentsOf: URL(fileURLWithPath: MediaFixtures.samples + "/faststart.mp4")))
        serveWithSlowFirstResponse("/front.mp4", body)
        let (layout, _) = try walk("/front.mp4")
        XCTAssertEqual(layout?.moovPosition, .front)
        XCTAssertEqual(layout?.boxes.map(\.type), ["ftyp", "moov", "free", "mdat"])
        XCTAssertEqual(try requestedRanges(), [0..<BoxWalker.defaultFirstRequest],
                       "the moov was on its way in the first response: nothing else is asked for")
    }

    func testMoovLargerThanTheFirstRequestHasItsRestAskedForAtOnce() throws {
        // ftyp, a 200,000-byte moov (its header and padding), then 100,000 bytes of media data.
        func box(_ type: String, _ size: Int) -> [UInt8] {
            withUnsafeBytes(of: UInt32(size).bigEndian, Array.init) + Array(type.utf8)
        }
        var body = box("ftyp", 24) + Array("isom".utf8) + [0, 0, 2, 0] + Array("isommp41".utf8)
        body += box("moov", 200_000) + box("free", 199_992) + [UInt8](repeating: 0, count: 199_984)
        body += box("mdat", 100_008) + [UInt8](repeating: 7, count: 100_000)
        serveWithSlowFirstResponse("/big-moov.mp4", body)
        let (layout, source) = try walk("/big-moov.mp4")
        XCTAssertEqual(layout?.moov?.offset, 24)
        XCTAssertEqual(layout?.moov?.size, 200_000)
        let requests = server.requests
        XCTAssertEqual(requests.count, 2)
        XCTAssertNotEqual(requests[0].connection, requests[1].connection)
        let afterMoov = BoxWalker().afterMoov
        XCTAssertEqual(try requestedRanges(), [0..<BoxWalker.defaultFirstRequest,
                                               BoxWalker.defaultFirstRequest..<200_024 + afterMoov],
                       "the rest of the moov and what follows it, starting where the first request ends")
        XCTAssertEqual(source.counters.bytesFetched, 200_024 + afterMoov, "no byte fetched twice")
    }
}
