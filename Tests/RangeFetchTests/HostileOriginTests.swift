import Foundation
import RangeFetch
import TestSupport
import XCTest

/// Origins that lie about sizes, ranges, encodings and lengths, or answer too slowly to be
/// useful: each gets a clear error, never bytes taken for the file's or a silent empty success.
final class HostileOriginTests: XCTestCase {
    let body = randomBytes(5000, seed: 21)

    private func fetchError(
        _ behavior: FaultBehavior, range: Range<Int64> = 0..<100,
        options: FetchOptions = quickOptions(),
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> (FetchError?, FaultServer, Collected) {
        let server = try FaultServer()
        server.route("/v", behavior)
        let collected = Collected()
        var tally = FetchCounters()
        do {
            _ = try RangeFetcher(options: options).fetch(
                url: server.url("/v"), range: range, tally: &tally,
                onData: { collected.pieces.append(($0, Array($1))) })
            XCTFail("expected an error", file: file, line: line)
            return (nil, server, collected)
        } catch {
            return (error as? FetchError, server, collected)
        }
    }

    func testA416InsideTheSizeItStatesIsAnError() throws {
        let (error, _, _) = try fetchError(.fixed(status: 416, headers: [("Content-Range", "bytes */5000")], body: []))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("416") && detail.contains("5000"), detail)
    }

