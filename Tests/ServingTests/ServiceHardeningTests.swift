import Foundation
import Serving
import TestSupport
import XCTest

/// What a hostile or careless client can make the service do, over real sockets: types in job
/// bodies, URLs and records without bounds, links planted among job files, methods a route does
/// not answer, a progress that says nothing.
final class ServiceHardeningTests: XCTestCase {
    var nginx: NginxServer!

    override func setUpWithError() throws {
        nginx = try NginxServer(root: samplesDirectory)
    }

    override func tearDown() {
        nginx.stop()
    }

    private func code(_ reply: HTTPReply) throws -> String? {
        (try reply.json()["error"] as? [String: Any])?["code"] as? String
    }

    /// A boolean member takes JSON `true`/`false` only, a number a JSON number only: `"false"` is
    /// not false (it was true), and the 400 names the member.
    func testJobMembersTakeOnlyTheirJSONTypes() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let url = nginx.url("/faststart.mp4")
        let cases = [
            (#""type": "thumbnails", "count": 2, "accurate": "false""#, "accurate"),
            (#""type": "thumbnails", "count": 2, "skip_black": 0"#, "skip_black"),
            (#""type": "thumbnails", "count": 2, "accurate": "true""#, "accurate"),
            (#""type": "prefetch", "first_segment": "yes""#, "first_segment"),
            (#""type": "prefetch", "first_segment": 1"#, "first_segment"),
            (#""type": "prefetch", "seconds": "10""#, "seconds"),
            (#""type": "prefetch", "start": true"#, "start"),
            (#""type": "thumbnails", "count": "4""#, "count"),
            (#""type": "thumbnails", "count": 2, "width": 1.5"#, "width"),
        ]
        for (members, field) in cases {
            let reply = try service.postJob("{" + members + #", "url": "\#(url)"}"#)
            XCTAssertEqual(reply.status, 400, members)
            let message = (try reply.json()["error"] as? [String: Any])?["message"] as? String ?? ""
            XCTAssertTrue(message.contains("\"\(field)\""), "names \(field): \(message)")
        }
        XCTAssertEqual((try service.get("/v1/jobs").json()["jobs"] as? [Any])?.count, 0)
        let good = try service.postJob(
            #"{"type": "thumbnails", "count": 2, "accurate": false, "skip_black": true, "url": "\#(url)"}"#)
        XCTAssertEqual(good.status, 202, good.text)
    }

    /// Every URL of a job, and every URL a job derives from a playlist, has the 8 KiB limit; a
    /// job's body and result have bounds; a listing comes in pages of bounded bytes, and the pages
    /// together hold every job once.
    func testJobsAndTheirListingsAreBounded() throws {
        var limits = ServiceLimits()
        limits.maxListingBytes = 200_000
        let service = try ServiceHarness(limits: limits)
        defer { service.stop() }
        let long = nginx.url("/faststart.mp4?" + String(repeating: "a", count: 9000))
        let refused = try service.postJob(
            #"{"type": "prefetch", "url": ["\#(nginx.url("/faststart.mp4"))", "\#(long)"]}"#)
        XCTAssertEqual(refused.status, 414, refused.text)
        XCTAssertEqual(try code(refused), "url_too_long")
        let urls = (0..<40).map { "\"" + nginx.url("/missing-\($0).mp4?" + String(repeating: "b", count: 7000)) + "\"" }
        let huge = try service.postJob(#"{"type": "prefetch", "url": [\#(urls.joined(separator: ","))]}"#)
        XCTAssertEqual(huge.status, 413, "a job body past 256 KiB")
        // Fifteen jobs of ~70 KB each: more than one page's bytes.
        var ids: [String] = []
        for n in 0..<15 {
            let body = #"{"type": "prefetch", "url": [\#(urls[0..<10].joined(separator: ","))], "seconds": \#(n + 1)}"#
            let reply = try service.postJob(body)
            XCTAssertEqual(reply.status, 202, reply.text)
            ids.append(try XCTUnwrap(try reply.json()["id"] as? String))
        }
        var seen: [String] = [], cursor: String?, pages = 0
        repeat {
            let reply = try service.get("/v1/jobs?limit=1000" + (cursor.map { "&cursor=" + $0 } ?? ""))
            XCTAssertEqual(reply.status, 200, reply.text)
            let page = try reply.json()
            let listed = (page["jobs"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            XCTAssertTrue(
                reply.body.count <= 200_000 || listed.count == 1,
                "a page past the budget holds one job: \(reply.body.count) B, \(listed.count)")
            seen += listed
            cursor = page["next_cursor"] as? String
            pages += 1
        } while cursor != nil && pages < 50
        XCTAssertGreaterThan(pages, 2)
        XCTAssertEqual(seen, ids.reversed(), "every job once, newest first")
        XCTAssertEqual(try service.get("/v1/jobs?cursor=nonsense").status, 400)
        // Small jobs: pages of `limit`.
        var small: [String] = []
        for n in 0..<8 {
            small.append(
                try XCTUnwrap(
                    try service.postJob(
                        #"{"type": "prefetch", "url": "\#(nginx.url("/missing.mp4"))", "seconds": \#(n + 1)}"#
                    ).json()["id"] as? String))
        }
        let first = try service.get("/v1/jobs?limit=4").json()
        XCTAssertEqual(
            (first["jobs"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, Array(small.reversed()[0..<4]))
        let next = try XCTUnwrap(first["next_cursor"] as? String)
        let after = try service.get("/v1/jobs?limit=4&cursor=" + next).json()
        XCTAssertEqual(
            (after["jobs"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, Array(small.reversed()[4..<8]))
        // A playlist that leads to a URL past the limit: the job says so, and stores no such URL.
        let origin = try FaultServer()
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n"
            + origin.url("/s.ts?" + String(repeating: "c", count: 20_000)) + "\n#EXT-X-ENDLIST\n"
        origin.route("/p.m3u8", .serve(body: Array(playlist.utf8), contentType: "application/vnd.apple.mpegurl"))
        let derived = try service.postJob(#"{"type": "prefetch", "url": "\#(origin.url("/p.m3u8"))", "seconds": 4}"#)
        let job = try service.waitForJob(try XCTUnwrap(try derived.json()["id"] as? String))
        XCTAssertEqual(job["state"] as? String, "failed", "\(job)")
        XCTAssertTrue(
            (job["error"] as? [String: Any])?["message"].map { "\($0)" }?.contains("longer than the 8192") == true,
            "\(job)")
        XCTAssertLessThan(try service.get("/v1/jobs/" + (job["id"] as? String ?? "")).body.count, 12_000)
    }

    /// A link planted among a job's files (to /etc/passwd, or a linked folder) is not served.
    func testJobFilesAreNeverReadThroughALink() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let body = #"{"type": "thumbnails", "url": "\#(nginx.url("/faststart.mp4"))", "count": 2, "width": 64}"#
        let id = try XCTUnwrap(try service.postJob(body).json()["id"] as? String)
        XCTAssertEqual(try service.waitForJob(id)["state"] as? String, "done")
        let folder = service.dir.file("cache") + "/jobs/" + id
        XCTAssertEqual(try service.get("/v1/jobs/\(id)/files/1/manifest.json").status, 200)
        XCTAssertEqual(symlink("/etc/passwd", folder + "/1/x.jpg"), 0)
        let outside = service.dir.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/y.jpg"))
        XCTAssertEqual(symlink(outside, folder + "/2"), 0)
        XCTAssertEqual(link(outside + "/y.jpg", folder + "/1/h.jpg"), 0)
        for path in ["1/x.jpg", "2/y.jpg", "1/h.jpg"] {
            let reply = try service.get("/v1/jobs/\(id)/files/" + path)
            XCTAssertEqual(reply.status, 404, path)
            XCTAssertFalse(reply.text.contains("root:") || reply.text.contains("secret"), path)
        }
        XCTAssertEqual(
            try service.get("/v1/jobs/\(id)/files/1/manifest.json").headers["content-security-policy"],
            "sandbox; default-src 'none'")
        // A linked job folder too.
        let other = try XCTUnwrap(try service.postJob(body).json()["id"] as? String)
        XCTAssertEqual(try service.waitForJob(other)["state"] as? String, "done")
        let otherFolder = service.dir.file("cache") + "/jobs/" + other
        try FileManager.default.removeItem(atPath: otherFolder)
        XCTAssertEqual(symlink(folder, otherFolder), 0)
        XCTAssertEqual(try service.get("/v1/jobs/\(other)/files/1/manifest.json").status, 404)
    }

    /// A 405 names what the route does answer.
    func testAMethodARouteDoesNotAnswerIs405WithItsAllow() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        for (path, allow) in [
            ("/v1/jobs", "GET, POST"), ("/v1/cache", "GET, DELETE"), ("/v1/jobs/x", "GET, DELETE"),
            ("/v1/stream", "GET, HEAD"), ("/healthz", "GET, HEAD"), ("/metrics", "GET"),
        ] {
            let reply = try HTTPClient.request("PUT", service.url(path), body: Array("{}".utf8))
            XCTAssertEqual(reply.status, 405, path)
            XCTAssertEqual(reply.headers["allow"], allow, path)
            XCTAssertEqual(try code(reply), "method_not_allowed")
        }
    }

    /// A finished prefetch job's progress counts the bytes it fetched.
    func testAFinishedPrefetchCountsTheBytesItFetched() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let reply = try service.postJob(
            #"{"type": "prefetch", "url": "\#(nginx.url("/moov-at-end.mp4"))", "start": 0, "seconds": 3}"#)
        let job = try service.waitForJob(try XCTUnwrap(try reply.json()["id"] as? String))
        let progress = try XCTUnwrap(job["progress"] as? [String: Any])
        let fetched = try XCTUnwrap(
            ((job["result"] as? [String: Any])?["items"] as? [[String: Any]])?.first?["prefetch"] as? [String: Any])
        let bytes = try XCTUnwrap((fetched["fetch"] as? [String: Any])?["bytes_fetched"] as? Int)
        // The plan's bytes, fetched after the header that made the plan (which `bytes_fetched` counts too).
        let done = try XCTUnwrap(progress["bytes"] as? Int), total = try XCTUnwrap(progress["total_bytes"] as? Int)
        XCTAssertGreaterThan(total, 0)
        XCTAssertGreaterThanOrEqual(done, total, "\(progress)")
        XCTAssertLessThanOrEqual(done, bytes, "\(progress)")
    }

    /// The token is trimmed as the header that carries it is.
    func testATokenWithSpacesAroundItIsTheTokenWithout() throws {
        let service = try ServiceHarness(token: " tok-456 ")
        defer { service.stop() }
        XCTAssertEqual(try service.get("/v1/cache", headers: ["Authorization": "Bearer tok-456"]).status, 200)
        XCTAssertEqual(
            try HTTPClient.request(
                "GET", service.url("/v1/stream", origin: nginx.url("/faststart.mp4"), extra: "&token=tok-456")
            ).status, 200)
        XCTAssertThrowsError(try ServiceHarness(token: String(repeating: "t", count: 70_000)))
    }

    /// A request body that never comes (or comes a byte at a time) holds its connection no longer
    /// than the body deadline.
    func testARequestBodyThatNeverComesIsCutOff() throws {
        var limits = ServiceLimits()
        limits.bodyTimeout = 2
        let service = try ServiceHarness(limits: limits)
        defer { service.stop() }
        let connection = try RawHTTPConnection(port: service.service.port)
        connection.send(
            Array(
                "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                    .utf8))
        let started = Date()
        XCTAssertTrue(connection.isClosed(within: 10))
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 1.5, "not before the deadline")
    }

    /// What the origin says is passed on only where it is sane: a 60 KB ETag is no validator, and
    /// the answer still comes (without it).
    func testAnAbsurdValidatorIsNotPassedOn() throws {
        let origin = try FaultServer()
        let body = randomBytes(10_000, seed: 307)
        origin.route(
            "/v.bin",
            .fixed(status: 200, headers: [("ETag", "\"" + String(repeating: "e", count: 60_000) + "\"")], body: body))
        let service = try ServiceHarness()
        defer { service.stop() }
        let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/v.bin")))
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.body, body)
        XCTAssertNil(reply.headers["etag"])
    }

    /// A resource removed from the cache is not served on from the proxy's open entry: the next
    /// request goes to the origin.
    func testARemovedResourceIsFetchedAgainNotServedFromMemory() throws {
        let origin = try FaultServer()
        let body = randomBytes(300_000, seed: 308)
        origin.route("/v.bin", .serve(body: body))
        let service = try ServiceHarness()
        defer { service.stop() }
        let target = service.url("/v1/stream", origin: origin.url("/v.bin"))
        XCTAssertEqual(try HTTPClient.request("GET", target).body, body)
        let before = origin.requests.count
        XCTAssertEqual(try HTTPClient.request("GET", target).body, body)
        XCTAssertEqual(origin.requests.count, before, "served from the cache")
        let removed = try HTTPClient.request("DELETE", service.url("/v1/cache", origin: origin.url("/v.bin")))
        XCTAssertEqual(try removed.json()["removed"] as? Bool, true)
        XCTAssertEqual(try HTTPClient.request("GET", target).body, body)
        XCTAssertGreaterThan(origin.requests.count, before, "fetched again after the removal")
    }
}
