import Foundation
import RangeFetch
import Support
import Synchronization
import TestSupport
import XCTest

/// The fetcher against the project's fault-injecting server: what nginx will not do.
final class RangeFetcherFaultTests: XCTestCase {
    let body = randomBytes(200_000, seed: 11)

    func testServerIgnoringRangesIsDetectedAndBytesFromZeroAreDelivered() throws {
        let server = try FaultServer()
        server.route("/v", .ignoreRanges(body: body))
        let (outcome, got, _) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 50_000..<60_000)
        guard case .delivered(let info) = outcome else { return XCTFail("expected bytes") }
        XCTAssertTrue(info.rangeIgnored)
        XCTAssertEqual(info.totalSize, 200_000)
        XCTAssertEqual(got.pieces.first?.0, 0, "a 200 body starts at offset 0")
        XCTAssertEqual(got.bytes(in: 0..<60_000), Array(body[0..<60_000]), "bytes before the range are kept too")
        XCTAssertFalse(got.pieces.contains { $0.0 + Int64($0.1.count) > 60_000 }, "nothing past the range is delivered")
    }

    func testIfRangeIsSentAndAChangedResourceComesBackWhole() throws {
        let server = try FaultServer()
        server.route("/v", .serve(body: body, etag: "\"new\""))
        let (outcome, _, _) = try RangeFetcher(options: quickOptions()).collect(
            server.url("/v"), 100..<200, ifRange: "\"old\"")
        XCTAssertEqual(server.requests.first?.headers["if-range"], "\"old\"")
        XCTAssertEqual(server.requests.first?.range, "bytes=100-199")
        guard case .delivered(let info) = outcome else { return XCTFail("expected bytes") }
        XCTAssertEqual(info.status, 200)
        XCTAssertEqual(info.etag, "\"new\"")
    }

    /// A burst of parallel transfers needs a handle each; afterwards only a bounded number stay
    /// idle in the pool (each keeps connections open), not every handle the burst made.
    func testABurstLeavesABoundedPoolOfIdleHandles() throws {
        let server = try FaultServer()
        server.route("/v", .stall(afterBytes: 0, seconds: 0.3, then: .serve(body: body)))
        let fetcher = RangeFetcher(options: quickOptions())
        let failed = Atomic<Int>(0), peak = Atomic<Int>(0)
        let group = DispatchGroup()
        for _ in 0..<40 {  // threads of their own: all 40 transfers run at once
            group.enter()
            Thread {
                if (try? fetcher.collect(server.url("/v"), 0..<1000)) == nil { failed.add(1, ordering: .relaxed) }
                peak.max(fetcher.openHandles, ordering: .relaxed)
                group.leave()
            }.start()
        }
        group.wait()
        XCTAssertEqual(failed.load(ordering: .relaxed), 0)
        XCTAssertGreaterThan(peak.load(ordering: .relaxed), 16, "the burst needed more handles than are kept")
        XCTAssertLessThanOrEqual(fetcher.openHandles, 16, "idle handles kept after the burst")
        XCTAssertGreaterThan(fetcher.openHandles, 0, "some are kept for the next requests")
    }

    func testTransientErrorsAreRetriedWithBackoff() throws {
        let server = try FaultServer()
        server.route("/v", .sequence([.status(500), .status(503), .serve(body: body)]))
        let (outcome, got, tally) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 0..<1000)
        guard case .delivered = outcome else { return XCTFail("expected bytes") }
        XCTAssertEqual(got.bytes(in: 0..<1000), Array(body[0..<1000]))
        XCTAssertEqual(tally.requests, 3)
    }

    func testRetryAfterIsHonoured() throws {
        let server = try FaultServer()
        server.route("/v", .sequence([.status(429, retryAfter: 1), .serve(body: body)]))
        let started = Date()
        let (_, got, tally) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 0..<10)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.9, "waited as the server asked")
        XCTAssertEqual(got.bytes(in: 0..<10), Array(body[0..<10]))
        XCTAssertEqual(tally.requests, 2)
    }

    func testClientErrorsAreNotRetried() throws {
        let server = try FaultServer()
        server.route("/v", .status(403))
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .http(status: 403, url: server.url("/v"), retryAfter: nil))
            XCTAssertTrue("\(error)".contains("forbidden"))
        }
        XCTAssertEqual(server.requests.count, 1)
    }

    func testDroppedConnectionResumesAtTheFirstMissingByte() throws {
        let server = try FaultServer()
        server.route("/v", .sequence([.dropAfter(bytes: 30_000, then: .serve(body: body)), .serve(body: body)]))
        let (_, got, tally) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 10_000..<110_000)
        XCTAssertEqual(got.bytes(in: 10_000..<110_000), Array(body[10_000..<110_000]))
        XCTAssertEqual(tally.requests, 2)
        let ranges = server.requests.map(\.range)
        XCTAssertEqual(ranges.first, "bytes=10000-109999")
        XCTAssertEqual(ranges.last, "bytes=40000-109999", "the retry asks only for what did not arrive")
        XCTAssertEqual(server.requests.last?.headers["if-range"], "\"v1\"", "and guards it with the validator")
    }

    func testShortBodyIsResumed() throws {
        let server = try FaultServer()
        server.route("/v", .sequence([.shortBody(body: body, missing: 500), .serve(body: body)]))
        let (_, got, _) = try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 0..<100_000)
        XCTAssertEqual(got.bytes(in: 0..<100_000), Array(body[0..<100_000]))
        XCTAssertEqual(server.requests.last?.range, "bytes=99500-99999")
    }

    func testStalledTransferTimesOutAndIsRetried() throws {
        let server = try FaultServer()
        server.route(
            "/v", .sequence([.stall(afterBytes: 1000, seconds: 30, then: .serve(body: body)), .serve(body: body)]))
        let started = Date()
        let (_, got, tally) = try RangeFetcher(options: quickOptions(timeout: 1)).collect(server.url("/v"), 0..<50_000)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertEqual(got.bytes(in: 0..<50_000), Array(body[0..<50_000]))
        XCTAssertEqual(tally.requests, 2)
    }

    func testSlowServerGivesUpWithATimeoutError() throws {
        let server = try FaultServer()
        server.route("/v", .delay(seconds: 20, then: .serve(body: body)))
        var options = quickOptions(timeout: 1)
        options.maxRetries = 1
        let started = Date()
        XCTAssertThrowsError(try RangeFetcher(options: options).collect(server.url("/v"), 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .timeout(url: server.url("/v")))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
    }

    func testLyingContentRangeIsRejected() throws {
        let server = try FaultServer()
        server.route("/v", .wrongContentRange(body: body))
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect(server.url("/v"), 100..<200)) { error in
            guard case .badResponse(_, let detail) = error as? FetchError else { return XCTFail("got \(error)") }
            XCTAssertTrue(detail.contains("bytes 100-199"), detail)
        }
    }

    func testRedirectsAreFollowedAndBounded() throws {
        let server = try FaultServer()
        server.route("/old", .redirect(to: server.url("/new")))
        server.route("/new", .serve(body: body))
        server.route("/loop", .redirect(to: server.url("/loop")))
        let (outcome, got, tally) = try RangeFetcher(options: quickOptions()).collect(server.url("/old"), 0..<100)
        guard case .delivered(let info) = outcome else { return XCTFail("expected bytes") }
        XCTAssertEqual(info.effectiveURL, server.url("/new"))
        XCTAssertEqual(tally.requests, 2, "the redirect and the request it led to")
        XCTAssertEqual(got.bytes(in: 0..<100), Array(body[0..<100]))
        XCTAssertEqual(server.requests.map(\.range), ["bytes=0-99", "bytes=0-99"], "the range survives the redirect")
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect(server.url("/loop"), 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .tooManyRedirects(url: server.url("/loop")))
        }
    }

    func testCancellationStopsATransfer() throws {
        let server = try FaultServer()
        server.route("/v", .stall(afterBytes: 100, seconds: 20, then: .serve(body: body)))
        let cancellation = Cancellation()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { cancellation.cancel() }
        let started = Date()
        XCTAssertThrowsError(
            try RangeFetcher(options: quickOptions(timeout: 30)).collect(
                server.url("/v"), 0..<1000, cancellation: cancellation)
        ) { error in
            XCTAssertEqual(error as? FetchError, .cancelled(url: server.url("/v")))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    func testUnsupportedScheme() throws {
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect("ftp://127.0.0.1/x", 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .unsupportedScheme(url: "ftp://127.0.0.1/x"))
        }
    }

    func testTheConnectionPolicySeesEveryAddressIncludingRedirectHops() throws {
        let allowed = try FaultServer(), refused = try FaultServer()
        allowed.route("/v", .serve(body: body))
        allowed.route("/hop", .redirect(to: refused.url("/v")))
        refused.route("/v", .serve(body: body))
        var options = quickOptions()
        let allowedPort = allowed.port
        options.connectionPolicy = { ip, port in ip == "127.0.0.1" && port == allowedPort }
        let fetcher = RangeFetcher(options: options)
        let (_, got, _) = try fetcher.collect(allowed.url("/v"), 0..<100)
        XCTAssertEqual(got.bytes(in: 0..<100), Array(body[0..<100]))
        XCTAssertThrowsError(try fetcher.collect(allowed.url("/hop"), 0..<100)) { error in
            XCTAssertEqual(
                error as? FetchError, .addressRefused(url: allowed.url("/hop"), address: "127.0.0.1:\(refused.port)"))
        }
        XCTAssertThrowsError(try fetcher.collect(refused.url("/v"), 0..<100))
        XCTAssertTrue(refused.requests.isEmpty, "no byte reached the refused server")
    }
}