    func testImpossibleSizesAreRefusedNotStored() throws {
        for value in ["bytes 0-99/-5", "bytes 0-99/99999999999999999999", "bytes -1-99/5000", "bytes 0-99/50"] {
            let (error, _, collected) = try fetchError(
                .fixed(
                    status: 206, headers: [("Content-Range", value)],
                    body: Array(body[0..<100])))
            guard case .badResponse? = error else { return XCTFail("\(value): got \(String(describing: error))") }
            XCTAssertTrue(collected.pieces.isEmpty, "\(value): no byte is delivered")
        }
        let (error, _, _) = try fetchError(.fixed(status: 416, headers: [("Content-Range", "bytes */-1")], body: []))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("*/-1"), detail)
    }

    func testAnEncodedBodyIsRefusedAndIdentityIsAskedFor() throws {
        let (error, server, collected) = try fetchError(
            .fixed(
                status: 206,
                headers: [
                    ("Content-Range", "bytes 0-99/5000"), ("Content-Encoding", "gzip"),
                ], body: Array(body[0..<100])))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("gzip"), detail)
        XCTAssertTrue(collected.pieces.isEmpty)
        XCTAssertEqual(server.requests.first?.headers["accept-encoding"], "identity")
    }

    func testAContentLengthThatDisagreesWithTheContentRangeIsRefused() throws {
        // The body is the 1000 bytes the Content-Range names, but Content-Length claims 2000:
        // before, the broken transfer was retried as the inverted range bytes=2000-1999 and its 416
        // taken as the end of the file.
        let (error, server, _) = try fetchError(
            .fixed(
                status: 206, headers: [("Content-Range", "bytes 1000-1999/5000")],
                body: Array(body[1000..<2000]), contentLength: 2000),
            range: 1000..<2000)
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("Content-Length"), detail)
        XCTAssertFalse(server.requests.contains { $0.range == "bytes=2000-1999" }, "never an inverted range")
    }

    func testABodyLongerThanItsContentRangeIsRefused() throws {
        let (error, _, collected) = try fetchError(
            .fixed(
                status: 206, headers: [("Content-Range", "bytes 0-99/5000")],
                body: Array(body[0..<300]), contentLength: -1))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("past the end"), detail)
        XCTAssertLessThanOrEqual(
            collected.pieces.reduce(0) { $0 + $1.1.count }, 100, "nothing past the announced range")
    }

    func testABodyShorterThanItsContentRangeIsResumedNotTakenAsComplete() throws {
        // A close-delimited 206 that stops at byte 400 of the 0-999 it announced ends "cleanly" for
        // libcurl; the rest must be asked for again, not assumed.
        let short = FaultBehavior.fixed(
            status: 206, headers: [("Content-Range", "bytes 0-999/5000")],
            body: Array(body[0..<400]), contentLength: -1)
        let server = try FaultServer()
        server.route("/v", .sequence([short, .serve(body: body)]))
        let (_, got, _) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 0..<1000)
        XCTAssertEqual(got.bytes(in: 0..<1000), Array(body[0..<1000]))
        XCTAssertEqual(server.requests.map(\.range), ["bytes=0-999", "bytes=400-999"])

        // Always short: the resumed request gets the same wrong answer, which is an error.
        let (error, _, _) = try fetchError(short, range: 0..<1000)
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("asked for bytes 400-999"), detail)
    }

    func testHugeResponseHeadersAreAClearErrorWithoutRetries() throws {
        let padding = (0..<4000).map { ("X-Pad-\($0)", String(repeating: "a", count: 100)) }
        let (error, server, _) = try fetchError(
            .fixed(
                status: 206, headers: [("Content-Range", "bytes 0-99/5000")] + padding,
                body: Array(body[0..<100])))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("headers exceed"), detail)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testARedirectToAFileURLNamesItsTarget() throws {
        let (error, _, _) = try fetchError(.redirect(to: "file:///etc/passwd"))
        XCTAssertEqual(error.map { "\($0)" }?.contains("file:///etc/passwd"), true, "\(String(describing: error))")
        guard case .redirectRefused? = error else { return XCTFail("got \(String(describing: error))") }
    }

    /// A Location libcurl cannot parse is the origin's fault: the user's URL was fine.
    func testAMalformedRedirectIsTheServersFaultNotTheURLs() throws {
        let (error, _, _) = try fetchError(.redirect(to: "http://[::1/x"))
        guard case .badResponse? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(
            "\(String(describing: error))".contains("redirects to a malformed URL"), "\(String(describing: error))")
    }

    /// libcurl calls an answer it cannot use as HTTP (here a 1xx status as the final one) an
    /// "unsupported protocol": that is the server's fault, not the user's URL scheme.
    func testAnAnswerThatIsNotUsableHTTPIsABadResponseNotABadScheme() throws {
        let (error, _, _) = try fetchError(.fixed(status: 150, headers: [], body: Array("x".utf8)))
        XCTAssertNotNil(error)
        if case .unsupportedScheme? = error { XCTFail("blamed the URL's scheme: \(String(describing: error))") }
        XCTAssertFalse("\(String(describing: error))".contains("scheme"), "\(String(describing: error))")
    }

    /// A request that fails below HTTP leaves its libcurl handle in a state where setting the
    /// buffer size fails; pooled, that handle made every later request of the fetcher fail
    /// (the service answered 500 to every origin until restarted).
    func testAFailedRedirectDoesNotBreakTheFetchersLaterRequests() throws {
        let server = try FaultServer()
        server.route("/ftp", .redirect(to: "ftp://127.0.0.1/x"))
        server.route("/file", .redirect(to: "file:///etc/passwd"))
        server.route("/v", .serve(body: body))
        let fetcher = RangeFetcher(options: quickOptions())
        for bad in ["/ftp", "/file", "/ftp"] {
            XCTAssertThrowsError(try fetcher.collect(server.url(bad), 0..<10))
            XCTAssertEqual(
                try fetcher.collect(server.url("/v"), 0..<100).1.bytes(in: 0..<100), Array(body[0..<100]),
                "after \(bad)")
        }
    }

    func testADrippingServerTimesOutWithinAboutTwiceTheTimeout() throws {
        let started = Date()
        let (error, server, _) = try fetchError(
            .drip(bytesPerSecond: 2, then: .serve(body: body)), range: 0..<5000,
            options: quickOptions(timeout: 2))
        XCTAssertEqual(error, .timeout(url: server.url("/v")))
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertLessThan(elapsed, 8, "a drip of 2 bytes/s ends near 2 × the 2 s timeout")
        XCTAssertEqual(server.requests.count, 2, "a timeout is retried once")
    }

    func testCredentialsGoToTheServerButNeverIntoErrors() throws {
        let server = try FaultServer()
        server.route("/secret", .status(403))
        let url = server.url("/secret").replacingOccurrences(of: "http://", with: "http://alice:S3cr3tPW@")
        var tally = FetchCounters()
        XCTAssertThrowsError(
            try RangeFetcher(options: quickOptions()).fetch(
                url: url, range: 0..<10, tally: &tally,
                onData: { _, _ in })
        ) { error in
            XCTAssertFalse("\(error)".contains("S3cr3tPW"), "\(error)")
            XCTAssertTrue("\(error)".contains("***@127.0.0.1"), "\(error)")
        }
        let authorization = try XCTUnwrap(server.requests.first?.headers["authorization"])
        XCTAssertEqual(authorization, "Basic " + Data("alice:S3cr3tPW".utf8).base64EncodedString())
    }

    /// Two different Content-Lengths (or ETags, Content-Ranges) in one answer: which the body is
    /// of cannot be known, so it is refused.
    func testTwoDifferentLengthsInOneAnswerAreRefused() throws {
        let (error, _, collected) = try fetchError(
            .fixed(
                status: 200, headers: [("Content-Length", "50")], body: Array(body[0..<100]),
                contentLength: 100))
        guard case .badResponse(_, let detail)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(detail.contains("two different content-length"), detail)
        XCTAssertTrue(collected.pieces.isEmpty)
    }

    /// An origin that answers with interim 1xx responses, forever: refused after a few, within the
    /// header bound, not followed for as long as it likes.
    func testEndlessInterimAnswersAreRefused() throws {
        let (listener, port) = try LoopbackSocket.listen()
        defer { close(listener) }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = request.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            let interim = Array("HTTP/1.1 100 Continue\r\nX-Pad: 1\r\n\r\n".utf8)
            for _ in 0..<20_000 where interim.withUnsafeBytes({ LoopbackSocket.sendAll(client, $0) }) { usleep(1000) }
        }
        var tally = FetchCounters()
        let started = Date()
        XCTAssertThrowsError(
            try RangeFetcher(options: quickOptions(timeout: 5)).fetch(
                url: "http://127.0.0.1:\(port)/v", range: 0..<100,
                tally: &tally, onData: { _, _ in })
        ) { error in
            guard case .badResponse(_, let detail)? = error as? FetchError else { return XCTFail("got \(error)") }
            XCTAssertTrue(detail.contains("interim"), detail)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        _ = done.wait(timeout: .now() + 30)
    }
}
