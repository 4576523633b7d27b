import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A response as a test sees it.
public struct HTTPReply: Sendable {
    public let status: Int
    /// Header names lowercased.
    public let headers: [String: String]
    public let body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object.
    public func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw TestSupportError.serverFailedToStart("not a JSON object: \(text)")
        }
        return object
    }
}

/// Requests made with Debian's `curl` (a real, independent HTTP client) for tests of servers.
public enum HTTPClient {
    public static func request(
        _ method: String = "GET", _ url: String, headers: [String: String] = [:],
        body: [UInt8]? = nil, timeout: Double = 60
    ) throws -> HTTPReply {
        let work = try TempDirectory(prefix: "mprobe-http")
        let headerFile = work.file("headers"), bodyFile = work.file("body")
        var args = [
            "-s", "-S", "-g", "-X", method, "-D", headerFile, "-o", bodyFile, "--max-time", String(Int(timeout)),
        ]
        // curl -I prints the headers as the "body"; a HEAD answer has none (curl would complain of one).
        if method == "HEAD" {
            args = ["-s", "-S", "-g", "-I", "-D", headerFile, "-o", "/dev/null", "--max-time", String(Int(timeout))]
        }
        for (name, value) in headers { args += ["-H", "\(name): \(value)"] }
        if let body {
            let input = work.file("input")
            try Data(body).write(to: URL(fileURLWithPath: input))
            args += ["--data-binary", "@" + input]
            // JSON unless the test says otherwise (curl's own default would be a form encoding).
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
                args += ["-H", "Content-Type: application/json"]
            }
        }
        let result = try runProcess("curl", args + [url], timeout: timeout + 10)
        guard result.status == 0 || result.status == 18 else {  // 18: a body shorter than announced
            throw TestSupportError.serverFailedToStart("curl \(url) failed (\(result.status)): \(result.stderr)")
        }
        let headerText = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        var status = 0
        var parsed: [String: String] = [:]
        for line in headerText.components(separatedBy: "\r\n") {
            if line.hasPrefix("HTTP/") {
                status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
                parsed = [:]
            } else if let colon = line.firstIndex(of: ":") {
                parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))).map(Array.init) ?? []
        return HTTPReply(status: status, headers: parsed, body: bytes)
    }
}

/// A client on a raw socket, for what curl hides: reading part of a body and hanging up, or
/// timing when the first bytes arrive.
public final class RawHTTPConnection {
    private let fd: Int32

    /// A connection to 127.0.0.1:`port`, from the loopback address `source` (`127.0.0.2`: another
    /// client as the server sees it) when given.
    public init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.serverFailedToStart("socket: \(errno)") }
        if let source {
            var local = LoopbackSocket.loopbackAddress(port: 0)
            guard inet_pton(AF_INET, source, &local.sin_addr) == 1,
                withUnsafePointer(
                    to: &local,
                    {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }) == 0
            else {
                close(fd)
                throw TestSupportError.serverFailedToStart("bind \(source): \(errno)")
            }
        }
        var address = LoopbackSocket.loopbackAddress(port: port)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw TestSupportError.serverFailedToStart("connect to 127.0.0.1:\(port): \(errno)")
        }
    }

    deinit { close(fd) }

    /// Sends `GET target` with `headers`.
    public func get(_ target: String, headers: [String: String] = [:]) {
        var text = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        send(Array(text.utf8))
    }

    /// Sends `bytes` as they are (requests no client library would write).
    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { LoopbackSocket.sendAll(fd, $0) }
    }

    /// Whether the peer has closed the connection (a read finds the end, or an error), waiting up
    /// to `timeout` for it; bytes that arrive meanwhile are read and dropped.
    public func isClosed(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            if chunk.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) <= 0 { return true }
        }
        return false
    }

    /// Reads until `count` bytes (headers included) arrived, the peer closed, or `timeout` passed.
    public func read(atLeast count: Int, timeout: Double) -> [UInt8] {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while received.count < count, Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        return received
    }
}
