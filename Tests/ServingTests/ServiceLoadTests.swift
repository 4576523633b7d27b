import Foundation
import Serving
import TestSupport
import XCTest

/// The event-driven server under the loads a platform puts on one node: thousands of open
/// connections (idle keep-alive players and stalled ones) hold no thread and shut no one out.
/// How fast it stays is `bench/serve.sh`'s to measure; this holds what must not break.
final class ServiceLoadTests: XCTestCase {
    /// 10,000 connections held by another process — 5,000 idle after a `/healthz`, 5,000 stalled
    /// on a 4 MiB cached range they never read — while a player gets `/healthz` and exact bytes
    /// of a cached range, a cold range through the origin still works, and none of the 10,000 is
    /// dropped.
    func testTenThousandOpenConnectionsShutNoPlayerOut() throws {
        try raiseDescriptorLimit()
        let data = randomBytes(16 << 20, seed: 91)
        let origin = try FaultServer()
        origin.route("/v.bin", .serve(body: data))
        origin.route("/cold.bin", .serve(body: data))
        var limits = ServiceLimits()
        limits.maxConnectionsPerClient = 0
        let service = try ServiceHarness(limits: limits)
        defer { service.stop() }
        let whole = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/v.bin")))
        XCTAssertEqual(whole.body, data, "the cache is warm with the whole file")

        let stalled = "/v1/stream?url=" + encoded(origin.url("/v.bin")) + "|bytes=0-4194303"
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", benchScript("hold.py"), String(service.service.port), "5000", "5000", stalled]
        let input = Pipe(), output = Pipe()
        holder.standardInput = input
        holder.standardOutput = output
        try holder.run()
        defer { if holder.isRunning { holder.terminate() } }
        let lines = LineReader(output.fileHandleForReading)
        let held = lines.next(timeout: 120)
        XCTAssertEqual(held, "held 10000", "every connection was accepted and every idle one answered")

        for _ in 0..<20 {
            let health = try HTTPClient.request("GET", service.url("/healthz"), timeout: 5)
            XCTAssertEqual(health.status, 200)
        }
        let range = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: origin.url("/v.bin")), headers: ["Range": "bytes=5000000-5999999"])
        XCTAssertEqual(range.status, 206)
        XCTAssertEqual(range.body, Array(data[5_000_000..<6_000_000]), "a cached range, byte for byte")
        let cold = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: origin.url("/cold.bin")), headers: ["Range": "bytes=100-2000099"])
        XCTAssertEqual(cold.body, Array(data[100..<2_000_100]), "a range fetched from the origin, byte for byte")

        try input.fileHandleForWriting.close()
        XCTAssertEqual(lines.next(timeout: 60), "alive 10000", "the server dropped none of them")
        holder.waitUntilExit()
        XCTAssertEqual(holder.terminationStatus, 0)
    }

    /// The descriptors 10,000 connections (5,000 sending a file) need here, or a loud failure.
    private func raiseDescriptorLimit() throws {
        struct TooFewDescriptors: Error, CustomStringConvertible {
            let limit: rlim_t
            var description: String {
                "10,000 connections (5,000 sending a file) need 16,384 descriptors here; the limit is \(limit) (ulimit -n)"
            }
        }
        let limit = TestSupport.raiseDescriptorLimit(to: 40_000)
        guard limit >= 16_384 else { throw TooFewDescriptors(limit: limit) }
    }

    private func encoded(_ url: String) -> String {
        url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url
    }

    private func benchScript(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench").appendingPathComponent(name).path
    }
}

/// Lines of a child's output as they come, each waited for with a deadline.
private final class LineReader: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []  // guarded by condition
    private var buffer = Data()

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [self] handle in
            let chunk = handle.availableData
            condition.lock()
            if chunk.isEmpty { handle.readabilityHandler = nil }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
            condition.broadcast()
            condition.unlock()
        }
    }

    func next(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.isEmpty {
            guard condition.wait(until: deadline) else { return nil }
        }
        return lines.removeFirst()
    }
}
