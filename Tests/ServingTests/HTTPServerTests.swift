import Foundation
import TestSupport
import XCTest

@testable import Serving

/// The HTTP server alone, over real sockets, with a handler of the test's: what the connection
/// does between requests (pipelining, refusals, 1xx), whatever the service behind it answers.
final class HTTPServerTests: XCTestCase {
    private static let big = [UInt8](repeating: 0x61, count: 8 << 20)

    private func server() throws -> HTTPServer {
        try HTTPServer(host: "127.0.0.1", port: 0) { request in
            switch request.path {
            case "/big": HTTPResponse(status: 200, body: .bytes(HTTPServerTests.big))
            case "/echo": HTTPResponse(status: 200, body: .bytes(request.body))
            default: HTTPResponse.text(200, "ok \(request.path)\n")
            }
        }
    }

    /// A request pipelined behind a response that had to wait for the socket to drain is
    /// answered once it has (it sits in the server's input; no new bytes arrive to wake it).
    func testARequestPipelinedBehindABlockedResponseIsAnswered() throws {
        let server = try server()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        connection.send(
            Array(
                "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /after HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                    .utf8))
        // Not read at first, so the big response fills the socket and waits.
        Thread.sleep(forTimeInterval: 0.3)
        let reply = connection.read(atLeast: 1 << 30, timeout: 10)  // to the close after /after
        let text = String(decoding: reply.suffix(300), as: UTF8.self)
        XCTAssertTrue(text.hasSuffix("ok /after\n"), text)
        XCTAssertEqual(String(decoding: reply.prefix(15), as: UTF8.self), "HTTP/1.1 200 OK")
    }

    func testLineEndingsAndLeadingEmptyLines() throws {
        let server = try server()
        defer { server.stop() }
        // A bare LF is refused at once, not held until the header timeout.
        let bare = try RawHTTPConnection(port: server.port)
        bare.send(Array("GET /x HTTP/1.1\nHost: 127.0.0.1\n\n".utf8))
        XCTAssertTrue(String(decoding: bare.read(atLeast: 12, timeout: 5), as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        // An empty line before the request line is ignored (RFC 9112 §2.2).
        let leading = try RawHTTPConnection(port: server.port)
        leading.send(Array("\r\nGET /y HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        let reply = String(decoding: leading.read(atLeast: 1 << 20, timeout: 5), as: UTF8.self)
        XCTAssertTrue(reply.hasPrefix("HTTP/1.1 200"), reply)
        XCTAssertTrue(reply.hasSuffix("ok /y\n"), reply)
    }

    /// "100 Continue" goes to an HTTP/1.1 client that waits for it, never to an HTTP/1.0 one.
    func testContinueOnlyForHTTP11() throws {
        let server = try server()
        defer { server.stop() }
        for (version, expected) in [("HTTP/1.1", "HTTP/1.1 100 Continue\r\n\r\n"), ("HTTP/1.0", "")] {
            let connection = try RawHTTPConnection(port: server.port)
            connection.send(
                Array(
                    "POST /echo \(version)\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n".utf8
                ))
            Thread.sleep(forTimeInterval: 0.2)
            connection.send(Array("hi".utf8))
            let reply = String(decoding: connection.read(atLeast: 1 << 20, timeout: 2), as: UTF8.self)
            XCTAssertTrue(reply.hasPrefix(expected + "HTTP/1.1 200 OK\r\n"), reply)
            XCTAssertTrue(reply.hasSuffix("\r\n\r\nhi"), reply)
        }
    }
}
