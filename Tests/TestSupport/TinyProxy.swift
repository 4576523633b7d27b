import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real forward proxy (Debian's `tinyproxy`) on 127.0.0.1, in the foreground, with its own
/// config and log in a temporary folder, for tests of proxied requests.
public final class TinyProxy: @unchecked Sendable {
    public static let executablePath = "/usr/bin/tinyproxy"
    public let port: Int
    public let logPath: String
    private let workDir: TempDirectory
    private let process = Process()

    public var url: String { "http://127.0.0.1:\(port)" }

    public init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executablePath) else {
            throw TestSupportError.missingExecutable(path: Self.executablePath, hint: "install Debian's tinyproxy")
        }
        workDir = try TempDirectory(prefix: "mprobe-tinyproxy")
        port = try LoopbackSocket.freePort()
        logPath = workDir.file("tinyproxy.log")
        let config = workDir.file("tinyproxy.conf")
        try """
        Port \(port)
        Listen 127.0.0.1
        Timeout 60
        Allow 127.0.0.1
        LogFile "\(logPath)"
        LogLevel Connect
        MaxClients 50
        DisableViaHeader Yes
        """.write(toFile: config, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.executablePath)
        process.arguments = ["-d", "-c", config]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = LoopbackSocket.loopbackAddress(port: port)
            let connected =
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                } == 0
            close(fd)
            if connected { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        stop()
        throw TestSupportError.serverFailedToStart("tinyproxy did not listen on \(port)")
    }

    /// The request lines the proxy forwarded (`GET http://... HTTP/1.1`).
    public var requests: [String] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            line.range(of: "): ").flatMap { r in
                line.contains("Request (file descriptor") ? String(line[r.upperBound...]) : nil
            }
        }
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
