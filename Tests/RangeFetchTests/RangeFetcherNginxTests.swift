import Foundation
import RangeFetch
import TestSupport
import XCTest

/// The fetcher against Debian's nginx on loopback.
final class RangeFetcherNginxTests: XCTestCase {
    func testClosedRangesOnOneKeptAliveConnection() throws {
        let dir = try TempDirectory()
        let data = randomBytes(1_000_000, seed: 7)
        try Data(data).write(to: URL(fileURLWithPath: dir.file("f.bin")))
        let nginx = try NginxServer(root: dir.path)
        let fetcher = RangeFetcher(options: quickOptions())
        for start in stride(from: Int64(0), to: 1_000_000, by: 100_000) {
            let (outcome, got, _) = try fetcher.collect(nginx.url("/f.bin"), start..<start + 50_000)
            guard case .delivered(let info) = outcome else { return XCTFail("expected bytes") }
            XCTAssertEqual(info.status, 206)
            XCTAssertEqual(info.totalSize, 1_000_000)
            XCTAssertNotNil(info.etag)
            XCTAssertEqual(got.bytes(in: start..<start + 50_000), Array(data[Int(start)..<Int(start) + 50_000]))
        }
        let log = try nginx.waitForAccessLog(count: 10)
        XCTAssertEqual(log.count, 10)
        XCTAssertEqual(Set(log.map(\.connection)).count, 1, "ten requests, one TCP connection")
        XCTAssertEqual(
            log.map(\.range), stride(from: 0, to: 1_000_000, by: 100_000).map { "bytes=\($0)-\($0 + 49_999)" },
            "every request is a closed range")
        XCTAssertEqual(log.map(\.bodyBytesSent), Array(repeating: 50_000, count: 10))
        XCTAssertEqual(fetcher.counters.connections, 1)
    }

    func testRangePastTheEndIsEOFAndShortRangeAtTheEndIsAccepted() throws {
        let dir = try TempDirectory()
        try Data(randomBytes(1000, seed: 1)).write(to: URL(fileURLWithPath: dir.file("s.bin")))
        let nginx = try NginxServer(root: dir.path)
        let fetcher = RangeFetcher(options: quickOptions())
        let (past, _, _) = try fetcher.collect(nginx.url("/s.bin"), 1000..<2000)
        XCTAssertEqual(past, .pastEnd(totalSize: 1000))
        let (tail, got, _) = try fetcher.collect(nginx.url("/s.bin"), 900..<5000)
        guard case .delivered(let info) = tail else { return XCTFail("expected bytes") }
        XCTAssertEqual(info.totalSize, 1000)
        XCTAssertEqual(got.bytes(in: 900..<1000).count, 100)
    }

    func testParallelTransfersUseSeveralConnections() throws {
        let data = randomBytes(4_000_000, seed: 3)
        // Each answer waits 300 ms, so the four transfers surely overlap (on loopback they would
        // otherwise finish one after another and share one connection, however they were started).
        let server = try FaultServer()
        server.route("/p.bin", .delay(seconds: 0.3, then: .serve(body: data)))
        let fetcher = RangeFetcher(options: quickOptions())
        let results = LockedArray([[UInt8]](repeating: [], count: 4))
        let group = DispatchGroup()
        for i in 0..<4 {
            DispatchQueue.global().async(group: group) {
                let range = Int64(i) * 1_000_000..<Int64(i + 1) * 1_000_000
                let got = try? fetcher.collect(server.url("/p.bin"), range).1.bytes(in: range)
                results.set(i, got ?? [])
            }
        }
        group.wait()
        XCTAssertEqual(results.values.flatMap { $0 }, data)
        XCTAssertGreaterThanOrEqual(
            fetcher.counters.connections, 2, "transfers ran in parallel on separate connections")
    }

