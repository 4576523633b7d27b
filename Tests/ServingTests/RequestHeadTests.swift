import XCTest

@testable import Serving

/// The server's request parser over bytes in memory (fast tier): what it reads, and what it
/// refuses before any handler sees it.
final class RequestHeadTests: XCTestCase {
    private func parse(_ text: String) throws(RequestHead.Refusal) -> RequestHead {
        try RequestHead.parse(ArraySlice(Array(text.utf8)))
    }

    private func refusal(_ text: String) -> Int? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.status
        }
    }

    func testPathQueryAndHeadersAreDecodedAsHandlersExpect() throws {
        let head = try parse(
            "GET /v1/stream/a%20b.m3u8?url=http%3A%2F%2Fo%2Fx%3Fa%3D1&t=a+b&flag&url=second&bad=%zz HTTP/1.1\r\n"
                + "Host: 127.0.0.1:8080\r\nRange:  bytes=0-99 \t\r\nX-Empty:\r\nrange: bytes=5-6\r\n")
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.path, "/v1/stream/a b.m3u8")
        XCTAssertEqual(
            head.query, ["url": "http://o/x?a=1", "t": "a b", "flag": "", "bad": "%zz"], "the first of a repeated name")
        XCTAssertEqual(head.headers["host"], "127.0.0.1:8080")
        XCTAssertEqual(head.headers["range"], "bytes=0-99", "trimmed, and the first of two")
        XCTAssertEqual(head.headers["x-empty"], "")
        XCTAssertTrue(head.isHTTP11)
        XCTAssertTrue(head.keepAlive)
        XCTAssertEqual(head.contentLength, 0)
    }

    /// The last target decoded on a connection is taken again only for the same bytes.
    func testThePreviousTargetIsReusedOnlyWhenTheSame() throws {
        let first = try parse("GET /v1/stream?url=a%20b HTTP/1.1\r\nHost: x\r\n")
        let previous = RequestHead.Target(text: first.target, path: "/remembered", query: ["url": "remembered"])
        let same = try RequestHead.parse(
            ArraySlice(Array("GET /v1/stream?url=a%20b HTTP/1.1\r\nHost: x\r\n".utf8)), previous: previous)
        XCTAssertEqual(same.path, "/remembered", "taken as it was")
        let other = try RequestHead.parse(
            ArraySlice(Array("GET /v1/stream?url=a%20c HTTP/1.1\r\nHost: x\r\n".utf8)), previous: previous)
        XCTAssertEqual(other.path, "/v1/stream")
        XCTAssertEqual(other.query, ["url": "a c"])
    }

    func testConnectionAndVersionDecideKeepAlive() throws {
        XCTAssertFalse(try parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n").keepAlive)
        XCTAssertFalse(try parse("GET / HTTP/1.0\r\n").keepAlive, "HTTP/1.0 closes")
        XCTAssertTrue(try parse("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n").expectsContinue)
        XCTAssertEqual(try parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 42\r\n").contentLength, 42)
    }

    func testMalformedOrAmbiguousHeadsAreRefused() {
        let cases: [(String, Int)] = [
            ("GET / HTTP/1.1\r\n", 400),  // no Host
            ("GET / HTTP/2.0\r\nHost: x\r\n", 505),
            ("GET /\r\nHost: x\r\n", 400),
            ("GET  / HTTP/1.1\r\nHost: x\r\n", 400),
            ("G\u{1B}[31mET / HTTP/1.1\r\nHost: x\r\n", 400),
            ("GET http://x/ HTTP/1.1\r\nHost: x\r\n", 400),
            ("GET / HTTP/1.1\nHost: x\r\n", 400),  // a bare LF
            ("GET / HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n", 411),
            ("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{0}b\r\n", 400),
        ]
        for (text, status) in cases {
            XCTAssertEqual(refusal(text), status, text.debugDescription)
        }
        // What was read of a refused request is kept for the access log.
        do {
            _ = try parse("X\u{9B}2K /healthz HTTP/1.1\r\nHost: x\r\n")
            XCTFail("a method that is not a token")
        } catch {
            XCTAssertEqual(error.path, "/healthz")
            XCTAssertEqual(error.method, "X\u{9B}2K")
        }
    }

    /// Headers are searched in a list: past `maxFields` lines a head is refused (431), so that
    /// thousands of names cannot make the loop's search quadratic.
    func testAHeadOfTooManyHeaderLinesIsRefused() throws {
        let names = (0..<RequestHead.maxFields + 1).map { "X-\($0): v\r\n" }
        let most = "GET / HTTP/1.1\r\nHost: x\r\n" + names.dropLast(2).joined()
        XCTAssertEqual(try parse(most).headers["x-98"], "v", "\(RequestHead.maxFields) lines, Host included")
        XCTAssertEqual(refusal("GET / HTTP/1.1\r\nHost: x\r\n" + names.dropLast().joined()), 431)
        XCTAssertEqual(refusal("GET / HTTP/1.1\r\n" + String(repeating: "X: v\r\n", count: 5000)), 431)
    }

    func testTheDateHeaderIsIMFFixdate() {
        XCTAssertEqual(String(decoding: ResponseHead.date(0), as: UTF8.self), "Thu, 01 Jan 1970 00:00:00 GMT")
        XCTAssertEqual(
            String(decoding: ResponseHead.date(1_796_335_275), as: UTF8.self), "Thu, 03 Dec 2026 22:01:15 GMT")
    }

    func testAResponseHeadCarriesNoInjectedHeader() {
        let head = String(
            decoding: ResponseHead.bytes(
                status: 206, headers: [("ETag", "\"a\"\r\nSet-Cookie: x=1"), ("Accept-Ranges", "bytes")], length: 10,
                keepAlive: false, date: ArraySlice(Array("D".utf8))), as: UTF8.self)
        XCTAssertEqual(
            head,
            "HTTP/1.1 206 Partial Content\r\nDate: D\r\nAccept-Ranges: bytes\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
        )
        XCTAssertEqual(
            String(
                decoding: ResponseHead.bytes(
                    status: 200, headers: [("B\u{0}d", "x")], length: 9_223_372_036_854_775_807, keepAlive: true,
                    date: ArraySlice(Array("D".utf8))), as: UTF8.self),
            "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 9223372036854775807\r\n\r\n",
            "a NUL in a name drops the header; the largest length is written whole")
        XCTAssertFalse(
            String(
                decoding: ResponseHead.bytes(status: 304, headers: [], length: 10, keepAlive: true, date: []),
                as: UTF8.self
            ).contains("Content-Length"))
    }
}
