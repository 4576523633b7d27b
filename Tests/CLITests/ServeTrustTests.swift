import Foundation
import TestSupport
import XCTest

/// What `mprobe serve` trusts and what it survives, with the built binary: operator credentials
/// and the hosts they go to, an origin without validators changing under readers, one client
/// holding thousands of connections, a SIGKILL and a SIGTERM.
final class ServeTrustTests: CLITestCase {
    private func serve(_ args: [String], allowing origins: [FaultServer]) throws -> ServeCommandTests.Server {
        try ServeCommandTests.Server(
            ["--cache-dir", cacheDir] + origins.flatMap { ["--allow-host", "127.0.0.1:\($0.port)"] } + args,
            log: dir.file("serve-\(UUID().uuidString).log"))
    }

    private func sample(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: samplePath(name))))
    }

    private func encoded(_ url: String) -> String {
        url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url
    }

    // MARK: Operator credentials

    /// A header the operator gives for one host reaches that host and no other, through every
    /// entry point (probe, jobs, the proxy, segments of a rewritten playlist) and through
    /// redirects — unless `--location-trusted` names the other host.
    func testAnOperatorHeaderReachesItsHostAndNoOther() throws {
        let own = try FaultServer(), other = try FaultServer()
        let media = try sample("faststart.mp4")
        for server in [own, other] {
            server.route("/v.mp4", .serve(body: media))
            server.route("/seg.ts", .serve(body: try sample("faststart.mp4")))
        }
        own.route("/hop.mp4", .redirect(to: other.url("/v.mp4")))
        own.route(
            "/own.m3u8",
            .serve(
                body: Array(
                    "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n\(other.url("/seg.ts"))\n#EXT-X-ENDLIST\n".utf8),
                contentType: "application/vnd.apple.mpegurl"))
        let config = try writeFile(
            "config.json",
            Array(
                #"""
                {"hosts": {"127.0.0.1:\#(own.port)": {"headers": ["X-Api-Key: KEY-1", "Authorization: Bearer ORIGIN-CRED"]}}}
                """#.utf8))
        let server = try serve(["--config", config], allowing: [own, other])
        let base = server.base
        func get(_ path: String) throws -> HTTPReply { try HTTPClient.request("GET", base + path) }
        XCTAssertEqual(try get("/v1/probe?url=" + encoded(own.url("/v.mp4"))).status, 200)
        XCTAssertEqual(try get("/v1/probe?url=" + encoded(other.url("/v.mp4"))).status, 200)
        XCTAssertEqual(try get("/v1/probe?url=" + encoded(own.url("/hop.mp4"))).status, 200)
        XCTAssertEqual(try get("/v1/stream?url=" + encoded(other.url("/v.mp4"))).status, 200)
        let job = try HTTPClient.request(
            "POST", base + "/v1/jobs",
            body: Array(
                #"{"type": "prefetch", "url": ["\#(other.url("/v.mp4"))", "\#(own.url("/hop.mp4"))"], "seconds": 1}"#
                    .utf8))
        XCTAssertEqual(
            try server.waitForJob(try XCTUnwrap(try job.json()["id"] as? String))["state"] as? String, "done")
        let playlist = try get("/v1/stream?url=" + encoded(own.url("/own.m3u8"))).text
        let segment = try XCTUnwrap(playlist.split(separator: "\n").first { $0.hasPrefix("/v1/stream/") })
        XCTAssertEqual(try get(String(segment)).status, 200)
        server.stop()
        XCTAssertFalse(own.requests.isEmpty)
        for request in own.requests {
            XCTAssertEqual(request.headers["authorization"], "Bearer ORIGIN-CRED", request.path)
            XCTAssertEqual(request.headers["x-api-key"], "KEY-1", request.path)
        }
        XCTAssertGreaterThanOrEqual(other.requests.count, 4)
        for request in other.requests {
            XCTAssertNil(request.headers["authorization"], "\(request.path) on the other host")
            XCTAssertNil(request.headers["x-api-key"], "\(request.path) on the other host")
        }
        // --header-for does the same as the config; --location-trusted names the other host: the redirect keeps them.
        other.clearRequests()
        own.clearRequests()
        let trusting = try serve(
            [
                "--header-for", "127.0.0.1:\(own.port)", "X-Api-Key: KEY-1", "--location-trusted",
                "127.0.0.1:\(other.port)",
                "--cache-dir", dir.file("cache2"),
            ], allowing: [own, other])
        defer { trusting.stop() }
        XCTAssertEqual(
            try HTTPClient.request("GET", trusting.base + "/v1/probe?url=" + encoded(own.url("/hop.mp4"))).status, 200)
        XCTAssertEqual(own.requests.first?.headers["x-api-key"], "KEY-1")
        XCTAssertEqual(other.requests.first?.headers["x-api-key"], "KEY-1")
        XCTAssertEqual(
            try HTTPClient.request("GET", trusting.base + "/v1/probe?url=" + encoded(other.url("/seg.ts"))).status, 200)
        XCTAssertNil(other.requests.last?.headers["x-api-key"], "asked directly, the other host gets nothing")
        // A header for every host is refused at start, saying how to scope it.
        let bare = try writeFile("bare.json", Array(#"{"headers": ["Authorization: Bearer x"]}"#.utf8))
        for args in [["-H", "Authorization: Bearer x"], ["--config", bare]] {
            let refused = try mprobe(["serve", "--cache-dir", cacheDir] + args, expect: 2)
            XCTAssertTrue(refused.stderr.contains("--header-for HOST 'Name: value'"), refused.stderr)
            XCTAssertFalse(refused.stderr.contains("Bearer x"), "the value is a secret")
        }
    }

    // MARK: An origin without validators

    /// Version A without ETag or Last-Modified, twelve players reading ranges of it through the
    /// proxy, then version B of the same size: no response and no later read holds bytes of both,
    /// and the log says once that the origin cannot be told apart by validators.
    func testAnOriginWithoutValidatorsNeverLeavesMixedBytes() throws {
        let size = 6 << 20
        let versionA = randomBytes(size, seed: 301), versionB = randomBytes(size, seed: 302)
        let origin = try FaultServer()
        origin.route("/v.bin", .serve(body: versionA, etag: nil, lastModified: nil))
        let other = origin.url("/w.bin")
        origin.route("/w.bin", .serve(body: versionA, etag: nil, lastModified: nil))
        let server = try serve([], allowing: [origin])
        defer { server.stop() }
        let url = origin.url("/v.bin")
        let target = "/v1/stream?url=" + encoded(url)
        // Some of A is cached first, as a prefetch would leave it.
        for range in ["bytes=0-999999", "bytes=3000000-3999999"] {
            XCTAssertEqual(try HTTPClient.request("GET", server.base + target, headers: ["Range": range]).status, 206)
        }
        // Twelve players, each reading a range slowly (so that fetches for it run on after the switch).
        var generator = SeededGenerator(seed: 303)
        let ranges = (0..<12).map { _ -> Range<Int> in
            let start = Int.random(in: 0..<(size - 2_000_000), using: &generator)
            return start..<start + Int.random(in: 500_000...2_000_000, using: &generator)
        }
        let results = Results()
        let group = DispatchGroup()
        let port = server.port
        for (n, range) in ranges.enumerated() {
            group.enter()
            DispatchQueue.global().asyncAfter(deadline: .now() + Double(n) * 0.08) {
                defer { group.leave() }
                guard let player = try? RawHTTPConnection(port: port) else { return }
                player.get(target, headers: ["Range": "bytes=\(range.lowerBound)-\(range.upperBound - 1)"])
                var received: [UInt8] = []
                while received.count < range.count + 400 {
                    let piece = player.read(atLeast: 65_536, timeout: 2)
                    if piece.isEmpty { break }
                    received += piece
                    Thread.sleep(forTimeInterval: 0.02)
                }
                results.add(n, received)
            }
        }
        Thread.sleep(forTimeInterval: 0.5)
        origin.route("/v.bin", .serve(body: versionB, etag: nil, lastModified: nil))
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        var ended = 0
        for (n, received) in results.all {
            let header = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0
            let body = Array(received[header...])
            let range = ranges[n]
            XCTAssertLessThanOrEqual(body.count, range.count)
            let ofA = body == Array(versionA[range.lowerBound..<range.lowerBound + body.count])
            let ofB = body == Array(versionB[range.lowerBound..<range.lowerBound + body.count])
            XCTAssertTrue(ofA || ofB, "player \(n) got bytes of both versions (\(body.count) of \(range))")
            if body.count < range.count { ended += 1 }
        }
        XCTAssertEqual(results.all.count, 12)
        // Later reads, through the proxy and by the CLI on the same cache, are one version whole.
        var whole: [UInt8] = []
        for _ in 0..<3 where whole.count < size {
            whole = try HTTPClient.request("GET", server.base + target).body
            XCTAssertTrue(
                whole == Array(versionB.prefix(whole.count)) || whole == Array(versionA.prefix(whole.count)),
                "a later read mixed versions")
        }
        XCTAssertEqual(whole.count, size, "\(ended) players ended short")
        XCTAssertTrue(whole == versionB || whole == versionA)
        let cat = try mprobe(["cat", url, "--cache-dir", cacheDir])
        XCTAssertTrue(cat.stdout == versionB || cat.stdout == versionA)
        // Said once for the origin, however many of its resources are read.
        XCTAssertEqual(try HTTPClient.request("GET", server.base + "/v1/stream?url=" + encoded(other)).status, 200)
        let log = try String(contentsOfFile: server.log, encoding: .utf8)
        XCTAssertEqual(log.components(separatedBy: "sends neither ETag nor Last-Modified").count - 1, 1, log)
        let clips = try FaultServer()
        for name in ["/a.mp4", "/b.mp4"] {
            clips.route(name, .serve(body: try sample("faststart.mp4"), etag: nil, lastModified: nil))
        }
        let verbose = try mprobe(["probe", clips.url("/a.mp4"), clips.url("/b.mp4"), "-v", "--no-cache"])
        XCTAssertEqual(
            verbose.stderr.components(separatedBy: "sends neither ETag nor Last-Modified").count - 1, 1, verbose.stderr)
    }

    /// A version change found only by the overlap: the cached bytes before a gap differ from the
    /// origin's now. The reader that used them ends short; the one after it reads B whole.
    func testAChangeSeenInTheOverlapDropsTheOldBytes() throws {
        let versionA = randomBytes(2_000_000, seed: 304)
        var versionB = versionA
        for i in 0..<versionB.count where i % 1000 == 0 { versionB[i] ^= 0xFF }
        let origin = try FaultServer()
        origin.route("/v.bin", .serve(body: versionA, etag: nil, lastModified: nil))
        let server = try serve([], allowing: [origin])
        defer { server.stop() }
        let target = server.base + "/v1/stream?url=" + encoded(origin.url("/v.bin"))
        XCTAssertEqual(
            try HTTPClient.request("GET", target, headers: ["Range": "bytes=0-99999"]).body,
            Array(versionA[0..<100_000]))
        origin.route("/v.bin", .serve(body: versionB, etag: nil, lastModified: nil))
        // The first read's window cached [0, 256 KiB): this range runs past it into the changed origin.
        let crossing = try HTTPClient.request("GET", target, headers: ["Range": "bytes=200000-399999"])
        XCTAssertEqual(
            crossing.body, Array(versionA[200_000..<262_144]),
            "the old bytes, then the response ends: nothing of B after them")
        let asked = origin.requests.compactMap(\.range)
        XCTAssertTrue(
            asked.contains { $0.hasPrefix("bytes=\(262_144 - 4096)-") }, "the fetch asked for 4 KiB it had: \(asked)")
        XCTAssertEqual(try HTTPClient.request("GET", target).body, versionB)
    }

    /// Two processes on one cache (the service and `mprobe cat`), an origin without validators
    /// that changes between their fetches, the first one slow: the fetch next to the slow one waits
    /// for it (its claim reaches past its ends), then compares, so nothing of the two versions is
    /// ever side by side — in a response, in `cat`'s output, or in the cache after.
    func testTwoProcessesOnOneCacheNeverJoinTwoVersions() throws {
        let size = 4 << 20
        let versionA = randomBytes(size, seed: 311), versionB = randomBytes(size, seed: 312)
        let origin = try FaultServer()
        origin.route(
            "/v.bin",
            .sequence([
                .stall(afterBytes: 100_000, seconds: 3, then: .serve(body: versionA, etag: nil, lastModified: nil)),
                .serve(body: versionB, etag: nil, lastModified: nil),
            ]))
        let server = try serve([], allowing: [origin])
        defer { server.stop() }
        let url = origin.url("/v.bin")
        let first = try RawHTTPConnection(port: server.port)
        first.get("/v1/stream?url=" + encoded(url), headers: ["Range": "bytes=0-524287"])
        var received = first.read(atLeast: 2000, timeout: 10)
        XCTAssertFalse(received.isEmpty, "the slow fetch has begun")
        let other = try mprobe(["cat", url, "--range", "262144-524287", "--cache-dir", cacheDir], expect: nil)
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertTrue(
            other.stdout == Array(versionA[262_144..<524_288]) || other.stdout == Array(versionB[262_144..<524_288]),
            "cat's output is one version")
        while true {
            let piece = first.read(atLeast: 1 << 20, timeout: 15)
            if piece.isEmpty { break }
            received += piece
        }
        let header = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0
        let body = Array(received[header...])
        XCTAssertTrue(
            body == Array(versionA.prefix(body.count)) || body == Array(versionB.prefix(body.count)),
            "the slow response is one version")
        for read in [
            try HTTPClient.request("GET", server.stream(url), headers: ["Range": "bytes=0-524287"]).body,
            try mprobe(["cat", url, "--range", "0-524287", "--cache-dir", cacheDir, "--offline"], expect: nil).stdout,
        ] {
            XCTAssertTrue(
                read == Array(versionA.prefix(read.count)) || read == Array(versionB.prefix(read.count)),
                "a later read mixes versions")
        }
    }

    /// A validator that appears (or goes) between two answers says nothing about whether they are
    /// of one version: the bytes stored under the earlier answer go.
    func testAValidatorThatAppearsOrGoesIsAnotherVersion() throws {
        let versionA = randomBytes(1 << 20, seed: 313), versionB = randomBytes(1 << 20, seed: 314)
        for (name, before, after) in [
            (
                "appears", FaultBehavior.serve(body: versionA, etag: nil, lastModified: nil),
                FaultBehavior.serve(body: versionB, etag: "\"v1\"")
            ),
            (
                "goes", .serve(body: versionA, etag: "\"v0\""),
                .fixed(
                    status: 206, headers: [("Content-Range", "bytes 262144-399999/1048576")],
                    body: Array(versionB[262_144..<400_000]))
            ),
        ] {
            let origin = try FaultServer()
            origin.route("/v.bin", .sequence([before, after, .serve(body: versionB, etag: nil, lastModified: nil)]))
            let server = try serve(["--cache-dir", dir.file("cache-\(name)")], allowing: [origin])
            defer { server.stop() }
            let target = server.stream(origin.url("/v.bin"))
            XCTAssertEqual(
                try HTTPClient.request("GET", target, headers: ["Range": "bytes=0-99999"]).body,
                Array(versionA[0..<100_000]))
            let crossing = try HTTPClient.request("GET", target, headers: ["Range": "bytes=200000-399999"]).body
            XCTAssertEqual(
                crossing, Array(versionA[200_000..<262_144]), "\(name): the old bytes, then the response ends")
            let whole = try HTTPClient.request("GET", target).body
            XCTAssertTrue(
                whole == versionB || whole == Array(versionB.prefix(whole.count)),
                "\(name): a later read is the new version")
        }
    }

    /// The proxy's ETag names the version of the body it sends, not the one the cache knew before.
    func testTheProxysETagIsTheBodysVersion() throws {
        let versionA = randomBytes(2 << 20, seed: 315), versionB = randomBytes(2 << 20, seed: 316)
        let origin = try FaultServer()
        origin.route(
            "/v.bin", .sequence([.serve(body: versionA, etag: "\"e0\""), .serve(body: versionB, etag: "\"e1\"")]))
        let server = try serve([], allowing: [origin])
        defer { server.stop() }
        let target = server.stream(origin.url("/v.bin"))
        XCTAssertEqual(try HTTPClient.request("GET", target, headers: ["Range": "bytes=0-9"]).headers["etag"], "\"e0\"")
        let later = try HTTPClient.request("GET", target, headers: ["Range": "bytes=1500000-1500099"])
        XCTAssertEqual(later.body, Array(versionB[1_500_000..<1_500_100]))
        XCTAssertEqual(later.headers["etag"], "\"e1\"", "the ETag of the bytes sent")
    }

    /// A gap fetched with its overlaps whose transfer ends before the bytes after the gap came
    /// (the origin dropped it, then failed the retries): the gap's last bytes are not stored next
    /// to bytes nothing compared them with, so no later read joins the two versions there.
    func testAGapWhoseTransferEndsEarlyLeavesNoUncomparedSeam() throws {
        let size = 1 << 20
        let versionA = randomBytes(size, seed: 317)
        let versionB = Array(versionA[0..<300_000]) + randomBytes(size - 300_000, seed: 318)
        let origin = try FaultServer()
        origin.route("/v.bin", .serve(body: versionA, etag: nil, lastModified: nil))
        let server = try serve(["--timeout", "3"], allowing: [origin])
        defer { server.stop() }
        let target = server.stream(origin.url("/v.bin"))
        for range in ["bytes=0-262143", "bytes=524288-786431"] {
            XCTAssertEqual(try HTTPClient.request("GET", target, headers: ["Range": range]).status, 206)
        }
        // The gap's request (4 KiB either side) breaks just before its last 4 KiB; retries fail.
        origin.route(
            "/v.bin",
            .sequence([
                .dropAfter(bytes: 4096 + 262_144, then: .serve(body: versionB, etag: nil, lastModified: nil)),
                .status(503),
            ]))
        let gap = try HTTPClient.request("GET", target, headers: ["Range": "bytes=262144-524287"]).body
        XCTAssertTrue(gap == Array(versionB[262_144..<262_144 + gap.count]), "the gap's response is the new version")
        XCTAssertLessThan(gap.count, 262_144, "it ends short: the last bytes were never compared")
        origin.route("/v.bin", .serve(body: versionB, etag: nil, lastModified: nil))
        var whole: [UInt8] = []
        for _ in 0..<3 where whole.count < size {
            whole = try HTTPClient.request("GET", target, headers: ["Range": "bytes=0-786431"]).body
            XCTAssertTrue(
                whole == Array(versionA.prefix(whole.count)) || whole == Array(versionB.prefix(whole.count)),
                "a later read mixes versions")
        }
        XCTAssertEqual(whole, Array(versionB[0..<786_432]))
    }

    /// A process that claimed bytes and was then stopped (Ctrl-Z) neither fetches nor lets go: a
    /// proxy request for them ends with an error after twice the timeout, it does not wait forever.
    func testAStoppedProcessHoldingAClaimHangsNoRequest() throws {
        let origin = try FaultServer()
        origin.route(
            "/v.bin",
            .sequence([
                .delay(seconds: 120, then: .serve(body: randomBytes(1 << 20, seed: 319))),
                .serve(body: randomBytes(1 << 20, seed: 319)),
            ]))
        let server = try serve(["--timeout", "2"], allowing: [origin])
        defer { server.stop() }
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: try mprobeBinary())
        holder.arguments = ["cat", origin.url("/v.bin"), "--cache-dir", cacheDir, "--timeout", "300"]
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let deadline = Date().addingTimeInterval(10)
        while origin.requests.isEmpty && Date() < deadline { usleep(20_000) }
        XCTAssertFalse(origin.requests.isEmpty, "the holder's request is out")
        kill(holder.processIdentifier, SIGSTOP)
        let started = Date()
        let reply = try HTTPClient.request(
            "GET", server.stream(origin.url("/v.bin")), headers: ["Range": "bytes=0-99"], timeout: 30)
        XCTAssertLessThan(Date().timeIntervalSince(started), 12, "answered, not left waiting")
        XCTAssertEqual(reply.status, 502, reply.text)
        XCTAssertTrue(reply.text.contains("is it stopped?"), reply.text)
    }

    // MARK: Connections

    /// One address holding 2,000 connections (idle ones, and ones sending headers a byte a second)
    /// cannot shut others out: another address gets /healthz and a cached range at once, a
    /// connection past the per-client limit is answered 429 rather than left hanging, and slow
    /// headers are cut off.
    func testOneClientHoldingThousandsOfConnectionsShutsNoOneOut() throws {
        raiseDescriptorLimit(to: 8192)
        let origin = try FaultServer()
        origin.route("/v.mp4", .serve(body: try sample("faststart.mp4")))
        let server = try serve([], allowing: [origin])
        defer { server.stop() }
        let target = "/v1/stream?url=" + encoded(origin.url("/v.mp4"))
        XCTAssertEqual(
            try HTTPClient.request("GET", server.base + target, headers: ["Range": "bytes=0-65535"]).status, 206)
        var idle: [RawHTTPConnection] = [], slow: [RawHTTPConnection] = []
        for n in 0..<2000 {
            let connection = try RawHTTPConnection(port: server.port)
            if n % 2 == 0 {
                idle.append(connection)
            } else {
                connection.send(Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8))
                slow.append(connection)
            }
        }
        let dripping = DispatchGroup()
        let stopDripping = DispatchSemaphore(value: 0)
        let trickling = Connections(slow)
        dripping.enter()
        Thread.detachNewThread {
            defer { dripping.leave() }
            // A byte a second on each slow connection, until told to stop.
            repeat {
                for connection in trickling.all { connection.send([0x61]) }
            } while stopDripping.wait(timeout: .now() + 1) == .timedOut
        }
        defer {
            stopDripping.signal()
            dripping.wait()
        }
        // The last connections are past the limit: answered, then closed.
        let refused = String(decoding: idle.last!.read(atLeast: 12, timeout: 5), as: UTF8.self)
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 429"), refused)
        var times: [Double] = []
        for request in ["/healthz", target] {
            for _ in 0..<3 {
                let started = Date()
                let client = try RawHTTPConnection(port: server.port, from: "127.0.0.2")
                client.get(request, headers: ["Range": "bytes=0-65535", "Connection": "close"])
                let reply = client.read(atLeast: 1 << 30, timeout: 10)
                times.append(Date().timeIntervalSince(started))
                XCTAssertTrue(
                    String(decoding: reply.prefix(12), as: UTF8.self).hasPrefix("HTTP/1.1 2"),
                    "\(request) from 127.0.0.2")
            }
        }
        XCTAssertLessThan(times.sorted()[times.count / 2], 0.1, "median of \(times)")
        XCTAssertLessThan(times.max() ?? 99, 1, "\(times)")
        // Headers a byte a second: cut off after the header deadline (10 s), not held for as long as the client likes.
        let first = try XCTUnwrap(slow.first)
        XCTAssertTrue(first.isClosed(within: 15), "a connection trickling its headers is closed")
    }

    // MARK: Crash and stop

    /// After a SIGKILL what was fetched a second before stays cached (ranges are committed at
    /// least every second), and temporary files a killed writer left are gone once it starts again.
    func testASIGKILLLosesLittleAndLeavesNoTemporaryFiles() throws {
        let data = randomBytes(8 << 20, seed: 305)
        let origin = try FaultServer()
        // Each window of the proxy's readahead over 1 MB stalls near its end, for a minute.
        // The proxy's readahead windows are 256 KiB, 512 KiB, 1 MiB, 2 MiB: the fourth stalls after
        // 1.5 MB, for a minute, with those bytes stored but not yet recorded by its end.
        origin.route("/v.bin", .stall(afterBytes: 1_500_000, seconds: 60, then: .serve(body: data)))
        let server = try serve([], allowing: [origin])
        let url = origin.url("/v.bin")
        let player = try RawHTTPConnection(port: server.port)
        player.get("/v1/stream?url=" + encoded(url), headers: ["Range": "bytes=0-"])
        let received = player.read(atLeast: 3_300_000, timeout: 20)
        XCTAssertGreaterThan(received.count, 3_300_000)
        // Committed within about a second of arriving, though the transfer is still running.
        let deadline = Date().addingTimeInterval(10)
        var committed: Int64 = 0
        while Date() < deadline, committed < 3_300_000 {
            committed = try cachedRanges(url).reduce(0) { $0 + $1.1 - $1.0 }
            if committed < 3_300_000 { usleep(100_000) }
        }
        XCTAssertGreaterThanOrEqual(committed, 3_300_000)
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        XCTAssertGreaterThanOrEqual(
            try cachedRanges(url).reduce(0) { $0 + $1.1 - $1.0 }, 3_300_000, "still there after the kill")
        // A thumbnail writer killed mid-file leaves a hidden temporary file; a restart removes it.
        let stale = cacheDir + "/jobs/0a1b2c3d-0000-4000-8000-000000000000/1/.thumb-0001.jpg.4242.0.tmp"
        try FileManager.default.createDirectory(
            atPath: (stale as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: stale, contents: nil))
        let restarted = try serve([], allowing: [origin])
        defer { restarted.stop() }
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale), "temporary files are removed at start")
    }

    /// SIGTERM ends within the one grace period the docs promise, for jobs and responses together.
    func testSIGTERMEndsWithinOneGracePeriod() throws {
        let origin = try FaultServer()
        origin.route("/v.mp4", .stall(afterBytes: 1000, seconds: 60, then: .serve(body: try sample("faststart.mp4"))))
        // Past the first KiB, which the proxy reads to tell a playlist from media.
        origin.route(
            "/s.bin", .stall(afterBytes: 100_000, seconds: 60, then: .serve(body: randomBytes(1 << 20, seed: 306))))
        let server = try serve([], allowing: [origin])
        let job = try HTTPClient.request(
            "POST", server.base + "/v1/jobs",
            body: Array(#"{"type": "prefetch", "url": "\#(origin.url("/v.mp4"))"}"#.utf8))
        XCTAssertEqual(job.status, 202)
        let player = try RawHTTPConnection(port: server.port)
        player.get("/v1/stream?url=" + encoded(origin.url("/s.bin")))
        XCTAssertGreaterThan(player.read(atLeast: 50_000, timeout: 10).count, 50_000, "a response is in flight")
        let stopped = Date()
        XCTAssertEqual(server.stop(), 0)
        // Before, the stream's 5 s began only once the job had stopped (here about a second later).
        XCTAssertLessThan(
            Date().timeIntervalSince(stopped), 5.9, "5 s for jobs and responses together, not one after the other")
    }
}

/// What the players of a test received, by player.
private final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [Int: [UInt8]] = [:]
    func add(_ n: Int, _ bytes: [UInt8]) { lock.withLock { received[n] = bytes } }
    var all: [(Int, [UInt8])] { lock.withLock { received.sorted { $0.key < $1.key } } }
}

/// Connections one thread writes to while the test reads others (each used by one thread at a time).
private final class Connections: @unchecked Sendable {
    let all: [RawHTTPConnection]
    init(_ all: [RawHTTPConnection]) { self.all = all }
}
