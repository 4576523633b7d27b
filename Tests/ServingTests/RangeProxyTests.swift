import Foundation
import Serving
import TestSupport
import XCTest

/// `/v1/stream`: a caching range proxy that answers like a static file server, streams gaps as
/// they arrive, shares fetches between players, and never sends a byte of the wrong version.
final class RangeProxyTests: XCTestCase {
    func testRangesAreByteForByteTheOrigin() throws {
        let served = try Served(3_000_000, seed: 61)
        defer { served.service.stop() }
        let (data, nginx, url) = (served.data, served.nginx, served.url)
        let direct = try HTTPClient.request("HEAD", nginx.url("/f.mp4"))
        let cases: [(String?, Int, Range<Int>)] = [
            ("bytes=100-199", 206, 100..<200), ("bytes=2999990-", 206, 2_999_990..<3_000_000),
            ("bytes=-500", 206, 2_999_500..<3_000_000), ("bytes=1000000-1999999", 206, 1_000_000..<2_000_000),
            ("bytes=2999999-9999999", 206, 2_999_999..<3_000_000), (nil, 200, 0..<3_000_000),
            ("bytes=0-0", 206, 0..<1), ("bytes=5-3", 200, 0..<3_000_000), ("bytes=0-1,5-6", 200, 0..<3_000_000),
            ("bytes=2999000-99999999999999999999", 206, 2_999_000..<3_000_000),
        ]
        for (range, status, expected) in cases {
            let reply = try HTTPClient.request("GET", url, headers: range.map { ["Range": $0] } ?? [:])
            XCTAssertEqual(reply.status, status, range ?? "whole")
            XCTAssertTrue(reply.body == Array(data[expected]), "\(range ?? "whole"): \(reply.body.count) bytes")
            XCTAssertEqual(reply.headers["content-length"], "\(expected.count)")
            XCTAssertEqual(reply.headers["accept-ranges"], "bytes")
            if status == 206 {
                XCTAssertEqual(
                    reply.headers["content-range"], "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/3000000")
            }
            XCTAssertEqual(reply.headers["etag"], direct.headers["etag"], "the origin's ETag")
            XCTAssertEqual(reply.headers["last-modified"], direct.headers["last-modified"])
            XCTAssertEqual(reply.headers["content-type"], "video/mp4", "the origin's Content-Type")
        }
        let past = try HTTPClient.request("GET", url, headers: ["Range": "bytes=3000000-"])
        XCTAssertEqual(past.status, 416)
        XCTAssertEqual(
            try HTTPClient.request("GET", url, headers: ["Range": "bytes=99999999999999999999-"]).status, 416)
        XCTAssertEqual(past.headers["content-range"], "bytes */3000000")
        let head = try HTTPClient.request("HEAD", url, headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(head.status, 206)
        XCTAssertEqual(head.headers["content-length"], "10")
        XCTAssertTrue(head.body.isEmpty)
        let stale = try HTTPClient.request("GET", url, headers: ["Range": "bytes=10-19", "If-Range": "\"other\""])
        XCTAssertEqual(stale.status, 200, "an If-Range that does not match gets the whole resource")
        // Everything above was fetched once: the origin sent each byte at most once, but for the
        // one-byte asks before the headers of a range partly cached (is the origin there?).
        let log = try nginx.accessLog()
        let probes = log.filter { entry in
            guard let range = entry.range?.dropFirst("bytes=".count) else { return false }
            let ends = range.split(separator: "-")
            return ends.count == 2 && ends[0] == ends[1]
        }
        let sent = log.reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        XCTAssertLessThanOrEqual(
            sent, Int64(data.count + probes.count),
            "cached bytes are served from disk: \(log.map { "\($0.range ?? "-") \($0.bodyBytesSent)" })")
    }

    /// A first request whose range starts past any size an origin may have (the largest Int64
    /// included), on a URL whose size is not yet known: 416 with the real size, and the service
    /// lives on (it used to die of an arithmetic overflow).
    func testARangePastAnyPossibleSizeIsUnsatisfiable() throws {
        let data = randomBytes(5000, seed: 64)
        let origin = try FaultServer()
        origin.route("/v.mp4", .serve(body: data))
        let service = try ServiceHarness()
        defer { service.stop() }
        for (i, range) in [
            "bytes=9223372036854775807-", "bytes=9223372036854775806-9223372036854775807",
            "bytes=1125899906842624-", "bytes=5000-",
        ].enumerated() {
            let url = service.url("/v1/stream", origin: origin.url("/v.mp4?fresh=\(i)"))
            let reply = try HTTPClient.request("GET", url, headers: ["Range": range])
            XCTAssertEqual(reply.status, 416, range)
            XCTAssertEqual(reply.headers["content-range"], "bytes */5000", range)
        }
        let whole = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/v.mp4?fresh=whole")))
        XCTAssertTrue(whole.status == 200 && whole.body == data)
        // The same from an origin that ignores ranges (its whole body says where the end is).
        origin.route("/norange.mp4", .ignoreRanges(body: data))
        let past = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: origin.url("/norange.mp4")), headers: ["Range": "bytes=5000-"])
        XCTAssertEqual(past.status, 416, past.text)
    }

    /// The proxy shares its origin with the dashboard: an origin's HTML must not run there. Media
    /// types pass; anything else is served as unsniffed, sandboxed bytes.
    func testOnlyMediaTypesPassAndNothingRunsInTheServicesOrigin() throws {
        let origin = try FaultServer()
        let page = Array("<script>alert(sessionStorage.getItem('mprobe.token'))</script>".utf8)
        origin.route("/p.html", .serve(body: page, contentType: "text/html"))
        origin.route("/s.svg", .serve(body: page, contentType: "image/svg+xml"))
        origin.route("/v.mp4", .serve(body: page, contentType: "video/mp4"))
        origin.route("/bad", .serve(body: page, contentType: "video/mp4\u{1B}[31m"))
        let service = try ServiceHarness()
        defer { service.stop() }
        for (path, type) in [
            ("/p.html", "application/octet-stream"), ("/s.svg", "application/octet-stream"),
            ("/v.mp4", "video/mp4"), ("/bad", "application/octet-stream"),
        ] {
            let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url(path)))
            XCTAssertEqual(reply.headers["content-type"], type, path)
            XCTAssertEqual(reply.headers["x-content-type-options"], "nosniff", path)
            XCTAssertTrue(reply.headers["content-security-policy"]?.hasPrefix("sandbox") == true, path)
        }
    }

    func testBytesStreamAsTheyArriveAndPlayersShareFetches() throws {
        let data = randomBytes(4_000_000, seed: 62)
        let origin = try FaultServer()
        // The first request sends 100 KB, then pauses 3 s: players must get those 100 KB at once,
        // not when the window is complete.
        origin.route(
            "/v.mp4",
            .sequence([.stall(afterBytes: 100_000, seconds: 3, then: .serve(body: data)), .serve(body: data)]))
        let service = try ServiceHarness()
        defer { service.stop() }
        let target =
            "/v1/stream?url="
            + (origin.url("/v.mp4").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let started = Date()
        let players = try (0..<5).map { _ in try RawHTTPConnection(port: service.service.port) }
        for player in players { player.get(target, headers: ["Range": "bytes=0-"]) }
        let firsts = players.map { $0.read(atLeast: 50_000, timeout: 10) }
        XCTAssertTrue(firsts.allSatisfy { $0.count >= 50_000 })
        XCTAssertLessThan(
            Date().timeIntervalSince(started), 2.5, "the first bytes reached every player while the origin paused")
        for (player, first) in zip(players, firsts) {
            let headerLength = (first.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0)
            let all = first + player.read(atLeast: headerLength + 4_000_000 - first.count, timeout: 60)
            XCTAssertTrue(Array(all.dropFirst(headerLength)) == data, "every player got the whole file")
        }
        // Five players, one fetch per byte: the ranges asked of the origin do not overlap.
        let asked = origin.requests.compactMap(\.range).compactMap { header -> Range<Int64>? in
            let bounds = header.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
            return bounds.count == 2 ? bounds[0]..<bounds[1] + 1 : nil
        }
        XCTAssertLessThanOrEqual(asked.reduce(0) { $0 + Int64($1.count) }, 4_000_000, "\(asked)")
    }

    /// The service keeps recently played resources open after their players leave, and an open
    /// resource is passed by eviction: that once let `--max-cache-size 300M` grow to 1.5 GB.
    func testResourcesKeptOpenDoNotHoldTheCachePastItsLimit() throws {
        let dir = try TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
        let size = 1_000_000
        for n in 0..<6 {
            try Data(randomBytes(size, seed: 70 + UInt64(n))).write(to: URL(fileURLWithPath: dir.file("www/\(n).mp4")))
        }
        let nginx = try NginxServer(root: dir.file("www"))
        let limit: Int64 = 2_500_000
        let service = try ServiceHarness(maxCacheBytes: limit)
        defer { service.stop() }
        for n in 0..<6 {
            let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: nginx.url("/\(n).mp4")))
            XCTAssertEqual(reply.status, 200)
            XCTAssertEqual(reply.body, randomBytes(size, seed: 70 + UInt64(n)))
        }
        // Each is committed within a second of arriving, and eviction runs after a commit.
        func stored() -> Int64 { Int64((try? service.get("/v1/cache").json()["bytes"] as? Int) ?? Int.max) }
        _ = waitUntil { stored() <= limit }
        XCTAssertLessThanOrEqual(stored(), limit, "six 1 MB resources played once, a 2.5 MB cache")
        XCTAssertGreaterThan(stored(), 0)
    }

    /// A resource larger than the cache's limit is read through memory (up to 64 MiB each): the
    /// service holds 16 such at once, answers the next 503 (try again), and takes more once their
    /// players hang up. Before, players of many such URLs at once took memory without bound.
    func testResourcesLargerThanTheCacheTakeAtMostSixteenMemorySlots() throws {
        let size = 2_000_000
        let origin = try FaultServer()
        // Each stalls after its first bytes, so its resource stays in memory while its player waits.
        for n in 0...16 {
            origin.route(
                "/s\(n).mp4", .stall(afterBytes: 100_000, seconds: 30, then: .serve(body: randomBytes(size, seed: 80))))
        }
        origin.route("/after.mp4", .serve(body: randomBytes(size, seed: 81)))
        let service = try ServiceHarness(maxCacheBytes: 1_000_000)
        defer { service.stop() }
        func target(_ path: String) -> String {
            "/v1/stream?url=" + (origin.url(path).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        var players: [RawHTTPConnection] = []
        for n in 0..<16 {
            let player = try RawHTTPConnection(port: service.service.port)
            player.get(target("/s\(n).mp4"))
            let head = String(decoding: player.read(atLeast: 64, timeout: 10).prefix(12), as: UTF8.self)
            XCTAssertEqual(head, "HTTP/1.1 200", "player \(n)")
            players.append(player)
        }
        let seventeenth = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/s16.mp4")))
        XCTAssertEqual(seventeenth.status, 503, seventeenth.text)
        XCTAssertEqual(seventeenth.headers["retry-after"], "1")
        XCTAssertTrue(seventeenth.text.contains("streamed through memory already"), seventeenth.text)
        // Asked again, it is refused without asking the origin: the size is known by now.
        let again = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/s16.mp4")))
        XCTAssertEqual(again.status, 503, again.text)
        XCTAssertEqual(origin.requests.filter { $0.path == "/s16.mp4" }.count, 1)
        players = []  // they hang up: their fetches stop and their slots come back
        var after: HTTPReply?
        let served = waitUntil {
            after = try? HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/after.mp4")))
            return after?.status == 200
        }
        XCTAssertTrue(served, "\(after?.status ?? 0): \(after?.text.prefix(300) ?? "")")
        XCTAssertTrue(after?.body == randomBytes(size, seed: 81))
    }

    /// A cold read is sent from the data file as its bytes arrive; it is a miss all the same,
    /// and the bytes it brought count as fetched once: the hit ratio an operator reads says
    /// how much the origin was spared.
    func testTheCacheStatisticsCountAColdReadAsFetchedAndAWarmOneAsHits() throws {
        let served = try Served(3_000_000, seed: 64)
        defer { served.service.stop() }
        func stats() throws -> [String: Any] { try served.service.get("/v1/cache").json() }
        let cold = try HTTPClient.request("GET", served.url)
        XCTAssertTrue(cold.body == served.data)
        let afterCold = try stats()
        XCTAssertEqual(afterCold["bytes_fetched"] as? Int, 3_000_000, "\(afterCold)")
        XCTAssertEqual(afterCold["bytes_from_cache"] as? Int, 0, "\(afterCold)")
        XCTAssertGreaterThan(afterCold["misses"] as? Int ?? 0, 0, "\(afterCold)")
        let warm = try HTTPClient.request("GET", served.url)
        XCTAssertTrue(warm.body == served.data)
        let afterWarm = try stats()
        XCTAssertEqual(afterWarm["bytes_fetched"] as? Int, 3_000_000, "\(afterWarm)")
        // The response, and the first KiB a whole-file request reads to tell whether it is a playlist.
        XCTAssertGreaterThanOrEqual(afterWarm["bytes_from_cache"] as? Int ?? 0, 3_000_000, "\(afterWarm)")
        XCTAssertEqual(afterWarm["misses"] as? Int, afterCold["misses"] as? Int, "\(afterWarm)")
        XCTAssertGreaterThan(afterWarm["hits"] as? Int ?? 0, afterCold["hits"] as? Int ?? 0)
    }

    func testAPlayerThatHangsUpStopsTheFetchOnlyItNeeded() throws {
        let data = randomBytes(20_000_000, seed: 63)
        let origin = try FaultServer()
        origin.route("/v.mp4", .drip(bytesPerSecond: 2_000_000, then: .serve(body: data)))
        let service = try ServiceHarness()
        defer { service.stop() }
        let target =
            "/v1/stream?url="
            + (origin.url("/v.mp4").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        do {
            let player = try RawHTTPConnection(port: service.service.port)
            player.get(target, headers: ["Range": "bytes=0-"])
            XCTAssertGreaterThan(player.read(atLeast: 100_000, timeout: 10).count, 0)
        }  // the player hangs up here
        Thread.sleep(forTimeInterval: 3)
        let stats = try service.get("/v1/cache").json()
        let fetched =
            (try service.get("/metrics").text).split(separator: "\n")
            .first { $0.hasPrefix("mprobe_origin_bytes_total ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        XCTAssertLessThan(fetched, 10_000_000, "the origin transfer stopped when the player left (\(stats))")
        let before = fetched
        Thread.sleep(forTimeInterval: 1)
        let after =
            (try service.get("/metrics").text).split(separator: "\n")
            .first { $0.hasPrefix("mprobe_origin_bytes_total ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        XCTAssertEqual(after, before, "and nothing is fetched any more")
    }

    /// Players that hang up before the headers (the origin has not answered yet) free their thread
    /// and stream slot at once, not when the origin times out: 300 such requests used to hold the
    /// service's slots until then, refusing real players.
    func testPlayersThatHangUpBeforeTheHeadersFreeTheirSlots() throws {
        let origin = try FaultServer()
        origin.route("/slow.mp4", .stall(afterBytes: 0, seconds: 30, then: .serve(body: randomBytes(1000, seed: 66))))
        origin.route("/v.mp4", .serve(body: randomBytes(5000, seed: 67)))
        var limits = ServiceLimits()
        limits.maxStreams = 8
        let service = try ServiceHarness(limits: limits)
        defer { service.stop() }
        for k in 0..<20 {
            let target =
                "/v1/stream?url="
                + (origin.url("/slow.mp4?k=\(k)").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let player = try RawHTTPConnection(port: service.service.port)
            player.get(target)
        }  // each hangs up at once
        let isAbandoned = { (line: String) in line.contains("/v1/stream?url=") && line.contains("slow.mp4") }
        _ = service.waitForLog(timeout: 2) { $0.filter(isAbandoned).count >= 20 }
        let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/v.mp4")))
        XCTAssertEqual(reply.status, 200, "a real player gets a slot: \(reply.text)")
        let gone = service.log.filter(isAbandoned)
        XCTAssertEqual(
            gone.count, 20, "every abandoned request ended within 2 s, long before the origin's 30 s: \(service.log)")
    }

    func testAnOriginThatFailsOrChangesMidStreamEndsTheResponseShort() throws {
        let v1 = randomBytes(3_000_000, seed: 64), v2 = randomBytes(3_000_000, seed: 65)
        let origin = try FaultServer()
        // Two windows come (the first byte, and the one past it the headers wait for), then the
        // origin fails for good: the response cannot be completed.
        origin.route("/cut.mp4", .sequence([.serve(body: v1), .serve(body: v1), .status(500)]))
        // The first two windows are v1, every later request v2: a reader of v1 must not get v2's bytes.
        origin.route(
            "/swap.mp4",
            .sequence([
                .serve(body: v1, etag: "\"a\""), .serve(body: v1, etag: "\"a\""), .serve(body: v2, etag: "\"b\""),
            ]))
        let service = try ServiceHarness()
        defer { service.stop() }
        for path in ["/cut.mp4", "/swap.mp4"] {
            let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url(path)))
            XCTAssertEqual(reply.headers["content-length"], "3000000", path)
            XCTAssertLessThan(reply.body.count, 3_000_000, "\(path): the response ends short")
            XCTAssertTrue(
                reply.body == Array(v1[0..<reply.body.count]), "\(path): what was sent is v1's bytes, nothing else")
        }
    }

    /// With the origin gone, a response promises only what is cached: from a cached byte, a 206 to
    /// the end of its cached run, whose Content-Length the body fills (players ask again for the
    /// rest); from a byte that is not cached, the JSON error at once; a GET without Range, the
    /// cached run from byte 0. A range wholly cached is answered as before.
    func testWithTheOriginDownOnlyWhatIsCachedIsPromised() throws {
        let served = try Served(3_000_000, seed: 66)
        defer { served.service.stop() }
        let (data, nginx, service, url) = (served.data, served.nginx, served.service, served.url)
        for range in ["bytes=0-999", "bytes=1000000-1099999"] {
            XCTAssertEqual(try HTTPClient.request("GET", url, headers: ["Range": range]).status, 206, range)
        }
        // The cached runs, as the cache reports them (a fetch may take more than was asked), once
        // recorded: within a second of their arrival.
        var listed: [[String: Any]] = []
        var runs: [Range<Int>] = []
        let recorded = waitUntil {
            listed =
                (try? HTTPClient.request("GET", service.url("/v1/cache/ranges", origin: nginx.url("/f.mp4")))
                    .json()["ranges"] as? [[String: Any]]) ?? []
            runs = listed.compactMap { r -> Range<Int>? in
                guard let start = r["start"] as? Int, let end = r["end"] as? Int else { return nil }
                return start..<end
            }
            return runs.count == 2
        }
        XCTAssertTrue(recorded, "\(listed)")
        guard runs.count == 2, runs[0].lowerBound == 0, runs[0].upperBound < 500_000, runs[1].contains(1_050_000),
            runs[1].upperBound < 2_999_000
        else { return XCTFail("cached runs \(runs)") }
        nginx.stop()

        let cases: [(range: String?, status: Int, body: Range<Int>)] = [
            ("bytes=1000000-2999999", 206, 1_000_000..<runs[1].upperBound),
            ("bytes=1050000-", 206, 1_050_000..<runs[1].upperBound),
            ("bytes=1050000-1050099", 206, 1_050_000..<1_050_100),  // wholly cached: as before
            (nil, 206, 0..<runs[0].upperBound),
        ]
        for (range, status, expected) in cases {
            let name = range ?? "no Range"
            let reply = try HTTPClient.request("GET", url, headers: range.map { ["Range": $0] } ?? [:])
            XCTAssertEqual(reply.status, status, name)
            XCTAssertEqual(
                reply.headers["content-range"], "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/3000000", name)
            XCTAssertEqual(reply.headers["content-length"], "\(expected.count)", name)
            XCTAssertTrue(reply.body == Array(data[expected]), "\(name): \(reply.body.count) bytes, each the origin's")
            let head = try HTTPClient.request("HEAD", url, headers: range.map { ["Range": $0] } ?? [:])
            XCTAssertEqual(head.headers["content-range"], reply.headers["content-range"], "HEAD \(name)")
        }
        for range in ["bytes=500000-500099", "bytes=2999000-", "bytes=-100"] {
            let reply = try HTTPClient.request("GET", url, headers: ["Range": range])
            XCTAssertEqual(reply.status, 502, range)
            XCTAssertEqual((try reply.json()["error"] as? [String: Any])?["code"] as? String, "origin_error", range)
            XCTAssertNil(reply.headers["content-range"], range)
        }
    }

    /// Online, the first partly cached range of a URL costs the probe of its first missing byte;
    /// the next ones soon after do not (`RecentAnswers`): one probe per player start.
    func testAProbeAnswerServesTheNextPartlyCachedRangesOfTheURL() throws {
        let served = try Served(2_000_000, seed: 67)
        defer { served.service.stop() }
        let (data, nginx, url) = (served.data, served.nginx, served.url)
        XCTAssertEqual(try HTTPClient.request("GET", url, headers: ["Range": "bytes=0-99999"]).status, 206)
        nginx.clearLog()
        // Each starts in what the one before cached and ends past it (readahead stops at a range's end;
        // fetches are in 256 KiB pieces, so the first may be wholly cached).
        for (start, end) in [(0, 149_999), (10_000, 299_999), (20_000, 399_999)] {
            let reply = try HTTPClient.request("GET", url, headers: ["Range": "bytes=\(start)-\(end)"])
            XCTAssertEqual(reply.status, 206)
            XCTAssertEqual(reply.headers["content-range"], "bytes \(start)-\(end)/2000000")
            XCTAssertTrue(reply.body == Array(data[start...end]), "bytes=\(start)-\(end): each the origin's")
        }
        // A probe asks for one byte: `bytes=N-N`.
        func isProbe(_ range: String?) -> Bool {
            guard let range, range.hasPrefix("bytes=") else { return false }
            let ends = range.dropFirst(6).split(separator: "-")
            return ends.count == 2 && ends[0] == ends[1]
        }
        let log = try nginx.accessLog().map(\.range)
        XCTAssertEqual(log.filter(isProbe).count, 1, "one probe for the partly cached ranges: \(log)")
    }

    /// `size` seeded random bytes as /f.mp4 on nginx, a service, and the proxy's URL for them.
    private struct Served {
        let dir: TempDirectory
        let data: [UInt8]
        let nginx: NginxServer
        let service: ServiceHarness
        var url: String { service.url("/v1/stream", origin: nginx.url("/f.mp4")) }

        init(_ size: Int, seed: UInt64) throws {
            dir = try TempDirectory()
            data = randomBytes(size, seed: seed)
            try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
            try Data(data).write(to: URL(fileURLWithPath: dir.file("www/f.mp4")))
            nginx = try NginxServer(root: dir.file("www"))
            service = try ServiceHarness()
        }
    }
}
