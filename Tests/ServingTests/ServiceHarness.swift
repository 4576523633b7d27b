import Caching
import Foundation
import Serving
import Synchronization
import TestSupport
import XCTest

/// A real `Service` on a loopback port of its own, with a fresh cache, and what it logged.
final class ServiceHarness: Sendable {
    let dir: TempDirectory
    let service: Service

    init(
        token: String? = nil, allowHosts: [String] = ["127.0.0.1"], limits: ServiceLimits = ServiceLimits(),
        workers: Int = 2, cacheDirectory: String? = nil, allowOrigins: [String] = [],
        maxCacheBytes: Int64 = ByteCache.defaultMaxBytes
    ) throws {
        dir = try TempDirectory(prefix: "mprobe-service")
        var config = ServiceConfig(cacheDirectory: cacheDirectory ?? dir.file("cache"))
        config.port = 0
        config.token = token
        config.allowHosts = allowHosts
        config.allowOrigins = allowOrigins
        config.limits = limits
        config.maxCacheBytes = maxCacheBytes
        config.workers = workers
        config.fetchOptions.timeout = 10
        config.fetchOptions.retryDelay = 0.05
        let lines = LogLines()
        service = try Service(config: config) { lines.append($0) }
        logLines = lines
    }

    private let logLines: LogLines

    /// The access log so far.
    var log: [String] { logLines.all }

    /// Waits until `holds` is true of the access log, at most `timeout` seconds: lines are written
    /// when a response is complete, after the client has read it.
    func waitForLog(timeout: Double = 10, until holds: ([String]) -> Bool) -> Bool {
        logLines.wait(timeout: timeout, until: holds)
    }

    var base: String { "http://127.0.0.1:\(service.port)" }

    func url(_ path: String) -> String { base + path }

    /// `/v1/stream?url=...` (and other endpoints taking a URL), the URL percent-encoded.
    func url(_ path: String, origin: String, extra: String = "") -> String {
        let encoded = origin.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? origin
        return base + path + "?url=" + encoded + extra
    }

    func get(_ path: String, headers: [String: String] = [:]) throws -> HTTPReply {
        try HTTPClient.request("GET", url(path), headers: headers)
    }

    func postJob(_ body: String, headers: [String: String] = [:]) throws -> HTTPReply {
        try HTTPClient.request("POST", url("/v1/jobs"), headers: headers, body: Array(body.utf8))
    }

    /// Polls a job until it is done, failed or cancelled.
    func waitForJob(_ id: String, headers: [String: String] = [:], timeout: Double = 120) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let job = try get("/v1/jobs/\(id)", headers: headers).json()
            if let state = job["state"] as? String, ["done", "failed", "cancelled"].contains(state) { return job }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestSupportError.timedOut(command: "job \(id)", seconds: timeout, stderr: "")
    }

    func stop() { service.stop(grace: 1) }
}

/// The project's `Samples/` folder.
let samplesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Samples").path

final class LogLines: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []  // guarded by condition

    func append(_ line: String) {
        condition.withLock {
            lines.append(line)
            condition.broadcast()
        }
    }

    var all: [String] { condition.withLock { lines } }

    /// Waits until `holds` is true of the lines logged (true), or `timeout` seconds pass (false).
    func wait(timeout: Double, until holds: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while !holds(lines) {
                guard condition.wait(until: deadline) else { return false }
            }
            return true
        }
    }
}