    func testHTTP2OverTLSWithPrivateCA() throws {
        let dir = try TempDirectory()
        let data = randomBytes(300_000, seed: 5)
        try Data(data).write(to: URL(fileURLWithPath: dir.file("t.bin")))
        let tls = try TLSMaterial.generate(in: dir.file(""))
        let nginx = try NginxServer(root: dir.path, tls: tls)
        var options = quickOptions()
        options.caCertPath = tls.caCertPath
        let fetcher = RangeFetcher(options: options)
        for start: Int64 in [0, 100_000, 200_000] {
            let (outcome, got, _) = try fetcher.collect(nginx.url("/t.bin"), start..<start + 100_000)
            guard case .delivered(let info) = outcome else { return XCTFail("expected bytes") }
            XCTAssertEqual(info.httpVersion, "2")
            XCTAssertEqual(got.bytes(in: start..<start + 100_000), Array(data[Int(start)..<Int(start) + 100_000]))
        }
        XCTAssertEqual(fetcher.counters.connections, 1, "one TLS connection for all requests")
        // Without the CA the certificate is rejected with an error that says TLS.
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect(nginx.url("/t.bin"), 0..<10)) { error in
            guard case .tls = error as? FetchError else { return XCTFail("expected a TLS error, got \(error)") }
            XCTAssertTrue("\(error)".contains("--cacert"), "\(error)")
        }
    }

    /// A certificate made for another host name is said so; trusting another CA would not help.
    func testACertificateForAnotherHostNameIsSaidSo() throws {
        let dir = try TempDirectory()
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir.file("t.bin")))
        let tls = try TLSMaterial.generate(in: dir.file(""), names: "DNS:media.example")
        let nginx = try NginxServer(root: dir.path, tls: tls)
        var options = quickOptions()
        options.caCertPath = tls.caCertPath
        XCTAssertThrowsError(try RangeFetcher(options: options).collect(nginx.url("/t.bin"), 0..<3)) { error in
            guard case .tls = error as? FetchError else { return XCTFail("expected a TLS error, got \(error)") }
            XCTAssertTrue("\(error)".contains("not for this host name"), "\(error)")
            XCTAssertFalse("\(error)".contains("--cacert"), "\(error)")
        }
    }

    /// A handshake that breaks off (here: a server speaking plain HTTP) is said so, without the
    /// advice to trust another CA, which only helps with a certificate that was refused.
    func testABrokenTLSHandshakeIsNotBlamedOnCertificates() throws {
        let dir = try TempDirectory()
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir.file("t.bin")))
        let nginx = try NginxServer(root: dir.path)
        let url = nginx.url("/t.bin").replacingOccurrences(of: "http://", with: "https://")
        XCTAssertThrowsError(try RangeFetcher(options: quickOptions()).collect(url, 0..<3)) { error in
            guard case .tls = error as? FetchError else { return XCTFail("expected a TLS error, got \(error)") }
            XCTAssertTrue("\(error)".contains("the TLS handshake failed"), "\(error)")
            XCTAssertFalse("\(error)".contains("--cacert"), "\(error)")
        }
    }

    func testNotFoundAndConnectionRefused() throws {
        let dir = try TempDirectory()
        let nginx = try NginxServer(root: dir.path)
        let fetcher = RangeFetcher(options: quickOptions())
        XCTAssertThrowsError(try fetcher.collect(nginx.url("/missing.mp4"), 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .http(status: 404, url: nginx.url("/missing.mp4"), retryAfter: nil))
            XCTAssertTrue("\(error)".contains("HTTP 404"))
        }
        let port = nginx.port
        nginx.stop()
        let url = "http://127.0.0.1:\(port)/x"
        XCTAssertThrowsError(try fetcher.collect(url, 0..<10)) { error in
            XCTAssertEqual(error as? FetchError, .connectionRefused(url: url))
        }
    }
}

/// A tiny lock-protected array for collecting results from concurrent closures.
final class LockedArray<T: Sendable>: @unchecked Sendable {
    private var storage: [T]
    private let lock = NSLock()
    init(_ initial: [T]) { storage = initial }
    func set(_ i: Int, _ value: T) { lock.lock(); storage[i] = value; lock.unlock() }
    var values: [T] { lock.lock(); defer { lock.unlock() }; return storage }
}
