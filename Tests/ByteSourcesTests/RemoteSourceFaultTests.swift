import ByteSources
import Caching
import Foundation
import RangeFetch
import TestSupport
import XCTest

/// The read path against servers that misbehave.
final class RemoteSourceFaultTests: XCTestCase {
    func session(_ dir: TempDirectory) throws -> MediaSession {
        var options = FetchOptions()
        options.timeout = 5
        options.retryDelay = 0.05
        return MediaSession(cache: try ByteCache(directory: dir.file("cache")), fetchOptions: options)
    }

    func readAll(_ source: any MediaSource, _ range: Range<Int64>) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: range.count)
        var done = 0
        while done < range.count {
            let n = try out.withUnsafeMutableBytes {
                try source.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]), at: range.lowerBound + Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return Array(out[0..<done])
    }

    func testChangedContentDropsOldBytesAndNeverMixes() throws {
        let dir = try TempDirectory()
        let v1 = randomBytes(500_000, seed: 1), v2 = randomBytes(500_000, seed: 2)
        let server = try FaultServer()
        server.route("/v", .serve(body: v1, etag: "\"v1\""))
        XCTAssertEqual(try readAll(try session(dir).open(server.url("/v")), 0..<100_000), Array(v1[0..<100_000]))
        server.route("/v", .serve(body: v2, etag: "\"v2\""))
        let source = try session(dir).open(server.url("/v"))
        // Cached bytes of v1 are served until the origin is asked again...
        XCTAssertEqual(try readAll(source, 300_000..<310_000), Array(v2[300_000..<310_000]))
        XCTAssertEqual(server.requests.last?.headers["if-range"], "\"v1\"")
        XCTAssertTrue(source.warnings.contains { $0.contains("changed") }, "\(source.warnings)")
        // ...and once it says the content changed, v1's ranges are gone: no mixing.
        XCTAssertEqual(try readAll(source, 0..<100_000), Array(v2[0..<100_000]))
        let cache = try ByteCache(directory: dir.file("cache"))
        let resource = try XCTUnwrap(try cache.resource(for: server.url("/v")))
        XCTAssertEqual(resource.validators.etag, "\"v2\"")
    }

    func testServerIgnoringRangesStillServesTheRightBytesAndWarnsOnce() throws {
        let dir = try TempDirectory()
        let body = randomBytes(2_000_000, seed: 9)
        let server = try FaultServer()
        server.route("/v", .ignoreRanges(body: body))
        let source = try session(dir).open(server.url("/v"))
        XCTAssertEqual(try readAll(source, 1_000_000..<1_100_000), Array(body[1_000_000..<1_100_000]))
        XCTAssertEqual(try readAll(source, 0..<2_000_000), body)
        XCTAssertEqual(source.warnings.filter { $0.contains("ignores range") }.count, 1)
        let cache = try ByteCache(directory: dir.file("cache"))
        XCTAssertTrue(try cache.presentRanges(for: server.url("/v")).contains(0..<1_100_000), "what arrived was kept")
    }

    func testABodyWithoutLengthEndsTheResourceInsteadOfLooping() throws {
        let dir = try TempDirectory()
        let body = randomBytes(300_000, seed: 5)
        let server = try FaultServer()
        server.route("/v", .ignoreRangesWithoutLength(body: body))
        for session in [try session(dir), MediaSession(cache: nil)] {
            let source = try session.open(server.url("/v"))
            XCTAssertEqual(try readAll(source, 0..<1_000_000), body, "reads stop at the end of the body")
            XCTAssertLessThanOrEqual(source.counters.requests, 4)
        }
    }

    /// A chunked body says where it ends: ended cleanly before the request's end, it is the whole
    /// resource, its size known from the one request. A body without framing (HTTP/1.0 style) is
    /// only believed to be whole when a second request, past it, gets the same body again: a
    /// dropped connection would end it too.
    func testAChunkedWholeBodyTellsTheSizeAndAnUnframedOneDoesNot() throws {
        let dir = try TempDirectory()
        let body = randomBytes(300_000, seed: 6)
        var chunked: [UInt8] = []
        for start in stride(from: 0, to: body.count, by: 65_536) {
            let piece = body[start..<min(body.count, start + 65_536)]
            chunked += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
        }
        chunked += Array("0\r\n\r\n".utf8)
        let server = try FaultServer()
        server.route(
            "/chunked",
            .fixed(status: 200, headers: [("Transfer-Encoding", "chunked")], body: chunked, contentLength: -1))
        server.route("/unframed", .ignoreRangesWithoutLength(body: body))
        for (path, requests) in [("/chunked", 1), ("/unframed", 2)] {
            let source = try session(dir).open(server.url(path))
            try source.prefetch(0..<1_000_000)
            XCTAssertEqual((source as? RemoteSource)?.knownSize, Int64(body.count), path)
            XCTAssertEqual(source.counters.requests, Int64(requests), path)
            XCTAssertEqual(try readAll(source, 0..<1_000_000), body, path)
        }
    }

    func testDroppedConnectionIsResumedTransparently() throws {
        let dir = try TempDirectory()
        let body = randomBytes(1_000_000, seed: 4)
        let server = try FaultServer()
        server.route("/v", .sequence([.dropAfter(bytes: 100_000, then: .serve(body: body)), .serve(body: body)]))
        let source = try session(dir).open(server.url("/v"))
        XCTAssertEqual(try readAll(source, 0..<1_000_000), body)
    }

    func testHTTPErrorsSurfaceWithTheURL() throws {
        let dir = try TempDirectory()
        let server = try FaultServer()
        server.route("/gone", .status(404))
        let source = try session(dir).open(server.url("/gone"))
        XCTAssertThrowsError(try readAll(source, 0..<10)) { error in
            XCTAssertTrue("\(error)".contains("HTTP 404"))
            XCTAssertTrue("\(error)".contains(server.url("/gone")))
        }
    }

    func testAReaderThatUsedTheOldVersionNeverGetsBytesOfTheNewOne() throws {
        let dir = try TempDirectory()
        let v1 = randomBytes(2_000_000, seed: 31), v2 = randomBytes(2_000_000, seed: 32)
        let server = try FaultServer()
        server.route("/v", .serve(body: v1, etag: "\"v1\""))
        let session = try session(dir)
        let source = try session.open(server.url("/v"))
        XCTAssertEqual(try readAll(source, 0..<100_000), Array(v1[0..<100_000]))
        server.route("/v", .serve(body: v2, etag: "\"v2\""))
        XCTAssertThrowsError(try readAll(source, 1_500_000..<1_510_000)) { error in
            XCTAssertEqual(error as? SourceError, .versionChanged(input: server.url("/v")))
        }
        XCTAssertThrowsError(try readAll(source, 0..<10), "a source that saw the change is finished")
        XCTAssertTrue(source.versionChanged)
        // A new reader gets a new source and the new version, whole.
        let fresh = try session.open(server.url("/v"))
        XCTAssertFalse(fresh === source)
        XCTAssertEqual(try readAll(fresh, 0..<2_000_000), v2)
    }

    func testAnotherProcessReplacingTheCachedVersionIsNotMixedIn() throws {
        let dir = try TempDirectory()
        let v1 = randomBytes(3_000_000, seed: 33), v2 = randomBytes(3_000_000, seed: 34)
        let server = try FaultServer()
        server.route("/v", .serve(body: v1, etag: "\"v1\""))
        let reader = try session(dir).open(server.url("/v"))
        XCTAssertEqual(try readAll(reader, 0..<100_000), Array(v1[0..<100_000]))
        // Another process (its own ByteCache on the same directory) meets v2 and replaces the entry.
        server.route("/v", .serve(body: v2, etag: "\"v2\""))
        let other = try session(dir).open(server.url("/v"))
        XCTAssertEqual(try readAll(other, 1_000_000..<1_100_000), Array(v2[1_000_000..<1_100_000]))
        // The first reader must not pick up v2's bytes from the shared cache.
        XCTAssertThrowsError(try readAll(reader, 1_000_000..<1_100_000)) { error in
            XCTAssertEqual(error as? SourceError, .versionChanged(input: server.url("/v")))
        }
    }

    func testAJobThatMetAChangeRunsOnceMoreOnTheNewVersion() throws {
        let dir = try TempDirectory()
        let v1 = randomBytes(1_000_000, seed: 35), v2 = randomBytes(1_000_000, seed: 36)
        let server = try FaultServer()
        server.route("/v", .serve(body: v1, etag: "\"v1\""))
        let session = try session(dir)
        var attempts = 0
        let bytes = try session.onOneVersion { () throws -> [UInt8] in
            attempts += 1
            let source = try session.open(server.url("/v"))
            let head = try readAll(source, 0..<300_000)
            if attempts == 1 { server.route("/v", .serve(body: v2, etag: "\"v2\"")) }
            return head + (try readAll(source, 300_000..<1_000_000))
        }
        XCTAssertEqual(attempts, 2)
        XCTAssertTrue(bytes == v2, "the result is all of one version")
    }

    func testA416WhereTheResourceHasBytesIsNotTheEnd() throws {
        let dir = try TempDirectory()
        let server = try FaultServer()
        server.route("/v", .fixed(status: 416, headers: [], body: []))
        let source = try session(dir).open(server.url("/v"))
        XCTAssertThrowsError(try readAll(source, 1000..<2000)) { error in
            guard case .inconsistentOrigin(_, let detail)? = error as? SourceError else {
                return XCTFail("got \(error)")
            }
            XCTAssertTrue(detail.contains("416"), detail)
        }
    }

    /// An origin that says 5,000,000 bytes, then answers the next range with a 416 that names
    /// 10 (or a file without validators that shrinks): the reader must not take the new size as
    /// its end of file and stop short with success; it read another version.
    func testAnEndThatMovesIsAChangedVersionNotAShortFile() throws {
        let dir = try TempDirectory()
        let data = randomBytes(5_000_000, seed: 38)
        let server = try FaultServer()
        server.route(
            "/lie",
            .sequence([
                .serve(body: data, etag: "\"a\""),
                .fixed(status: 416, headers: [("Content-Range", "bytes */10")], body: []),
            ]))
        server.route("/shrink", .sequence([.serve(body: data), .serve(body: Array(data[0..<10]))]))
        for path in ["/lie", "/shrink"] {
            let source = try session(dir).open(server.url(path))
            // In 64 KiB reads, as cat does: the first window is not the whole file.
            XCTAssertThrowsError(
                try stride(from: Int64(0), to: 5_000_000, by: 65_536).forEach {
                    _ = try readAll(source, $0..<min($0 + 65_536, 5_000_000))
                }, path
            ) { error in
                guard case .versionChanged? = error as? SourceError else { return XCTFail("\(path): got \(error)") }
            }
        }
    }

    /// Without ETag or Last-Modified only a size change shows a new version: the user is told.
    func testAnOriginWithoutValidatorsIsNamedInAWarning() throws {
        let dir = try TempDirectory()
        let server = try FaultServer()
        server.route("/v", .serve(body: randomBytes(1000, seed: 39), etag: nil))
        server.route("/w", .serve(body: randomBytes(1000, seed: 39)))
        let blind = try session(dir).open(server.url("/v")), tagged = try session(dir).open(server.url("/w"))
        _ = try readAll(blind, 0..<1000)
        _ = try readAll(tagged, 0..<1000)
        XCTAssertEqual(
            blind.warnings.filter { $0.contains("neither ETag nor Last-Modified") }.count, 1, "\(blind.warnings)")
        XCTAssertTrue(tagged.warnings.isEmpty, "\(tagged.warnings)")
    }

    func testNonsenseSizesAreNeitherTrustedNorStored() throws {
        let dir = try TempDirectory()
        let server = try FaultServer()
        server.route(
            "/v",
            .fixed(
                status: 206, headers: [("Content-Range", "bytes 0-65535/-5")],
                body: randomBytes(65_536, seed: 37)))
        for _ in 0..<2 {  // the second time proves nothing poisoned the cache
            let source = try session(dir).open(server.url("/v"))
            XCTAssertThrowsError(try readAll(source, 0..<100)) { error in
                guard case .badResponse? = error as? FetchError else { return XCTFail("got \(error)") }
            }
            XCTAssertThrowsError(try source.size())
        }
        XCTAssertNil(try ByteCache(directory: dir.file("cache")).resource(for: server.url("/v"))?.size)
    }
}
