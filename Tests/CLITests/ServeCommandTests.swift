import Foundation
import TestSupport
import XCTest

/// `mprobe serve` as a user runs it: the built binary, nginx as the origin, and real players
/// (ffprobe, ffmpeg) reading through the proxy.
final class ServeCommandTests: CLITestCase {
    /// A running `mprobe serve`; stopped with SIGTERM.
    final class Server {
        let process = Process()
        let log: String
        private(set) var port = 0

        /// `listen` as `--listen` takes it; a free loopback port by default.
        init(_ args: [String], log: String, environment: [String: String] = [:], listen: String? = nil) throws {
            self.log = log
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.executableURL = URL(fileURLWithPath: try mprobeBinary())
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.arguments = ["serve", "--listen", listen ?? "127.0.0.1:0"] + args
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle(forWritingAtPath: log)
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, process.isRunning {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                if let range = text.range(of: #"serving on http://127\.0\.0\.1:(\d+)/"#, options: .regularExpression) {
                    port = Int(text[range].split(separator: ":").last?.dropLast() ?? "") ?? 0
                    return
                }
                usleep(20_000)
            }
            throw TestSupportError.serverFailedToStart(
                "mprobe serve: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }

        var base: String { "http://127.0.0.1:\(port)" }

        func stream(_ origin: String, token: String? = nil) -> String {
            base + "/v1/stream?url=" + (origin.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? origin)
                + (token.map { "&token=" + $0 } ?? "")
        }

        /// Polls job `id` until it is done, failed or cancelled.
        func waitForJob(_ id: String, headers: [String: String] = [:], timeout: Double = 60) throws -> [String: Any] {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let job = try HTTPClient.request("GET", base + "/v1/jobs/\(id)", headers: headers).json()
                if ["done", "failed", "cancelled"].contains(job["state"] as? String ?? "") { return job }
                usleep(50_000)
            }
            throw TestSupportError.timedOut(command: "job \(id)", seconds: timeout, stderr: "")
        }

        /// SIGTERM, then the exit status.
        @discardableResult
        func stop() -> Int32 {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    func waitForJob(
        _ server: Server, _ id: String, headers: [String: String] = [:], timeout: Double = 60
    ) throws -> [String: Any] {
        try server.waitForJob(id, headers: headers, timeout: timeout)
    }

    /// Options that would start an open or broken service are usage errors (exit 2) before
    /// anything listens: a token file whose first line is blank (it once gave an empty token
    /// that `Bearer ` matched), a blank token, a non-loopback address without a token.
    func testUnsafeOrBadOptionsAreRefusedBeforeListening() throws {
        let blank = try writeFile("blank-token", Array("   \nrealsecret\n".utf8))
        let emptyLine = try writeFile("empty-line-token", Array("\nrealsecret\n".utf8))
        let empty = try writeFile("empty-token", [])
        let huge = try writeFile("huge-token", Array(String(repeating: "t", count: 70_000).utf8))
        let cases: [([String], String)] = [
            (["--token-file", blank], "holds no token"), (["--token-file", empty], "holds no token"),
            (["--token-file", emptyLine], "its first line holds no token"),
            (["--token-file", huge], "more than a request can carry"),
            (["--token", "a\u{7}b"], "control character"),
            (["--token", "  "], "--token holds no token"), (["--token", "a", "--token-file", blank], "only one of"),
            (["-H", "Authorization: Bearer x"], "--header-for HOST"), (["--header-file", blank], "--header-for HOST"),
            (["--header-for", "media.example.com"], "needs two values"),
            (["--header-for", "a/b", "X: y"], "--header-for needs a host"),
            (["--public-host", "a:b:c", "--token", "t"], "--public-host needs NAME"),
            (["--allow-origin", "https://app.example.com/path"], "--allow-origin needs"),
            (["--listen", "0.0.0.0:0"], "give --token"), (["--listen", "[::]:0"], "give --token"),
            (["--listen", "nonsense"], "--listen needs HOST:PORT"), (["--workers", "0"], "--workers needs"),
            (["--token-file", dir.file("missing")], "cannot read it"),
            (["--proxy", "http://127.0.0.1:3128"], "cannot use a proxy"),
            (["--jobs", "mysql://user:pw@db/x"], "got a URL of scheme 'mysql'"),
            (["--jobs", "password=S3cretPW host=db"], "got something else"),
            (["--job-lease", "1"], "--job-lease needs 2...3600"), (["--job-attempts", "0"], "--job-attempts needs"),
        ]
        for (args, message) in cases {
            let result = try mprobe(["serve", "--cache-dir", cacheDir] + args, expect: 2)
            XCTAssertTrue(result.stderr.contains(message), "\(args): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("serving on"), "\(args)")
            XCTAssertFalse(result.stderr.contains("S3cretPW") || result.stderr.contains(":pw@"), result.stderr)
        }
        // A PostgreSQL that cannot be reached: exit 3, the password in none of its forms repeated.
        let port = try LoopbackSocket.freePort()
        for url in [
            "postgres://mprobe:S3cretPW@127.0.0.1:\(port)/x", "postgres://mprobe@127.0.0.1:\(port)/x?password=S3cretPW",
            "postgres://mprobe:S3cret%zzPW@127.0.0.1:\(port)/x",
        ] {
            let result = try mprobe(
                ["serve", "--cache-dir", cacheDir, "--listen", "127.0.0.1:0", "--jobs", url], expect: 3)
            XCTAssertTrue(result.stderr.contains("PostgreSQL"), result.stderr)
            XCTAssertFalse(result.stderr.contains("S3cret"), result.stderr)
        }
    }

    /// With http_proxy in its environment the service still connects to origins itself: through
    /// a proxy its origin guard would only see the proxy's address, and a redirect from an allowed
    /// origin to an internal one was followed (through the proxy) and its body served.
    func testTheEnvironmentsProxyCannotCarryRequestsPastTheOriginGuard() throws {
        let allowed = try FaultServer(), inside = try FaultServer()
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        allowed.route("/v.mp4", .serve(body: media))
        allowed.route("/hop", .redirect(to: inside.url("/latest/meta-data")))
        inside.route("/latest/meta-data", .serve(body: Array("secret-role-credentials".utf8)))
        let proxy = try TinyProxy()
        let server = try Server(
            [
                "--cache-dir", cacheDir, "--allow-host", "127.0.0.1:\(allowed.port)",
                "--allow-host", "127.0.0.1:\(proxy.port)",
            ], log: dir.file("serve.log"),
            environment: ["http_proxy": proxy.url, "HTTP_PROXY": proxy.url, "no_proxy": "", "NO_PROXY": ""])
        defer { server.stop() }
        let hop = try HTTPClient.request("GET", server.stream(allowed.url("/hop")))
        XCTAssertEqual(hop.status, 403, hop.text)
        XCTAssertFalse(hop.text.contains("secret-role-credentials"))
        XCTAssertTrue(inside.requests.isEmpty, "nothing reached the internal server")
        let direct = try HTTPClient.request("GET", server.stream(allowed.url("/v.mp4")))
        XCTAssertTrue(direct.status == 200 && direct.body == media)
        XCTAssertEqual(proxy.requests, [], "no request went through the proxy")
        let log = try String(contentsOfFile: server.log, encoding: .utf8)
        XCTAssertTrue(log.contains("http_proxy is set, but serve connects to origins directly"), log)
    }

    /// The end-to-end promise: prefetch through the service, stop the origin, play through the proxy.
    func testAPrefetchedWindowPlaysThroughTheProxyWithTheOriginGone() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let origin = nginx.url("/moov-at-end.mp4")
        let server = try Server(
            ["--cache-dir", cacheDir, "--allow-host", "127.0.0.1:\(nginx.port)", "--token", "t0k"],
            log: dir.file("serve.log"))
        defer { server.stop() }
        let auth = ["Authorization": "Bearer t0k"]
        let submitted = try HTTPClient.request(
            "POST", server.base + "/v1/jobs", headers: auth,
            body: Array(#"{"type": "prefetch", "url": "\#(origin)", "start": 0, "seconds": 10}"#.utf8))
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let id = try XCTUnwrap(try submitted.json()["id"] as? String)
        XCTAssertEqual(try waitForJob(server, id, headers: auth)["state"] as? String, "done")
        nginx.stop()

        let stream = server.stream(origin, token: "t0k")
        let probe = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", stream])
        XCTAssertEqual(probe.status, 0, probe.stderr)
        XCTAssertEqual(
            Double(probe.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 4.0, accuracy: 0.01)
        let play = try runProcess("ffmpeg", ["-v", "error", "-i", stream, "-t", "10", "-f", "null", "-"])
        XCTAssertEqual(play.status, 0, play.stderr)
        XCTAssertTrue(play.stderr.isEmpty, play.stderr)
        XCTAssertEqual(try HTTPClient.request("GET", server.stream(origin)).status, 401, "players need the token")
        XCTAssertEqual(server.stop(), 0, "SIGTERM stops it cleanly")
        let log = try String(contentsOfFile: server.log, encoding: .utf8)
        XCTAssertTrue(log.contains("GET /v1/stream?url="), log)
        XCTAssertFalse(log.contains("t0k"), "the token is never logged: \(log)")
    }

    func testARestartResumesAnInterruptedJob() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("moov-at-end.mp4"))))
        let origin = try FaultServer()
        // The first request hangs: the job is still running when the service is stopped.
        origin.route(
            "/v.mp4", .sequence([.stall(afterBytes: 0, seconds: 30, then: .serve(body: media)), .serve(body: media)]))
        let first = try Server(
            ["--cache-dir", cacheDir, "--allow-host", "127.0.0.1:\(origin.port)"], log: dir.file("first.log"))
        let submitted = try HTTPClient.request(
            "POST", first.base + "/v1/jobs",
            body: Array(#"{"type": "prefetch", "url": "\#(origin.url("/v.mp4"))"}"#.utf8))
        let id = try XCTUnwrap(try submitted.json()["id"] as? String)
        let deadline = Date().addingTimeInterval(10)
        while try HTTPClient.request("GET", first.base + "/v1/jobs/\(id)").json()["state"] as? String != "running",
            Date() < deadline
        {
            usleep(20_000)
        }
        XCTAssertEqual(first.stop(), 0)
        let second = try Server(
            ["--cache-dir", cacheDir, "--allow-host", "127.0.0.1:\(origin.port)"], log: dir.file("second.log"))
        defer { second.stop() }
        let job = try waitForJob(second, id)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        XCTAssertEqual((job["progress"] as? [String: Any])?["items_done"] as? Int, 1)
    }
}
