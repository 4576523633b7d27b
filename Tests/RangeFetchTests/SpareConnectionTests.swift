import Foundation
import RangeFetch
import TestSupport
import XCTest

/// Connections opened ahead (`RangeFetcher.preconnect`), over a real socket: requests that need a
/// new connection take them instead of connecting, and nothing is opened where it would not help.
final class SpareConnectionTests: XCTestCase {
    /// The server's accepted connections reach `count` (spares are connected without waiting).
    func waitForConnections(_ server: FaultServer, _ count: Int) {
        let deadline = Date().addingTimeInterval(5)
        while server.connectionCount < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    func testParallelRequestsTakeTheSparesInsteadOfConnecting() throws {
        let data = randomBytes(300_000, seed: 11)
        let server = try FaultServer()
        defer { server.stop() }
        // Each answer waits, so the three transfers overlap and each needs a connection of its own.
        server.route("/s.bin", .delay(seconds: 0.3, then: .serve(body: data)))
        let fetcher = RangeFetcher(options: quickOptions())
        // Two for later requests, and one more for the first (no connection is idle in the pool).
        XCTAssertEqual(fetcher.preconnect(url: server.url("/s.bin"), count: 2), 2)
        waitForConnections(server, 3)
        XCTAssertEqual(server.connectionCount, 3)
        XCTAssertTrue(server.requests.isEmpty, "a spare is only a connection: no request until one is needed")
        // Asking again counts the spares already open.
        XCTAssertEqual(fetcher.preconnect(url: server.url("/s.bin"), count: 2), 2)

        let results = LockedArray([[UInt8]](repeating: [], count: 3))
        let group = DispatchGroup()
        for i in 0..<3 {
            let worker = Thread {
                let range = Int64(i) * 100_000..<Int64(i + 1) * 100_000
                results.set(i, (try? fetcher.collect(server.url("/s.bin"), range).1.bytes(in: range)) ?? [])
                group.leave()
            }
            group.enter()
            worker.start()
        }
        group.wait()
        XCTAssertEqual(results.values.flatMap { $0 }, data)
        XCTAssertEqual(server.connectionCount, 3, "every request went out on a spare: no new connection")
        XCTAssertEqual(Set(server.requests.map(\.connection)), [1, 2, 3])
    }

    func testASpareTheServerClosedIsNotUsed() throws {
        let data = randomBytes(10_000, seed: 12)
        let server = try FaultServer()
        server.route("/c.bin", .serve(body: data))
        let url = server.url("/c.bin")
        let fetcher = RangeFetcher(options: quickOptions())
        XCTAssertEqual(fetcher.preconnect(url: url, count: 1), 1)
        waitForConnections(server, 2)
        // The server goes away and comes back on the same port: both spares are dead sockets.
        let port = server.port
        server.stop()
        let again = try FaultServer(port: port)
        defer { again.stop() }
        again.route("/c.bin", .serve(body: data))
        let (_, got, tally) = try fetcher.collect(url, 0..<10_000)
        XCTAssertEqual(got.bytes(in: 0..<10_000), data)
        XCTAssertEqual(tally.requests, 1, "one request, on a fresh connection, not a failed one on a spare and a retry")
        XCTAssertEqual(again.requests.count, 1)
    }

    func testOverTLSASpareCarriesTheHandshakeAndTheRequests() throws {
        let dir = try TempDirectory()
        let data = randomBytes(300_000, seed: 13)
        try Data(data).write(to: URL(fileURLWithPath: dir.file("t.bin")))
        let tls = try TLSMaterial.generate(in: dir.file(""))
        let nginx = try NginxServer(root: dir.path, tls: tls)
        defer { nginx.stop() }
        var options = quickOptions()
        options.caCertPath = tls.caCertPath
        let fetcher = RangeFetcher(options: options)
        let url = nginx.url("/t.bin")
        XCTAssertEqual(fetcher.preconnect(url: url, count: 2), 0, "not unless asked: TLS is still ahead")
        XCTAssertEqual(fetcher.preconnect(url: url, count: 2, alsoForTLS: true), 2)
        Thread.sleep(forTimeInterval: 0.2) // nginx numbers connections as it accepts them: the spares first
        let results = LockedArray([[UInt8]](repeating: [], count: 3))
        let group = DispatchGroup()
        for i in 0..<3 {
            let worker = Thread {
                let range = Int64(i) * 100_000..<Int64(i + 1) * 100_000
                results.set(i, (try? fetcher.collect(url, range).1.bytes(in: range)) ?? [])
                group.leave()
            }
            group.enter()
            worker.start()
        }
        group.wait()
        XCTAssertEqual(results.values.flatMap { $0 }, data)
        let log = try nginx.waitForAccessLog(count: 3)
        XCTAssertTrue(log.allSatisfy { $0.connection <= 3 }, "requests went out on the three spares: \(log.map(\.connection))")
    }

    func testSparesCountOnlyForTheirOwnOrigin() throws {
        let first = try FaultServer(), second = try FaultServer()
        defer { first.stop(); second.stop() }
        let fetcher = RangeFetcher(options: quickOptions())
        XCTAssertEqual(fetcher.preconnect(url: first.url("/a"), count: 1), 1)
        waitForConnections(first, 2)
        // The spares to the first server are no use for a request to the second: it gets its own.
        XCTAssertEqual(fetcher.preconnect(url: second.url("/b"), count: 1), 1)
        waitForConnections(second, 2)
        XCTAssertEqual(second.connectionCount, 2)
        // One the server closed does not count: a new one is opened in its place.
        let port = first.port
        first.stop()
        let again = try FaultServer(port: port)
        defer { again.stop() }
        XCTAssertEqual(fetcher.preconnect(url: again.url("/a"), count: 1), 1)
        waitForConnections(again, 2)
        XCTAssertEqual(again.connectionCount, 2)
    }

    func testNothingIsOpenedWhereItWouldNotHelp() throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.route("/n.bin", .serve(body: [1, 2, 3]))
        // Through a proxy the connection is the proxy's.
        var proxied = quickOptions()
        proxied.proxy = "http://127.0.0.1:9"
        XCTAssertEqual(RangeFetcher(options: proxied).preconnect(url: server.url("/n.bin"), count: 2), 0)
        // The connection policy decides as for any connection.
        var guarded = quickOptions()
        guarded.connectionPolicy = { ip, _ in ip != "127.0.0.1" }
        XCTAssertEqual(RangeFetcher(options: guarded).preconnect(url: server.url("/n.bin"), count: 2), 0)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(server.connectionCount, 0)
    }
}
